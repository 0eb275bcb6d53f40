// `npm run bench:webhooks`: BENCH_EVENTS (default 10,000) `loan.partial_payment` domain events for
// BENCH_WEBHOOKS users (default 10), each with one webhook subscribed to it, all served by one
// local receiver (HTTP on 127.0.0.1, as outside production). loan.partial_payment is heard by the
// webhooks consumer alone (no notification, no XP), so the run measures webhook deliveries. Two real
// `npm run worker` processes on PostgreSQL fan the events out (the `webhooks` consumer) and
// deliver them (webhook.delivery jobs: signed, through the SSRF-safe egress, each attempt logged).
// The receiver checks every tenth signature and notes when each event arrives.
//
// Two phases, then the limit:
// - bursts: every event written in one outbox transaction; deliveries/s from its commit to the
//   last delivery received (the p99 there is the backlog's drain time, printed too); BENCH_WARMUP
//   (default 1) bursts not counted, then BENCH_ROUNDS (default 3, each of its own events), and the
//   median counts: on a shared 2-core machine one run varies by a fifth, and a first one by more;
// - stream: as many events again, written in transactions every 10 ms at BENCH_STREAM_RATE
//   events/s (default half the burst's deliveries/s: the service at half its measured capacity);
//   event-to-delivery p50/p99 (commit of the event's transaction to its arrival, one clock);
// - the limit, a round after each burst with the workers paused (SIGSTOP), so both sides meet the
//   same drift of a shared machine's speed: the same number of signed POSTs (the same bodies and
//   signature headers, computed per request) sent to the same receiver by a plain loop at the
//   workers' concurrency (webhook deliveries in flight at most: BENCH_WORKERS processes (default
//   2) x WEBHOOK_SLOTS, and WEBHOOK_CONCURRENCY per webhook), warmed up and measured as the bursts.
// Duplicates and missing deliveries are counted in both phases. Where the burst's time went is
// printed beside it: the CPU each process used (this one is the receiver; Linux /proc) and the
// deliveries received per 100 ms. BENCH_DETAIL=1 prints the burst's window on the monotonic clock
// and in UTC, to cut a worker's CPU profile (BENCH_CPU_PROF=<dir> runs the workers with
// --cpu-prof) or PostgreSQL's statement log to it.
// BENCH_DATABASE_URL names the PostgreSQL server (default postgres@127.0.0.1:5432): the benchmark
// creates a database of its own there and drops it at the end.
// The last line is `ratio: <median burst deliveries/s / median plain POSTs/s> p99_ms: <stream event-to-delivery p99>`.
import { createHmac, randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { Agent, request } from "undici";
import { openDatabase } from "../core/db.js";
import { applyMigrations } from "../core/migrations.js";
import { domainEvent, type NewDomainEvent, recordEvents } from "../domain/events/outbox.js";
import { createUsersRepo } from "../domain/users/repo.js";
import { WEBHOOK_CONCURRENCY } from "../domain/webhooks/deliveries.js";
import { createWebhooksRepo } from "../domain/webhooks/repo.js";
import { createSecretBox } from "../domain/webhooks/secrets.js";
import { signDelivery } from "../domain/webhooks/signing.js";
import { WEBHOOK_SLOTS } from "../worker/jobs.js";
import { freshBenchDatabase } from "./bench/database.js";
import { startBenchWorkers } from "./bench/workers.js";

const SERVER_URL = process.env.BENCH_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);
const WEBHOOKS = Number(process.env.BENCH_WEBHOOKS ?? 10);
const STREAM_RATE = Number(process.env.BENCH_STREAM_RATE ?? 0);
const STREAM_TICK_MS = 10;
const WORKERS = Number(process.env.BENCH_WORKERS ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** Rounds run first and not counted, on both sides: the workers' and the loop's code compiled, their connections open. */
const WARMUP = Number(process.env.BENCH_WARMUP ?? 1);
const TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_MS ?? 300_000);
const SECRET = "bench-webhooks-shared-secret-0123456789";
const KEY = randomBytes(32);

const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const at = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

// --- The receiver: every delivery counted by its event (data.loanId is `bench-<index>`), every tenth signature checked.
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
    const index = Number(/"loanId":"bench-(\d+)"/.exec(body)?.[1] ?? -1);
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

/** The event of index i: a loan.partial_payment of one of the users. */
function paymentEvent(i: number, userId: string, now: Date): NewDomainEvent {
  return domainEvent({
    type: "loan.partial_payment",
    userId,
    data: {
      loanId: `bench-${i}`,
      amount: 25,
      remainingBalance: 80,
      txHash: `0x${i.toString(16).padStart(64, "0")}`,
      raw: { chainLoanId: BigInt(i), amount: 25_000_000n, remainingBalance: 80_000_000n },
    },
    dedupeKey: `bench-webhooks:${i}`,
    now,
  });
}

/** Waits until the events [first, last) have all arrived (or the time-out); answers their latencies, sorted. */
async function arrivals(
  writtenAt: number[],
  first: number,
  last: number,
): Promise<{ latencies: number[]; lastArrival: number; complete: boolean }> {
  const deadline = performance.now() + TIMEOUT_MS;
  const arrived = () => {
    let count = 0;
    for (let i = first; i < last; i += 1) if (receivedAt.has(i)) count += 1;
    return count;
  };
  while (arrived() < last - first && performance.now() < deadline) await sleep(50);
  let lastArrival = 0;
  const latencies: number[] = [];
  for (let i = first; i < last; i += 1) {
    const arrival = receivedAt.get(i) ?? performance.now();
    lastArrival = Math.max(lastArrival, arrival);
    latencies.push(arrival - writtenAt[i]!);
  }
  return { latencies: latencies.sort((a, b) => a - b), lastArrival, complete: arrived() === last - first };
}

/** CPU ms used so far: this process, each worker, PostgreSQL's processes. */
function cpuTimes(workerPids: number[]): Record<string, number> {
  const ticks = (pid: number | string) => {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
      // utime + stime, in clock ticks of 10 ms.
      return (Number(fields[11]) + Number(fields[12])) * 10;
    } catch {
      return 0;
    }
  };
  const out: Record<string, number> = { receiver: ticks(process.pid) };
  workerPids.forEach((pid, w) => {
    out[`worker${w}`] = ticks(pid);
  });
  let postgres = 0;
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "postgres") postgres += ticks(pid);
    } catch {}
  }
  out.postgres = postgres;
  return out;
}

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
      wallet: { managed: (index) => `0x${index.toString(16).padStart(40, "0")}` },
    });
    userIds.push(user.id);
    const now = new Date();
    const created = await webhooks.create(
      {
        userId: user.id,
        url: `${base}/hooks/${i}`,
        events: ["loan.partial_payment"],
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
  const writtenAt: number[] = [];

  // --- The limit: the same signed POSTs to the same receiver from a plain loop at the workers'
  // concurrency, a round after each burst with the workers paused (SIGSTOP): both sides measured
  // under the same conditions of a shared machine, whose speed drifts within a run.
  const concurrency = Math.min(WORKERS * WEBHOOK_SLOTS, WEBHOOKS * WEBHOOK_CONCURRENCY);
  const agent = new Agent({ keepAliveTimeout: 30_000 });
  const plainRounds: number[] = [];
  async function plainRound(round: number): Promise<void> {
    for (const child of workers.children) child.kill("SIGSTOP");
    try {
      let next = 0;
      const plainStarted = performance.now();
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < EVENTS) {
            const i = next++;
            const event = paymentEvent(i, userIds[i % WEBHOOKS]!, new Date());
            const { raw: _raw, ...data } = event.data as Record<string, unknown>;
            const id = `plain-${round}-${i}`;
            const body = JSON.stringify({ id, event: "loan.partial_payment", timestamp: new Date().toISOString(), data });
            const headers = signDelivery({ secrets: [SECRET], messageId: id, timestampSeconds: Math.floor(Date.now() / 1000), body });
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
      plainRounds.push(EVENTS / ((performance.now() - plainStarted) / 1000));
    } finally {
      for (const child of workers.children) child.kill("SIGCONT");
    }
  }

  // --- Bursts: every event in one outbox transaction, ROUNDS times (each its own events); the median counts.
  const pids = workers.children.map((child) => child.pid!);
  const bursts: { perSecond: number; line: string; cpu: string }[] = [];
  for (let round = 0; round < WARMUP + ROUNDS; round += 1) {
    const first = round * EVENTS;
    const writeStarted = performance.now();
    const now = new Date();
    await db.prisma.$transaction((tx) =>
      recordEvents(
        tx,
        Array.from({ length: EVENTS }, (_, i) => paymentEvent(first + i, userIds[i % WEBHOOKS]!, now)),
      ),
    );
    const committed = performance.now();
    const cpuBefore = cpuTimes(pids);
    for (let i = first; i < first + EVENTS; i += 1) writtenAt[i] = committed;
    const burst = await arrivals(writtenAt, first, first + EVENTS);
    const seconds = (burst.lastArrival - committed) / 1000;
    // Where the burst's time went: CPU per process, and deliveries per 100 ms from the commit.
    const cpuAfter = cpuTimes(pids);
    const perTick: number[] = [];
    for (let i = first; i < first + EVENTS; i += 1) {
      const tick = Math.floor(((receivedAt.get(i) ?? burst.lastArrival) - committed) / 100);
      perTick[tick] = (perTick[tick] ?? 0) + 1;
    }
    const name = round < WARMUP ? `warm-up ${round + 1}` : `burst ${round - WARMUP + 1}`;
    bursts.push({
      perSecond: EVENTS / seconds,
      line: `${name}: ${fmt(EVENTS)} events in one transaction (written in ${fmt((committed - writeStarted) / 1000, 2)} s): the last received ${fmt(seconds, 2)} s after its commit: ${fmt(EVENTS / seconds)} deliveries/s${burst.complete ? "" : " (TIMED OUT)"}; event to delivery p50 ${fmt(at(burst.latencies, 0.5))} ms p99 ${fmt(at(burst.latencies, 0.99))} ms (the backlog draining)`,
      cpu: `  CPU ms ${Object.entries(cpuAfter)
        .map(([name, ms]) => `${name} ${fmt(ms - (cpuBefore[name] ?? 0))}`)
        .join(", ")}; deliveries per 100 ms: ${Array.from(perTick, (n) => n ?? 0).join(" ")}`,
    });
    // BENCH_DETAIL: the burst's window on the monotonic clock (a worker's --cpu-prof, BENCH_CPU_PROF) and in UTC (PostgreSQL's log).
    if (process.env.BENCH_DETAIL) {
      const wall = (t: number) => new Date(Date.now() - performance.now() + t).toISOString();
      const mono = (t: number) => Math.round(Number(process.hrtime.bigint() / 1000n) - (performance.now() - t) * 1000);
      console.log(
        `${name} window: ${wall(committed)} ${wall(burst.lastArrival)} monotonic µs ${mono(committed)} ${mono(burst.lastArrival)}`,
      );
    }
    await sleep(500);
    await plainRound(round);
    await sleep(100);
  }
  const burstPerSecond = median(bursts.slice(WARMUP).map((burst) => burst.perSecond));
  const streamFirst = (WARMUP + ROUNDS) * EVENTS;

  // --- Stream: as many events again at a steady rate, in a transaction every STREAM_TICK_MS.
  const rate = STREAM_RATE > 0 ? STREAM_RATE : Math.max(1, Math.round(burstPerSecond / 2));
  const streamStarted = performance.now();
  const streamCpuBefore = cpuTimes(pids);
  let written = streamFirst;
  while (written < streamFirst + EVENTS) {
    const due = Math.min(streamFirst + EVENTS, streamFirst + Math.floor(((performance.now() - streamStarted) / 1000) * rate) + 1);
    if (due > written) {
      const now = new Date();
      const events: NewDomainEvent[] = [];
      for (let i = written; i < due; i += 1) events.push(paymentEvent(i, userIds[i % WEBHOOKS]!, now));
      await db.prisma.$transaction((tx) => recordEvents(tx, events));
      const committed = performance.now();
      for (let i = written; i < due; i += 1) writtenAt[i] = committed;
      written = due;
    }
    await sleep(STREAM_TICK_MS);
  }
  const streamWriteSeconds = (performance.now() - streamStarted) / 1000;
  const stream = await arrivals(writtenAt, streamFirst, streamFirst + EVENTS);
  const streamCpuAfter = cpuTimes(pids);
  const streamCpu = Object.entries(streamCpuAfter)
    .map(([name, ms]) => `${name} ${fmt(ms - (streamCpuBefore[name] ?? 0))}`)
    .join(", ");

  await sleep(500);
  const failedAttempts = Number(
    (await db.sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM "WebhookDelivery" WHERE "status" = 'failed'`)).rows[0]!.n,
  );
  const log = (
    await db.sql.query<{ n: string; p50: string; avg: string }>(
      `SELECT count(*)::text AS n, percentile_cont(0.5) WITHIN GROUP (ORDER BY "durationMs")::text AS p50, avg("durationMs")::text AS avg FROM "WebhookDelivery"`,
    )
  ).rows[0]!;
  const logged = Number(log.n);
  const workerLines = outputs
    .map((text, w) => text.slice(outputBefore[w]).trim())
    .filter((text) => text.length > 0)
    .join("\n");

  await workers.stop();
  await agent.close();
  const plainPerSecond = median(plainRounds.slice(WARMUP));

  const missing = (WARMUP + ROUNDS + 1) * EVENTS - receivedAt.size;
  console.log(
    `loan.partial_payment events for ${WEBHOOKS} webhooks, ${WORKERS} npm run worker processes, PostgreSQL ${serverVersion}, ${os.cpus().length} cores`,
  );
  for (const burst of bursts) console.log(`${burst.line}\n${burst.cpu}`);
  console.log(`bursts: median of ${ROUNDS} after ${WARMUP} warm-up: ${fmt(burstPerSecond)} deliveries/s`);
  console.log(
    `stream:  ${fmt(EVENTS)} events at ${fmt(rate)} events/s (written in ${fmt(streamWriteSeconds, 2)} s, a transaction every ${STREAM_TICK_MS} ms): event to delivery p50 ${fmt(at(stream.latencies, 0.5))} ms  p90 ${fmt(at(stream.latencies, 0.9))} ms  p99 ${fmt(at(stream.latencies, 0.99))} ms  max ${fmt(stream.latencies.at(-1)!)} ms${stream.complete ? "" : " (TIMED OUT)"}\n  CPU ms ${streamCpu} (this one writes the events too)`,
  );
  console.log(
    `receiver: ${fmt(received)} requests, ${duplicates} duplicates, ${missing} missing, ${badSignatures} bad signatures of ${fmt(checked)} checked; attempts logged ${fmt(logged)} (${fmt(failedAttempts)} failed; request duration p50 ${fmt(Number(log.p50), 1)} ms, mean ${fmt(Number(log.avg), 1)} ms)`,
  );
  console.log(
    `plain loop: ${fmt(plainReceived)} signed POSTs at concurrency ${concurrency} in ${WARMUP} warm-up and ${ROUNDS} rounds of ${fmt(EVENTS)}, each after its burst: ${plainRounds.map((perSecond) => fmt(perSecond)).join(", ")} POSTs/s; median ${fmt(plainPerSecond)}`,
  );
  if (workerLines) console.log(`worker output during the run:\n${workerLines.split("\n").slice(-10).join("\n")}`);
  console.log(
    `deliveries / plain: ${fmt(burstPerSecond, 1)} / ${fmt(plainPerSecond, 1)} = ${(burstPerSecond / plainPerSecond).toFixed(4)}`,
  );
  lastLine = `ratio: ${(burstPerSecond / plainPerSecond).toFixed(2)} p99_ms: ${Math.round(at(stream.latencies, 0.99))}`;
} finally {
  stopWorkers();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await db.close();
  await benchDatabase.drop();
}
console.log(lastLine);
