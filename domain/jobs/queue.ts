// The house's one queue of background work, in the service's own database (Job, JobAttempt):
// deliveries fanned out from the outbox (notifications, webhooks) and the periodic jobs. It runs
// the same on the embedded PGlite (one process) and on PostgreSQL (several `npm run worker`):
//
// - a job is claimed by one statement with FOR UPDATE SKIP LOCKED, so two workers never run one
//   job at once, and each try is recorded (JobAttempt) in that same statement;
// - its I/O runs outside any database transaction (the runner calls the handler between the
//   claim and the outcome), so a slow SMTP server holds no lock and no connection;
// - a job held by a process that stopped beating (domain/processes/presence.ts) is queued again:
//   no lease to size, and a killed worker's jobs resume about 10 s later;
// - `runAt` is on the service clock, never the database's `now()`: the sandbox's
//   /dev/time/advance makes retries and delayed jobs due, like real time passing would.
//
// Delivery is at least once: a process that froze past its heartbeat may finish a job another
// process took over. Handlers are idempotent (a dedupe key per side effect, or a state check).

import { randomUUID } from "node:crypto";
import type { Clock } from "../../core/clock.js";
import { coalesce } from "../../core/coalesce.js";
import { isUuid, jsonForPostgres } from "../../core/text.js";
import { Prisma } from "../../generated/prisma/client.js";
import type { Db, RawTx } from "../db.js";
import { type ProcessPresence, processAlive } from "../processes/presence.js";
import {
  type ClaimedJob,
  DEFAULT_MAX_ATTEMPTS,
  type EnqueueInput,
  type JobQueue,
  type JobStatus,
  jobRetryDelayMs,
  PERIODIC_KEY_PREFIX,
  PermanentJobError,
} from "./types.js";

// What callers see of the queue is written in types.ts; they import it from here, the queue's one path.
export {
  type ClaimedJob,
  DEFAULT_MAX_ATTEMPTS,
  type EnqueueInput,
  type FailOutcome,
  type JobHandler,
  type JobQueue,
  type JobRow,
  type JobStatus,
  jobRetryDelayMs,
  PERIODIC_KEY_PREFIX,
  PermanentJobError,
  RetryableJobError,
} from "./types.js";

/** An error's message is kept this long (Job.lastError, JobAttempt.error). */
const ERROR_MAX_CHARS = 2_000;
/** Rows deleted per statement by prune: no long lock on a large table. */
const PRUNE_BATCH = 5_000;

/** Due jobs a claim looks at, at least, and per free slot: a concurrency key's jobs beyond its limit are passed over within it. */
const CLAIM_WINDOW_MIN = 200;
const CLAIM_WINDOW_PER_SLOT = 20;

type ClaimedRow = Omit<ClaimedJob, "attempt"> & { attempts: number };

/** A try's end as `finish` writes it: the job's next status (and time, when queued again), the attempt's outcome. */
interface Finish {
  job: Pick<ClaimedJob, "id" | "attempt">;
  status: "succeeded" | "dead" | "queued";
  runAt: Date | null;
  error: string | null;
  outcome: "succeeded" | "failed" | "retry";
  durationMs: number;
}

const errorText = (error: unknown) =>
  (error instanceof Error ? `${error.name === "Error" ? "" : `${error.name}: `}${error.message}` : String(error)).slice(0, ERROR_MAX_CHARS);
const ts = (date: Date) => Prisma.sql`${date.toISOString()}::timestamp(3)`;

export function createJobQueue({
  db,
  clock,
  presence,
}: {
  db: Db;
  /** The service clock: `runAt` is compared with its `now()`. */
  clock: Pick<Clock, "now">;
  /** This process among the live ones: what it claims carries its id. */
  presence: Pick<ProcessPresence, "id">;
}): JobQueue {
  const { prisma } = db;
  /**
   * A statement in the caller's transaction when given, else on plain SQL: the queue's own
   * statements are the workers' hot path, where a raw query through Prisma costs about twice
   * pg's, and more with a large parameter (a fan-out's rows).
   */
  const query = <Row>(statement: Prisma.Sql, tx?: RawTx): Promise<Row[]> =>
    (tx !== undefined && tx !== prisma ? tx : db.plain).$queryRaw<Row[]>(statement);
  const listeners = new Set<() => void>();
  const wake = () => {
    for (const listener of listeners) listener();
  };

  async function insert(inputs: readonly EnqueueInput[], tx: RawTx | undefined): Promise<string[]> {
    if (inputs.length === 0) return [];
    const now = clock.now();
    // The rows as one JSON parameter (json_to_recordset): a statement of fixed shape whatever the
    // number of jobs, and serialized by JSON.stringify, where array parameters are escaped element
    // by element in JavaScript (a fan-out page enqueues a thousand jobs).
    const rows = jsonForPostgres(
      inputs.map((input) => ({
        id: randomUUID(),
        kind: input.kind,
        payload: input.payload ?? null,
        runAt: (input.runAt ?? now).toISOString(),
        maxAttempts: input.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
        dedupeKey: input.dedupeKey ?? null,
        exclusive: input.exclusive === true,
        concurrencyKey: input.concurrency?.key ?? null,
        concurrencyLimit: input.concurrency?.limit ?? null,
      })),
    );
    const created = await query<{ id: string }>(
      Prisma.sql`
      INSERT INTO "Job" ("id", "kind", "payload", "status", "runAt", "attempts", "maxAttempts", "dedupeKey", "concurrencyKey", "concurrencyLimit", "createdAt")
      SELECT v."id", v."kind", coalesce(v."payload", 'null'::jsonb), 'queued', v."runAt", 0, v."maxAttempts", v."dedupeKey",
          v."concurrencyKey", v."concurrencyLimit", ${ts(now)}
        FROM json_to_recordset(${rows}::json)
          AS v ("id" uuid, "kind" text, "payload" jsonb, "runAt" timestamp(3), "maxAttempts" int, "dedupeKey" text, "exclusive" boolean,
            "concurrencyKey" text, "concurrencyLimit" int)
        WHERE NOT (v."exclusive" AND EXISTS (
          SELECT 1 FROM "Job" a WHERE a."kind" = v."kind" AND a."status" IN ('queued', 'running')))
      -- Without a target: a taken dedupe key (or, never in practice, id) skips the row.
      ON CONFLICT DO NOTHING
      RETURNING "id"`,
      tx,
    );
    // Inside a caller's transaction the rows are invisible until its commit: the caller wakes.
    if (created.length > 0 && (tx === undefined || tx === prisma)) wake();
    return created.map((row) => row.id);
  }

  /**
   * Closes tries: each job's new state and its attempt row, guarded by the claim (still running,
   * this process's, this try), for many jobs in one statement: the outcomes that come while one
   * batch is written go out together as the next (core/coalesce.ts). Answers, per try, whether
   * it was still this process's.
   */
  const finish = coalesce(async (tries: readonly Finish[]): Promise<boolean[]> => {
    const processId = await presence.id();
    const now = ts(clock.now());
    const rows = jsonForPostgres(
      tries.map((entry) => ({
        id: entry.job.id,
        attempt: entry.job.attempt,
        status: entry.status,
        runAt: entry.runAt?.toISOString() ?? null,
        error: entry.error,
        outcome: entry.outcome,
        durationMs: Math.round(entry.durationMs),
      })),
    );
    const done = await query<{ id: string }>(Prisma.sql`
      WITH v AS (
        SELECT * FROM json_to_recordset(${rows}::json)
          AS v ("id" uuid, "attempt" int, "status" text, "runAt" timestamp(3), "error" text, "outcome" text, "durationMs" int)
      ), done AS (
        UPDATE "Job" j SET "status" = v."status",
            "finishedAt" = CASE WHEN v."status" = 'queued' THEN j."finishedAt" ELSE ${now} END,
            "runAt" = coalesce(v."runAt", j."runAt"),
            "lastError" = CASE WHEN v."status" = 'succeeded' THEN j."lastError" ELSE v."error" END,
            "lockedBy" = NULL, "lockedAt" = NULL
          FROM v WHERE j."id" = v."id" AND j."status" = 'running' AND j."lockedBy" = ${processId} AND j."attempts" = v."attempt"
          RETURNING j."id"
      ), closed AS (
        UPDATE "JobAttempt" a SET "finishedAt" = ${now}, "outcome" = v."outcome", "error" = v."error", "durationMs" = v."durationMs"
          FROM v WHERE a."jobId" = v."id" AND a."attempt" = v."attempt" AND v."id" IN (SELECT "id" FROM done)
      )
      SELECT "id" FROM done`);
    const finished = new Set(done.map((row) => row.id));
    return tries.map((entry) => finished.has(entry.job.id));
  });

  return {
    enqueue: async (input, tx) => (await insert([input], tx))[0] ?? null,
    enqueueMany: (inputs, tx) => insert(inputs, tx),
    async joinWaiting(inputs, maxItems, tx) {
      if (inputs.length === 0) return [];
      const rows = jsonForPostgres(inputs.map((input, i) => ({ i, kind: input.kind, key: input.concurrencyKey, items: input.items })));
      const joined = await query<{ i: number; added: number }>(
        Prisma.sql`
        WITH v AS (
          SELECT * FROM json_to_recordset(${rows}::json) AS v ("i" int, "kind" text, "key" text, "items" jsonb)
        ), waiting AS (
          SELECT j."id", j."concurrencyKey", j."createdAt", jsonb_array_length(j."payload"->'items') AS "has" FROM "Job" j
            WHERE j."concurrencyKey" IN (SELECT "key" FROM v) AND j."kind" IN (SELECT "kind" FROM v) AND j."status" = 'queued' AND j."attempts" = 0
              AND j."runAt" <= ${ts(clock.now())} AND j."payload"->>'batch' = 'true'
              AND jsonb_array_length(j."payload"->'items') < ${maxItems}::int
            FOR UPDATE SKIP LOCKED
        ), chosen AS (
          SELECT DISTINCT ON (w."concurrencyKey") w."id", w."has", v."i", v."items", v."kind" FROM waiting w JOIN v ON v."key" = w."concurrencyKey"
            ORDER BY w."concurrencyKey", w."createdAt" DESC
        ), added AS (
          UPDATE "Job" j SET "payload" = jsonb_set(j."payload", '{items}', (j."payload"->'items') || (
              SELECT coalesce(jsonb_agg(t."item" ORDER BY t."n"), '[]'::jsonb)
                FROM jsonb_array_elements(c."items") WITH ORDINALITY AS t ("item", "n") WHERE t."n" <= ${maxItems}::int - c."has"))
            FROM chosen c WHERE j."id" = c."id" AND j."kind" = c."kind"
            RETURNING c."i", least(jsonb_array_length(c."items"), ${maxItems}::int - c."has") AS "added"
        )
        SELECT "i", "added"::int AS "added" FROM added`,
        tx,
      );
      const added = new Map(joined.map((row) => [row.i, row.added]));
      return inputs.map((_, i) => added.get(i) ?? 0);
    },
    wake,
    onWake(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    async claim({ kinds, limit }) {
      if (limit <= 0 || kinds.length === 0) return [];
      const processId = await presence.id();
      const now = ts(clock.now());
      // One statement: the rows are locked (SKIP LOCKED: a concurrent claimer takes others),
      // marked running for this process and their attempt recorded, or none of it.
      // The due jobs in order, a window of them at a time; of a concurrency key, only as many as
      // its limit leaves beside the ones running (counted once per claim: few run).
      const window = Math.max(CLAIM_WINDOW_MIN, limit * CLAIM_WINDOW_PER_SLOT);
      const rows = await query<ClaimedRow>(Prisma.sql`
        WITH candidates AS (
          SELECT "id", "runAt", "concurrencyKey", "concurrencyLimit",
              row_number() OVER (PARTITION BY "concurrencyKey" ORDER BY "runAt", "id") AS "rank"
            FROM (SELECT "id", "runAt", "concurrencyKey", "concurrencyLimit" FROM "Job"
                    WHERE "status" = 'queued' AND "runAt" <= ${now} AND "kind" = ANY(${kinds as string[]}::text[])
                    ORDER BY "runAt", "id" LIMIT ${window}::int) due
        ), running AS (
          SELECT "concurrencyKey", count(*) AS "count" FROM "Job"
            WHERE "status" = 'running' AND "concurrencyKey" IS NOT NULL GROUP BY "concurrencyKey"
        ), allowed AS (
          SELECT c."id" FROM candidates c LEFT JOIN running r ON r."concurrencyKey" = c."concurrencyKey"
            WHERE c."concurrencyKey" IS NULL OR c."rank" + coalesce(r."count", 0) <= c."concurrencyLimit"
            ORDER BY c."runAt", c."id" LIMIT ${limit}::int
        ), claimed AS (
          UPDATE "Job" SET "status" = 'running', "lockedBy" = ${processId}, "lockedAt" = ${now}, "attempts" = "attempts" + 1
          WHERE "id" IN (
            SELECT "id" FROM "Job"
              WHERE "id" IN (SELECT "id" FROM allowed) AND "status" = 'queued'
              ORDER BY "runAt", "id"
              FOR UPDATE SKIP LOCKED)
          RETURNING "id", "kind", "payload", "attempts", "maxAttempts", "runAt", "dedupeKey", "createdAt"
        ), tried AS (
          INSERT INTO "JobAttempt" ("id", "jobId", "attempt", "processId", "startedAt")
          SELECT gen_random_uuid(), "id", "attempts", ${processId}, ${now} FROM claimed
        )
        SELECT "id", "kind", "payload", "attempts", "maxAttempts", "runAt", "dedupeKey", "createdAt"
          FROM claimed ORDER BY "runAt", "id"`);
      return rows.map(({ attempts, ...row }) => ({ ...row, attempt: attempts }));
    },

    succeed: (job, { durationMs }) => finish({ job, status: "succeeded", runAt: null, error: null, outcome: "succeeded", durationMs }),

    async fail(job, error, { durationMs, retryDelayMs }) {
      const now = clock.now();
      const message = errorText(error);
      const dead = error instanceof PermanentJobError || job.attempt >= job.maxAttempts;
      const retryAt = new Date(now.getTime() + Math.max(0, retryDelayMs ?? jobRetryDelayMs(job.attempt)));
      const recorded = await finish({
        job,
        status: dead ? "dead" : "queued",
        runAt: dead ? null : retryAt,
        error: message,
        outcome: dead ? "failed" : "retry",
        durationMs,
      });
      if (!recorded) return "lost";
      return dead ? "dead" : "retry";
    },

    async recoverCrashed() {
      const now = ts(clock.now());
      // SKIP LOCKED: a job whose outcome is being written right now is not a crash.
      const rows = await prisma.$queryRaw<{ id: string; kind: string; attempts: number; processId: string | null; status: JobStatus }[]>`
        WITH orphaned AS (
          SELECT "id", "lockedBy" FROM "Job"
            WHERE "status" = 'running' AND NOT ${processAlive(`"Job"."lockedBy"`)}
            FOR UPDATE SKIP LOCKED
        ), requeued AS (
          UPDATE "Job" j SET
              "status" = CASE WHEN j."attempts" >= j."maxAttempts" THEN 'dead' ELSE 'queued' END,
              "finishedAt" = CASE WHEN j."attempts" >= j."maxAttempts" THEN ${now} END,
              "runAt" = ${now}, "lockedBy" = NULL, "lockedAt" = NULL, "lastError" = 'its process died while running it'
            FROM orphaned o WHERE j."id" = o."id"
            RETURNING j."id", j."kind", j."attempts", j."status", o."lockedBy"
        ), closed AS (
          UPDATE "JobAttempt" a SET "finishedAt" = ${now}, "outcome" = 'crashed', "error" = 'its process died while running it'
            FROM requeued r WHERE a."jobId" = r."id" AND a."attempt" = r."attempts" AND a."finishedAt" IS NULL
        )
        SELECT "id", "kind", "attempts", "lockedBy" AS "processId", "status" FROM requeued ORDER BY "id"`;
      return rows.map(({ attempts, ...row }) => ({ ...row, attempt: attempts }));
    },

    get: (where) => ("id" in where && !isUuid(where.id) ? Promise.resolve(null) : prisma.job.findUnique({ where })),

    listDead: ({ kind, limit = 50, offset = 0 } = {}) =>
      prisma.job.findMany({
        where: { status: "dead", ...(kind === undefined ? {} : { kind }) },
        orderBy: [{ finishedAt: "desc" }, { id: "asc" }],
        take: limit,
        skip: offset,
      }),

    async retryDead(jobId) {
      if (!isUuid(jobId)) return false;
      // Attempts are never reset (JobAttempt keeps one row per try number): one more try is allowed instead.
      const count = await prisma.$executeRaw`
        UPDATE "Job" SET "status" = 'queued', "runAt" = ${ts(clock.now())}, "finishedAt" = NULL,
            "maxAttempts" = GREATEST("maxAttempts", "attempts" + 1)
          WHERE "id" = ${jobId}::uuid AND "status" = 'dead'`;
      if (count === 1) wake();
      return count === 1;
    },

    async stats() {
      const rows = await prisma.$queryRaw<{ kind: string; status: JobStatus; count: number }[]>`
        SELECT "kind", "status", count(*)::int AS "count" FROM "Job" GROUP BY "kind", "status" ORDER BY "kind", "status"`;
      const stats: Record<string, Partial<Record<JobStatus, number>>> = {};
      for (const row of rows) stats[row.kind] = { ...stats[row.kind], [row.status]: row.count };
      return stats;
    },

    async prune(before) {
      let deleted = 0;
      for (;;) {
        // A finished job ran after its runAt: the (status, runAt) index narrows the scan.
        const [row] = await prisma.$queryRaw<{ count: number }[]>`
          WITH gone AS (
            DELETE FROM "Job" WHERE "id" IN (
              SELECT "id" FROM "Job"
                WHERE ("status" = 'succeeded' OR ("status" = 'dead' AND "dedupeKey" LIKE ${`${PERIODIC_KEY_PREFIX}%`}))
                  AND "runAt" < ${ts(before)} AND "finishedAt" < ${ts(before)}
                LIMIT ${PRUNE_BATCH}::int)
            RETURNING "id"
          ), attempts AS (
            DELETE FROM "JobAttempt" WHERE "jobId" IN (SELECT "id" FROM gone)
          )
          SELECT count(*)::int AS "count" FROM gone`;
        deleted += row?.count ?? 0;
        if ((row?.count ?? 0) < PRUNE_BATCH) return deleted;
      }
    },
  };
}
