import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { SMTPServer } from "smtp-server";
import { openDatabase } from "../core/db.js";
import { applyMigrations } from "../core/migrations.js";
import { usdcNumber } from "../core/money.js";
import { domainEvent, type NewDomainEvent, recordEvents } from "../domain/events/outbox.js";
import { loanTerms } from "../domain/loans/terms.js";
import { createNotificationsRepo } from "../domain/notifications/repo.js";
import { MAX_PUSH_DEVICES } from "../domain/notifications/service.js";
import { createUsersRepo } from "../domain/users/repo.js";
import { type CpuSnapshot, cpuSnapshot } from "./bench/cpu.js";
import { freshBenchDatabase } from "./bench/database.js";
import { startBenchWorkers } from "./bench/workers.js";

const SERVER_URL = process.env.BENCH_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const USERS = Number(process.env.BENCH_USERS ?? 500);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 5_000);
/** Events per outbox transaction. */
const EVENT_BATCH = Number(process.env.BENCH_EVENT_BATCH ?? EVENTS);
/** Events per second written; 0: as fast as the outbox takes them. */
const EVENT_RATE = Number(process.env.BENCH_EVENT_RATE ?? 0);
const WORKERS = 2;
/** Rows per INSERT of the floor. */
const FLOOR_BATCH = 500;
const FLOOR_PASSES = 3;
const POLL_MS = 50;
/** How long the fan-out and the deliveries may take (each), in ms. */
const TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_MS ?? 240_000);
const DURATION_DAYS = 30;
const RATE_BPS = 300; // the Established tier's 3 %
/** Event i asks for 20.00 + i/100 USDC: the amount in an e-mail's text says which event it is. */
const amountOf = (i: number) => 20_000_000n + BigInt(i) * 10_000n;

const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
const at = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
/** CPU ticks (10 ms) a process has used, from /proc (0 elsewhere). */
function processTicks(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}
const ticksOf = (snapshot: CpuSnapshot, keys?: (key: string) => boolean) =>
  [...snapshot.entries()].reduce((sum, [key, ticks]) => sum + (keys === undefined || keys(key) ? ticks : 0), 0);

async function inParallel<T>(items: T[], width: number, work: (item: T, index: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const index = next++;
        await work(items[index]!, index);
      }
    }),
  );
}

async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs: number, everyMs = 250): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (performance.now() > deadline) {
      console.error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      return false;
    }
    await sleep(everyMs);
  }
}

// --- The receivers: a real SMTP server and an Expo-format push endpoint, counting per notification.
const pushesByNotification = new Map<string, number>();
const mailsByEvent = new Map<number, number>();
let pushRequests = 0;
let unmatchedMails = 0;
let misrouted = 0;
let lastDeliveryAt = 0;
/** Event index -> its recipient's e-mail address and push token (filled when the users exist). */
const recipientOf: { email: string; token: string }[] = [];
const indexByLoan = new Map<string, number>();

const smtp = new SMTPServer({
  authOptional: true,
  disabledCommands: ["STARTTLS"],
  logger: false,
  onData(stream, session, callback) {
    let text = "";
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => {
      text += chunk;
    });
    stream.on("end", () => {
      lastDeliveryAt = performance.now();
      const match = /for (\d+)\.(\d{2}) USDC/.exec(text.replace(/=\r?\n/g, ""));
      const index = match ? Number(match[1]) * 100 + Number(match[2]) - 2_000 : -1;
      if (index < 0 || index >= EVENTS) unmatchedMails += 1;
      else {
        mailsByEvent.set(index, (mailsByEvent.get(index) ?? 0) + 1);
        if (!session.envelope.rcptTo.some((to) => to.address === recipientOf[index]?.email)) misrouted += 1;
      }
      callback();
    });
  },
});
smtp.on("error", (error) => console.error(`smtp server: ${error.message}`));
await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", resolve));
const expo = http.createServer((req, res) => {
  let body = "";
  req.setEncoding("utf8");
  req.on("data", (chunk: string) => {
    body += chunk;
  });
  req.on("end", () => {
    pushRequests += 1;
    lastDeliveryAt = performance.now();
    const messages = JSON.parse(body) as { to: string; data: { notificationId: string; loanId?: string } }[];
    for (const message of messages) {
      const id = message.data.notificationId;
      pushesByNotification.set(id, (pushesByNotification.get(id) ?? 0) + 1);
      const index = indexByLoan.get(message.data.loanId ?? "");
      if (index === undefined || recipientOf[index]?.token !== message.to) misrouted += 1;
    }
    res
      .writeHead(200, { "content-type": "application/json" })
      .end(JSON.stringify({ data: messages.map(() => ({ status: "ok", id: randomUUID() })) }));
  });
});
await new Promise<void>((resolve) => expo.listen(0, "127.0.0.1", resolve));

// --- The database, the users, the workers.
const benchDatabase = await freshBenchDatabase(SERVER_URL);
const db = await openDatabase({ databaseUrl: benchDatabase.url });
let stopWorkers = () => {};

let lastLine: string | undefined;
try {
  await applyMigrations(db.migrationAdapter());
  const serverVersion = (await db.sql.query<{ server_version: string }>("SHOW server_version")).rows[0]!.server_version;

  const users = createUsersRepo({ db });
  const notificationsRepo = createNotificationsRepo({ db });
  const setupStarted = performance.now();
  const userIds: string[] = [];
  await inParallel(
    Array.from({ length: USERS }, (_, i) => i),
    8,
    async (i) => {
      const email = `bench-${i}@example.com`;
      const token = `ExponentPushToken[bench-${i}]`;
      const user = await users.create({
        subject: `bench-notifications-${i}`,
        email,
        displayName: `Bench ${i}`,
        now: new Date(),
        wallet: { managed: (index) => `0x${index.toString(16).padStart(40, "0")}` },
      });
      await notificationsRepo.registerDevice(
        { userId: user.id, deviceId: `phone-${i}`, token, platform: "android", now: new Date() },
        MAX_PUSH_DEVICES,
      );
      userIds[i] = user.id;
    },
  );
  for (let i = 0; i < EVENTS; i += 1)
    recipientOf.push({ email: `bench-${i % USERS}@example.com`, token: `ExponentPushToken[bench-${i % USERS}]` });
  console.error(`${USERS} users with an e-mail address and a push token in ${fmt((performance.now() - setupStarted) / 1000, 1)} s`);

  const workers = await startBenchWorkers(WORKERS, {
    ...process.env,
    DATABASE_URL: benchDatabase.url,
    CHAIN_RPC_URL: "",
    SMTP_URL: `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}`,
    EXPO_PUSH_URL: `http://127.0.0.1:${(expo.address() as AddressInfo).port}/--/api/v2/push/send`,
    LOG_LEVEL: "warn",
  });
  stopWorkers = workers.kill;
  const { outputs, children } = workers;
  // Their first periodic runs (every job's first slot) out of the way.
  await sleep(2_000);
  const outputBefore = outputs.map((text) => text.length);

  // --- The poller: when each event's in-app row first shows.
  const seenAt = new Map<string, number>();
  // Every row of the table is read once: from the last seq below which all were seen (a lower
  // seq can commit after a higher one), skipping those seen above it. No row is ever rolled
  // back here, so every gap fills.
  const seenSeqs = new Set<bigint>();
  let contiguous = 0n;
  let polling = true;
  const poller = (async () => {
    while (polling) {
      const { rows } = await db.sql.query<{ seq: string; type: string; loanId: string | null }>(
        `SELECT "seq"::text AS "seq", "type", "data"->>'loanId' AS "loanId" FROM "Notification"
          WHERE "seq" > $1 AND NOT ("seq" = ANY($2::bigint[])) ORDER BY "seq"`,
        [contiguous.toString(), [...seenSeqs].map(String)],
      );
      const now = performance.now();
      for (const row of rows) {
        seenSeqs.add(BigInt(row.seq));
        if (row.type === "loan_created" && row.loanId && !seenAt.has(row.loanId)) seenAt.set(row.loanId, now);
      }
      while (seenSeqs.delete(contiguous + 1n)) contiguous += 1n;
      await sleep(POLL_MS);
    }
  })();

  // --- The events, through the outbox writer, as the loans service records them.
  const cpuBefore = cpuSnapshot();
  const workerTicksBefore = children.map((child) => processTicks(child.pid));
  const writtenAt: number[] = [];
  const loanIds: string[] = [];
  const writeStarted = performance.now();
  for (let first = 0; first < EVENTS; first += EVENT_BATCH) {
    if (EVENT_RATE > 0) {
      const due = writeStarted + (first / EVENT_RATE) * 1000;
      if (due > performance.now()) await sleep(due - performance.now());
    }
    const now = new Date();
    const events: NewDomainEvent[] = [];
    for (let i = first; i < Math.min(EVENTS, first + EVENT_BATCH); i += 1) {
      const loanId = randomUUID();
      const userId = userIds[i % USERS]!;
      const terms = loanTerms(amountOf(i), RATE_BPS);
      loanIds[i] = loanId;
      indexByLoan.set(loanId, i);
      events.push(
        domainEvent({
          type: "loan.created",
          userId,
          data: {
            loanId,
            userId,
            amount: usdcNumber(terms.amount),
            netAmount: usdcNumber(terms.netAmount),
            duration: DURATION_DAYS,
            interestRate: RATE_BPS / 10_000,
            totalRepayment: usdcNumber(terms.totalRepayment),
            expiresAt: new Date(now.getTime() + 72 * 3_600_000).toISOString(),
            raw: { amount: terms.amount, interest: terms.interest, insuranceFee: terms.insuranceFee },
          },
          dedupeKey: `loan.created:${loanId}`,
          now,
        }),
      );
    }
    const written = await db.prisma.$transaction((tx) => recordEvents(tx, events));
    if (written !== events.length) throw new Error(`the outbox took ${written} of ${events.length} events`);
    const committed = performance.now();
    for (let i = first; i < first + events.length; i += 1) writtenAt[i] = committed;
  }
  const writeSeconds = (performance.now() - writeStarted) / 1000;
  const firstWritten = writtenAt[0]!;

  // --- Every event's row in the inbox, then every delivery job run.
  const allSeen = await waitUntil("every in-app row", async () => seenAt.size >= EVENTS, TIMEOUT_MS, POLL_MS);
  polling = false;
  await poller;
  const latencies = loanIds.map((loanId, i) => (seenAt.get(loanId) ?? performance.now()) - writtenAt[i]!).sort((a, b) => a - b);
  const lastVisible = Math.max(...seenAt.values());
  const inAppPerSecond = seenAt.size / ((lastVisible - firstWritten) / 1000);

  const pendingJobs = async () =>
    Number(
      (
        await db.sql.query<{ n: string }>(
          `SELECT count(*)::text AS n FROM "Job" WHERE "kind" LIKE 'notification.%' AND "status" IN ('queued', 'running')`,
        )
      ).rows[0]!.n,
    );
  const allDelivered = await waitUntil("every notification.* job", async () => (await pendingJobs()) === 0, TIMEOUT_MS);
  const deliveredAfter = (performance.now() - firstWritten) / 1000;
  const cpuAfter = cpuSnapshot();
  const workerTicks = children.map((child, w) => processTicks(child.pid) - workerTicksBefore[w]!);
  // A push's or e-mail's side effects reached the receivers before its job was marked done.
  await sleep(500);
  const jobs = await db.sql.query<{ kind: string; status: string; n: string; retried: string }>(
    `SELECT "kind", "status"::text AS "status", count(*)::text AS n, count(*) FILTER (WHERE "attempts" > 1)::text AS retried
      FROM "Job" WHERE "kind" LIKE 'notification.%' GROUP BY 1, 2 ORDER BY 1, 2`,
  );
  const byWorker = await db.sql.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM "JobAttempt" a JOIN "Job" j ON j."id" = a."jobId"
      WHERE j."kind" LIKE 'notification.%' GROUP BY a."processId" ORDER BY 1 DESC`,
  );
  const inAppRows = await db.sql.query<{ loanId: string; n: string }>(
    `SELECT "data"->>'loanId' AS "loanId", count(*)::text AS n FROM "Notification" WHERE "type" = 'loan_created' GROUP BY 1`,
  );
  const notificationIds = await db.sql.query<{ id: string }>(`SELECT "id"::text AS "id" FROM "Notification" WHERE "type" = 'loan_created'`);

  const inAppDuplicates = inAppRows.rows.reduce((sum, row) => sum + Math.max(0, Number(row.n) - 1), 0);
  const pushDuplicates = [...pushesByNotification.values()].reduce((sum, n) => sum + Math.max(0, n - 1), 0);
  const mailDuplicates = [...mailsByEvent.values()].reduce((sum, n) => sum + Math.max(0, n - 1), 0);
  const duplicates = inAppDuplicates + pushDuplicates + mailDuplicates;
  const missingRows = EVENTS - inAppRows.rows.filter((row) => indexByLoan.has(row.loanId)).length;
  const missingPushes = notificationIds.rows.filter((row) => !pushesByNotification.has(row.id)).length;
  const missingMails = EVENTS - mailsByEvent.size;
  const pushes = [...pushesByNotification.values()].reduce((sum, n) => sum + n, 0);
  const mails = [...mailsByEvent.values()].reduce((sum, n) => sum + n, 0) + unmatchedMails;
  const workerLines = outputs
    .map((text, w) => text.slice(outputBefore[w]).trim())
    .filter((text) => text.length > 0)
    .join("\n");

  // --- Workers stopped (SIGTERM: they finish what they run), then the floor on the same table.
  await workers.stop();
  const sample = await db.sql.query<{ userId: string; type: string; title: string; body: string; data: unknown }>(
    `SELECT "userId", "type", "title", "body", "data" FROM "Notification" WHERE "type" = 'loan_created' ORDER BY "seq"`,
  );
  const floorClient = new pg.Client({ connectionString: benchDatabase.url });
  await floorClient.connect();
  const floorSeconds: number[] = [];
  for (let pass = 0; pass < FLOOR_PASSES; pass += 1) {
    const started = performance.now();
    for (let first = 0; first < sample.rows.length; first += FLOOR_BATCH) {
      const rows = sample.rows.slice(first, first + FLOOR_BATCH);
      const values: unknown[] = [];
      const tuples = rows.map((row, r) => {
        const now = new Date().toISOString();
        values.push(randomUUID(), row.userId, row.type, row.title, row.body, JSON.stringify(row.data), now);
        values.push(`${randomUUID()}:${row.userId}:${row.type}`);
        const p = r * 8;
        return `($${p + 1}::uuid, $${p + 2}, $${p + 3}, $${p + 4}, $${p + 5}, $${p + 6}::jsonb, $${p + 7}::timestamp(3), $${p + 8})`;
      });
      await floorClient.query(
        `INSERT INTO "Notification" ("id", "userId", "type", "title", "body", "data", "createdAt", "dedupeKey") VALUES ${tuples.join(", ")}`,
        values,
      );
    }
    floorSeconds.push((performance.now() - started) / 1000);
  }
  await floorClient.end();
  const floorPerSecond = sample.rows.length / median(floorSeconds);

  const cpuMs = (ticks: number) => ticks * 10;
  const postgresTicks = ticksOf(cpuAfter, (key) => key === "postgres") - ticksOf(cpuBefore, (key) => key === "postgres");
  const benchTicks = ticksOf(cpuAfter, (key) => key !== "postgres") - ticksOf(cpuBefore, (key) => key !== "postgres");
  console.log(
    `${fmt(EVENTS)} loan.created events for ${USERS} users (${EVENT_BATCH} per outbox transaction, ${
      EVENT_RATE > 0 ? `${fmt(EVENT_RATE)} events/s` : "as fast as possible"
    }), ${WORKERS} npm run worker processes, PostgreSQL ${serverVersion}, ${os.cpus().length} cores`,
  );
  console.log(`events written:  ${fmt(EVENTS)} in ${fmt(writeSeconds, 2)} s (${fmt(EVENTS / writeSeconds)} events/s)`);
  console.log(
    `in-app:          ${fmt(seenAt.size)} rows, the last visible ${fmt((lastVisible - firstWritten) / 1000, 2)} s after the first event: ${fmt(inAppPerSecond)} notifications/s${allSeen ? "" : " (TIMED OUT)"}`,
  );
  console.log(
    `event to inbox:  p50 ${fmt(at(latencies, 0.5))} ms  p90 ${fmt(at(latencies, 0.9))} ms  p99 ${fmt(at(latencies, 0.99))} ms  max ${fmt(latencies.at(-1)!)} ms (poll every ${POLL_MS} ms)`,
  );
  console.log(
    `deliveries:      ${fmt(pushes)} pushes (${fmt(pushRequests)} requests), ${fmt(mails)} e-mails received; every notification.* job done ${fmt(deliveredAfter, 2)} s after the first event, the last delivery received at ${fmt((lastDeliveryAt - firstWritten) / 1000, 2)} s${allDelivered ? "" : " (TIMED OUT)"}`,
  );
  console.log(
    `jobs:            ${jobs.rows.map((row) => `${row.kind} ${row.status} ${fmt(Number(row.n))}${Number(row.retried) > 0 ? ` (${row.retried} retried)` : ""}`).join(", ")}; tries per worker process: ${byWorker.rows.map((row) => fmt(Number(row.n))).join(" / ")}`,
  );
  console.log(
    `cpu per event:   workers ${workerTicks.map((ticks) => fmt(cpuMs(ticks) / EVENTS, 2)).join(" + ")} ms, postgres ${fmt(cpuMs(postgresTicks) / EVENTS, 2)} ms, this process (writer, poller, receivers) ${fmt(cpuMs(benchTicks) / EVENTS, 2)} ms`,
  );
  console.log(
    `floor:           plain INSERT of ${FLOOR_BATCH} rows per statement: ${fmt(sample.rows.length)} rows in ${fmt(median(floorSeconds), 3)} s, ${fmt(floorPerSecond)} rows/s (median of ${FLOOR_PASSES}: ${floorSeconds.map((s) => fmt(s, 3)).join(", ")} s)`,
  );
  console.log(
    `missing:         in-app ${missingRows}, push ${missingPushes}, e-mail ${missingMails}; e-mails not matched to an event ${unmatchedMails}; misrouted ${misrouted}`,
  );
  if (workerLines) console.log(`worker output during the run:\n${workerLines.split("\n").slice(-10).join("\n")}`);
  console.log(
    `in-app / floor:  ${fmt(inAppPerSecond, 1)} / ${fmt(floorPerSecond)} = ${(inAppPerSecond / floorPerSecond).toFixed(4)} (the ratio below, unrounded)`,
  );
  console.log(`duplicates: ${duplicates} (in-app ${inAppDuplicates}, push ${pushDuplicates}, e-mail ${mailDuplicates})`);
  lastLine = `ratio: ${(inAppPerSecond / floorPerSecond).toFixed(2)} p99_ms: ${Math.round(at(latencies, 0.99))}`;
} finally {
  stopWorkers();
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
  await new Promise((resolve) => expo.close(resolve));
  await db.close();
  await benchDatabase.drop();
}
console.log(lastLine);
