// `npm run bench:webhooks`: BENCH_EVENTS (default 10,000) `user.level_up` domain events for
// BENCH_WEBHOOKS users (default 10, push and e-mail notifications off, so the workers' job slots
// serve webhook deliveries alone), each with one webhook subscribed to it, all served by one
// local receiver (HTTP on 127.0.0.1, as outside production). The events are written through the
// outbox writer in transactions of BENCH_EVENT_BATCH (default 100) as fast as it takes them (or
// BENCH_EVENT_RATE events/s); two real `npm run worker` processes on PostgreSQL fan them out
// (the `webhooks` consumer) and deliver them (webhook.delivery jobs: signed, through the SSRF-safe
// egress, each attempt logged). The receiver checks every tenth signature and notes when each
// event arrives. Measured: deliveries/s (from the first event committed to the last delivery
// received), event-to-delivery p50/p99 (commit of the event's transaction to its arrival, one
// clock), duplicates and missing deliveries. Next to it, in the same run with the workers
// stopped, the limit: the same number of signed POSTs (the same bodies and signature headers,
// computed per request) sent to the same receiver by a plain loop at the same concurrency as the
// workers' (2 processes x 8 job slots).
// BENCH_DATABASE_URL names the PostgreSQL server (default postgres@127.0.0.1:5432): the benchmark
// creates a database of its own there and drops it at the end.
// The last line is `ratio: <deliveries/s / plain POSTs/s> p99_ms: <event-to-delivery p99>`.
import { createHmac, randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { Agent, request } from "undici";
import { openDatabase } from "../core/db.js";
import { applyMigrations } from "../core/migrations.js";
import { domainEvent, type NewDomainEvent, recordEvents } from "../domain/events/outbox.js";
import { createUsersRepo } from "../domain/users/repo.js";
import { createWebhooksRepo } from "../domain/webhooks/repo.js";
import { createSecretBox } from "../domain/webhooks/secrets.js";
import { signDelivery } from "../domain/webhooks/signing.js";
import { freshBenchDatabase } from "./bench/database.js";
import { startBenchWorkers } from "./bench/workers.js";

const SERVER_URL = process.env.BENCH_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);
const WEBHOOKS = Number(process.env.BENCH_WEBHOOKS ?? 10);
const EVENT_BATCH = Number(process.env.BENCH_EVENT_BATCH ?? 100);
const EVENT_RATE = Number(process.env.BENCH_EVENT_RATE ?? 0);
const WORKERS = 2;
/** The workers' job slots (startWorkers' default concurrency), the plain loop's concurrency. */
const SLOTS_PER_WORKER = 8;
const TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_MS ?? 300_000);
const SECRET = "bench-webhooks-shared-secret-0123456789";
const KEY = randomBytes(32);

const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
const at = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

// --- The receiver: every delivery counted by its event (data.level is `L<index>`), every tenth signature checked.
const receivedAt = new Map<number, number>();
let received = 0;
let duplicates = 0;
let badSignatures = 0;
let checked = 0;
let plainReceived = 0;
const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    const now = performance.now();
    const body = Buffer.concat(chunks).toString("utf8");
    if (req.url === "/plain") {
      plainReceived += 1;
      res.writeHead(200).end();
      return;
    }
    received += 1;
    const index = Number(/"level":"L(\d+)"/.exec(body)?.[1] ?? -1);
    if (receivedAt.has(index)) duplicates += 1;
    else receivedAt.set(index, now);
    if (received % 10 === 0) {
      checked += 1;
      const expected = `sha256=${createHmac("sha256", SECRET).update(body).digest("hex")}`;
      if (req.headers["x-service-signature"] !== expected) badSignatures += 1;
    }
    res.writeHead(200).end();
  });
});
server.keepAliveTimeout = 30_000;
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const benchDatabase = await freshBenchDatabase(SERVER_URL);
const db = await openDatabase({ databaseUrl: benchDatabase.url });
let stopWorkers = () => {};

let lastLine: string | undefined;
try {
  await applyMigrations(db.migrationAdapter());
  const serverVersion = (await db.sql.query<{ server_version: string }>("SHOW server_version")).rows[0]!.server_version;
  const users = createUsersRepo({ db });
  const webhooks = createWebhooksRepo({ db });
  const secrets = createSecretBox(async () => KEY);
  const userIds: string[] = [];
  for (let i = 0; i < WEBHOOKS; i += 1) {
    const user = await users.create({
      subject: `bench-webhooks-${i}`,
      email: `bench-webhooks-${i}@example.com`,
      displayName: `Bench ${i}`,
      now: new Date(),
      walletAddressOf: (index) => `0x${index.toString(16).padStart(40, "0")}`,
    });
    userIds.push(user.id);
    // Their push and e-mail notifications off: the level-ups still make in-app rows, but the
    // workers' slots go to webhook deliveries alone (no push or e-mail jobs beside them).
    await db.prisma.user.update({ where: { id: user.id }, data: { settingsNotifications: false, settingsEmailAlerts: false } });
    const now = new Date();
    const created = await webhooks.create(
      {
        userId: user.id,
        url: `${base}/hooks/${i}`,
        events: ["user.level_up"],
        secret: await secrets.seal(SECRET),
        previousSecret: null,
        previousSecretUntil: null,
        status: "active",
        createdAt: now,
        updatedAt: now,
      },
      WEBHOOKS,
    );
    if (typeof created === "string") throw new Error(`webhook ${i}: ${created}`);
  }

  // --- The workers.
  const workers = await startBenchWorkers(WORKERS, {
    ...process.env,
    NODE_ENV: "development",
    DATABASE_URL: benchDatabase.url,
    CHAIN_RPC_URL: "",
    WEBHOOK_SECRET_KEY: KEY.toString("base64"),
    LOG_LEVEL: "warn",
  });
  stopWorkers = workers.kill;
  const { outputs } = workers;
  await sleep(2_000);
  const outputBefore = outputs.map((text) => text.length);

  // --- The events, through the outbox writer.
  const writtenAt: number[] = [];
  const writeStarted = performance.now();
  for (let first = 0; first < EVENTS; first += EVENT_BATCH) {
    if (EVENT_RATE > 0) {
      const due = writeStarted + (first / EVENT_RATE) * 1000;
      if (due > performance.now()) await sleep(due - performance.now());
    }
    const now = new Date();
    const events: NewDomainEvent[] = [];
    for (let i = first; i < Math.min(EVENTS, first + EVENT_BATCH); i += 1) {
      const userId = userIds[i % WEBHOOKS]!;
      events.push(
        domainEvent({
          type: "user.level_up",
          userId,
          data: { userId, level: `L${i}`, previousLevel: "L", xp: i, timestamp: now.toISOString() },
          dedupeKey: `bench-webhooks:${i}`,
          now,
        }),
      );
    }
    await db.prisma.$transaction((tx) => recordEvents(tx, events));
    const committed = performance.now();
    for (let i = first; i < first + events.length; i += 1) writtenAt[i] = committed;
  }
  const writeSeconds = (performance.now() - writeStarted) / 1000;
  const firstWritten = writtenAt[0]!;

  const deadline = performance.now() + TIMEOUT_MS;
  while (receivedAt.size < EVENTS && performance.now() < deadline) await sleep(50);
  const complete = receivedAt.size >= EVENTS;
  const lastReceived = Math.max(...receivedAt.values());
  const deliveriesPerSecond = receivedAt.size / ((lastReceived - firstWritten) / 1000);
  const latencies = Array.from({ length: EVENTS }, (_, i) => (receivedAt.get(i) ?? performance.now()) - writtenAt[i]!).sort(
    (a, b) => a - b,
  );
  await sleep(500);
  const failedAttempts = Number(
    (await db.sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM "WebhookDelivery" WHERE "status" = 'failed'`)).rows[0]!.n,
  );
  const logged = Number((await db.sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM "WebhookDelivery"`)).rows[0]!.n);
  const workerLines = outputs
    .map((text, w) => text.slice(outputBefore[w]).trim())
    .filter((text) => text.length > 0)
    .join("\n");

  // --- Workers stopped; the limit: the same signed POSTs from a plain loop at the same concurrency.
  await workers.stop();
  const concurrency = WORKERS * SLOTS_PER_WORKER;
  const agent = new Agent({ keepAliveTimeout: 30_000 });
  let next = 0;
  const plainStarted = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < EVENTS) {
        const i = next++;
        const body = JSON.stringify({
          id: `plain-${i}`,
          event: "user.level_up",
          timestamp: new Date().toISOString(),
          data: { userId: userIds[i % WEBHOOKS], level: `L${i}`, previousLevel: "L", xp: i, timestamp: new Date().toISOString() },
        });
        const headers = signDelivery({ secrets: [SECRET], messageId: `plain-${i}`, timestampSeconds: Math.floor(Date.now() / 1000), body });
        const response = await request(`${base}/plain`, {
          method: "POST",
          dispatcher: agent,
          headers: { "content-type": "application/json", ...headers },
          body,
        });
        response.body.resume();
        if (response.statusCode !== 200) throw new Error(`plain POST: HTTP ${response.statusCode}`);
      }
    }),
  );
  const plainSeconds = (performance.now() - plainStarted) / 1000;
  await agent.close();
  const plainPerSecond = EVENTS / plainSeconds;

  console.log(
    `${fmt(EVENTS)} user.level_up events for ${WEBHOOKS} webhooks (${EVENT_BATCH} per outbox transaction, ${
      EVENT_RATE > 0 ? `${fmt(EVENT_RATE)} events/s` : "as fast as possible"
    }), ${WORKERS} npm run worker processes, PostgreSQL ${serverVersion}, ${os.cpus().length} cores`,
  );
  console.log(`events written:  ${fmt(EVENTS)} in ${fmt(writeSeconds, 2)} s (${fmt(EVENTS / writeSeconds)} events/s)`);
  console.log(
    `deliveries:      ${fmt(receivedAt.size)} events received, the last ${fmt((lastReceived - firstWritten) / 1000, 2)} s after the first event: ${fmt(deliveriesPerSecond)} deliveries/s${complete ? "" : " (TIMED OUT)"}`,
  );
  console.log(
    `event to delivery: p50 ${fmt(at(latencies, 0.5))} ms  p90 ${fmt(at(latencies, 0.9))} ms  p99 ${fmt(at(latencies, 0.99))} ms  max ${fmt(latencies.at(-1)!)} ms`,
  );
  console.log(
    `receiver:        ${fmt(received)} requests, ${duplicates} duplicates, ${badSignatures} bad signatures of ${fmt(checked)} checked; attempts logged ${fmt(logged)} (${fmt(failedAttempts)} failed)`,
  );
  console.log(
    `plain loop:      ${fmt(plainReceived)} signed POSTs at concurrency ${concurrency} in ${fmt(plainSeconds, 2)} s: ${fmt(plainPerSecond)} POSTs/s`,
  );
  if (workerLines) console.log(`worker output during the run:\n${workerLines.split("\n").slice(-10).join("\n")}`);
  console.log(`missing: ${EVENTS - receivedAt.size}`);
  console.log(
    `deliveries / plain: ${fmt(deliveriesPerSecond, 1)} / ${fmt(plainPerSecond, 1)} = ${(deliveriesPerSecond / plainPerSecond).toFixed(4)}`,
  );
  lastLine = `ratio: ${(deliveriesPerSecond / plainPerSecond).toFixed(2)} p99_ms: ${Math.round(at(latencies, 0.99))}`;
} finally {
  stopWorkers();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await db.close();
  await benchDatabase.drop();
}
console.log(lastLine);
