// Delivery state per consumer: each consumer (rewards now; notifications and webhooks next)
// takes every event of its types exactly once, in its own order and at its own pace, and marks
// it with a ConsumedEvent row in the same transaction as its effects. A reorg deletes the events
// of removed blocks that no consumer has taken yet; those already taken are kept, marked
// `revertedAt`, and no other consumer takes them afterwards. An event whose apply throws is left
// untaken for the next run, and the run goes on with the others: one bad event blocks nothing.
// Each consumer's cursor (ConsumerCursor, moved by `settleCursor`) bounds its reads to the events
// inserted after the history it has finished, so a run costs the same after a million events. The
// cursor is a transaction id: every event written by a transaction below it is settled (taken,
// reverted or not of its types), and none can appear any more, because no transaction below the
// oldest one still running can write again (exact, where a seq needs a margin for the
// transactions that took a seq and commit later).
import { epochMs } from "../../core/db.js";
import { createLogger, type Logger } from "../../core/logger.js";
import { type Db, type RawTx, rawTxOf, type Tx } from "../db.js";
import { decodeEventData, type EventData, type EventType } from "./catalogue.js";

/** The consumers of the outbox. A name is stored with each event a consumer took: never rename one without a migration. */
export const CONSUMERS = ["rewards", "trust-score", "guardian-alerts", "payment-events", "notifications", "webhooks"] as const;
export type ConsumerName = (typeof CONSUMERS)[number];

/** An outbox event as a consumer sees it, its data decoded by the catalogue (bigints in `raw`). */
export type ConsumedEvent<T extends EventType = EventType> = {
  [K in T]: {
    id: string;
    type: K;
    userId: string | null;
    /** The user exists and has not asked for their account's deletion (as read with the event). */
    userActive: boolean;
    /** Set for chain facts. */
    chainId: number | null;
    /** When the fact happened: block time for chain facts. */
    createdAt: Date;
    /** Its place in the outbox's insertion order. */
    seq: bigint;
    data: EventData<K>;
  };
}[T];

export interface ConsumeOptions<T extends EventType> {
  consumer: ConsumerName;
  types: readonly T[];
  now: Date;
  /**
   * Applies one event inside the transaction that marks it taken; throwing rolls both back, logs
   * the event at warn, and leaves it for the next run (the run goes on with the others).
   */
  apply?(tx: Tx, event: ConsumedEvent<T>): Promise<void>;
  /** After the commit of one event (e.g. dropping a cache). */
  afterCommit?(event: ConsumedEvent<T>): void;
  /**
   * An event whose stored data does not match the catalogue (written by an older version): it is
   * taken without effect, so one bad row never stops the consumer, and reported here.
   */
  onInvalid?(event: { id: string; type: string }, error: Error): void;
  /** Where a failed apply is said; default a logger of its own at warn level. */
  logger?: Pick<Logger, "warn">;
  batchSize?: number;
  /**
   * Reads and decodes the data of these types only (default: every type's). The others come with
   * `data` undefined: for a consumer that reads what it needs of them later, by id (webhook
   * deliveries read their event when they send it).
   */
  dataFor?: readonly T[];
  /** Takes only these events (a request that waits for the effects of its own transaction). */
  onlyIds?: readonly string[];
  /**
   * Applies a whole page of events in one transaction instead (a fan-out that writes rows for
   * many events with a few statements). A partition's pages are taken by one process at a time:
   * a run that finds another process on it goes on to the next partition. A page whose batch throws is
   * applied again event by event (through `applyBatch` with one event), so one bad event still
   * stops nothing. `apply` is then not used.
   */
  applyBatch?(tx: Tx, events: ConsumedEvent<T>[]): Promise<void>;
  /**
   * `applyBatch` in a transaction of plain SQL (`db.sql`), with its raw statements only: for a
   * fan-out whose pages are large parameters and results (webhooks), where Prisma's client costs
   * about twice the driver's. Instead of `applyBatch`.
   */
  applyBatchSql?(tx: RawTx, events: ConsumedEvent<T>[]): Promise<void>;
  /**
   * The order events are taken in: `time` (default: when the fact happened, then block and key),
   * or `insertion` (the outbox's own order, seq), which reads a page by an index range instead of
   * sorting every pending event: for consumers to whom the order of facts means nothing. With
   * `applyBatch`, a process reads each partition on from where its last run there ended, and from
   * the cursor again every REREAD_FROM_CURSOR_MS (an event that committed behind a later one).
   */
  order?: "time" | "insertion";
  /**
   * With `applyBatch`: the events are split into this many partitions by a hash of their id,
   * each with its own page lock, so as many processes fan out at once (default 1). Order holds
   * within a partition only.
   */
  partitions?: number;
}

let fallbackLogger: Pick<Logger, "warn"> | undefined;
const defaultLogger = () => {
  fallbackLogger ??= createLogger("warn", "events");
  return fallbackLogger;
};

/** An apply's own failure, told apart from the database's (which still ends the run: every event would fail alike). */
class ApplyFailed extends Error {
  constructor(readonly error: unknown) {
    super("apply failed");
  }
}

/** Real ms between two moves of one consumer's cursor by this process (a move costs the events above it). */
export const SETTLE_EVERY_MS = 1_000;
/** Real ms a flowing backlog may put off a move of the cursor and a read from it, at most. */
const BACKLOG_DELAY_MAX_MS = 10_000;
/** Two-key advisory locks of this class are the consumers' page locks (hashtext of the name is the second key). */
const PAGE_LOCK_CLASS = 24_051;
/** And of this class, a consumer's cursor move (hashtext of the consumer's name). */
const SETTLE_LOCK_CLASS = 24_052;
const lastSettled = new Map<ConsumerName, number>();
/**
 * Real ms during which a process reads a partition (insertion order) on from where its last run
 * there ended, before it reads it again from the cursor. A run's reads then cost the new events
 * only, not every event above the cursor; an event that commits after a higher seq was read is
 * taken at the next read from the cursor, this late at most.
 */
export const REREAD_FROM_CURSOR_MS = 1_000;
/** Per database and consumer partition: the seq this process's last run there read up to, and when it last read from the cursor. */
const readUpTo = new WeakMap<Db, Map<string, Remembered>>();
interface Remembered {
  /** The seq read on to. */
  after: bigint;
  /** When it last read from the cursor (performance.now). */
  fromCursorAt: number;
  /** Its last page was full: a backlog flows. */
  full: boolean;
}
/**
 * Per database and consumer: its cursor as this process last read or moved it. Another process
 * may have moved it further since: reading from a lower one costs a few more rows, never an event.
 * Its value goes into the reads as a parameter, so the planner takes the xid index's range.
 */
const knownCursors = new WeakMap<Db, Map<ConsumerName, bigint>>();
function knownCursorsOf(db: Db): Map<ConsumerName, bigint> {
  const known = knownCursors.get(db) ?? new Map<ConsumerName, bigint>();
  knownCursors.set(db, known);
  return known;
}
async function cursorOf(db: Db, consumer: ConsumerName): Promise<bigint> {
  const known = knownCursorsOf(db);
  let cursor = known.get(consumer);
  if (cursor === undefined) {
    const [row] = await db.prisma.$queryRaw<{ xid: string }[]>`
      SELECT coalesce((SELECT "xid" FROM "ConsumerCursor" WHERE "consumer" = ${consumer}), 0)::text AS "xid"`;
    cursor = BigInt(row?.xid ?? 0);
    known.set(consumer, cursor);
  }
  return cursor;
}

type PendingRow<T> = {
  id: string;
  seq: string;
  type: T;
  userId: string | null;
  userActive: boolean;
  chainId: number | null;
  /** Epoch ms: read alike through Prisma and the driver (which reads a `timestamp` in the process's time zone). */
  createdAt: number;
  data: unknown;
  /** Taken by this consumer already (read in insertion order, where a page is cut before that check). */
  taken: boolean;
};

/**
 * The consumer's pending events above its cursor, in its order, except `failed`; in insertion
 * order, above `after` too (the last page of this run: a run pages forward, and what commits
 * behind it is the next run's). Reading on from `after`, the page is the next `batchSize` events of
 * its types above it, each with `taken` (by this consumer already, e.g. through `onlyIds`):
 * the page is cut by the seq index before any join, so it costs its own rows whatever lies above
 * it and whatever the planner's statistics say (a burst lands before they catch up).
 */
function readPending<T extends EventType>(
  q: Pick<RawTx, "$queryRawUnsafe">,
  options: ConsumeOptions<T>,
  batchSize: number,
  failed: string[],
  after: bigint,
  cursor: bigint,
  partition: { index: number; count: number } = { index: 0, count: 1 },
): Promise<PendingRow<T>[]> {
  const params = [
    options.types,
    options.consumer,
    batchSize,
    failed,
    after.toString(),
    partition.count,
    partition.index,
    cursor.toString(),
    ...(options.onlyIds ? [options.onlyIds] : []),
  ];
  // The data of the types the consumer reads it for; the others' stays in the table.
  let data = `d."data"`;
  if (options.dataFor) {
    params.push(options.dataFor);
    data = `CASE WHEN d."type" = ANY($${params.length}::text[]) THEN d."data" END`;
  }
  // Reading on, the seq index's range above `after`; from the cursor, the xid index's range above it.
  const filters = `${after > 0n ? `d."seq" > $5::bigint AND $8::bigint IS NOT NULL` : `d."xid" >= $8::bigint AND $5::bigint = 0`}
        AND d."type" = ANY($1::text[]) AND d."revertedAt" IS NULL
        AND d."id" <> ALL($4::uuid[])
        AND (hashtext(d."id"::text)::bigint + 2147483648) % $6::int = $7::int
        ${options.onlyIds ? `AND d."id" = ANY($9::uuid[])` : ""}`;
  const taken = `EXISTS (SELECT 1 FROM "ConsumedEvent" c WHERE c."consumer" = $2 AND c."eventId" = d."id")`;
  const columns = `d."id"::text AS "id", d."seq"::text AS "seq", d."type", d."userId",
        (u."id" IS NOT NULL AND u."deletedAt" IS NULL) AS "userActive", d."chainId", ${epochMs(`d."createdAt"`)} AS "createdAt"`;
  // Reading on from `after` the rows are new; from the cursor most are taken, and the anti-join finds the few that are not.
  if (options.order === "insertion" && after > 0n) {
    return q.$queryRawUnsafe<PendingRow<T>[]>(
      `WITH page AS MATERIALIZED (
         SELECT d."id", d."seq", d."type", d."userId", d."chainId", d."createdAt", ${data} AS "data"
           FROM "DomainEvent" d WHERE ${filters} ORDER BY d."seq" LIMIT $3)
       SELECT ${columns}, t."taken", CASE WHEN t."taken" THEN NULL ELSE d."data" END AS "data"
         FROM page d LEFT JOIN "User" u ON u."id" = d."userId"
           CROSS JOIN LATERAL (SELECT ${taken} AS "taken") t
         ORDER BY d."seq"`,
      ...params,
    );
  }
  return q.$queryRawUnsafe<PendingRow<T>[]>(
    `SELECT ${columns}, false AS "taken", ${data} AS "data"
      FROM "DomainEvent" d LEFT JOIN "User" u ON u."id" = d."userId"
      WHERE ${filters} AND NOT ${taken}
      ORDER BY ${options.order === "insertion" ? `d."seq"` : `d."createdAt", d."blockNumber" NULLS FIRST, d."dedupeKey"`} LIMIT $3`,
    ...params,
  );
}

/** The row decoded by the catalogue, or undefined (reported through onInvalid) when it no longer matches it. */
function decoded<T extends EventType>(row: PendingRow<T>, options: ConsumeOptions<T>): ConsumedEvent<T> | undefined {
  try {
    const { taken: _taken, ...fields } = row;
    return {
      ...fields,
      seq: BigInt(row.seq),
      createdAt: new Date(Number(row.createdAt)),
      chainId: row.chainId === null ? null : Number(row.chainId),
      data: !options.dataFor || options.dataFor.includes(row.type) ? decodeEventData(row.type, row.data) : undefined,
    } as ConsumedEvent<T>;
  } catch (error) {
    options.onInvalid?.(row, error as Error);
    return undefined;
  }
}

/**
 * Moves the consumer's cursor up to the oldest transaction still running, or to the transaction of
 * its oldest pending event if that is older (a pending event holds the cursor, however old).
 * Both come from the statement's own snapshot: every transaction below its xmin has ended, so
 * every event it wrote is visible here, and no transaction below it can write again. Never moves
 * back. Answers the cursor.
 */
export async function settleCursor(db: Db, consumer: ConsumerName, types: readonly EventType[], now: Date): Promise<bigint> {
  // One process at a time (a lock for the statement's transaction): two that finish a burst
  // together would each scan it, where the second, after the first, finds the cursor past it.
  // The one that finds the lock taken answers the cursor as it stands.
  const { rows } = await db.sql.query<{ xid: string }>(
    `WITH lock AS (SELECT pg_try_advisory_xact_lock($4::int, hashtext($1)) AS "locked"),
      cursor AS (SELECT coalesce((SELECT "xid" FROM "ConsumerCursor" WHERE "consumer" = $1), 0) AS "xid"),
      settled AS (
        SELECT least(
          pg_snapshot_xmin(pg_current_snapshot())::text::bigint,
          (SELECT min(d."xid") FROM "DomainEvent" d, cursor
             WHERE d."xid" >= cursor."xid" AND d."type" = ANY($2::text[]) AND d."revertedAt" IS NULL
               AND NOT EXISTS (SELECT 1 FROM "ConsumedEvent" c WHERE c."consumer" = $1 AND c."eventId" = d."id"))) AS "xid"
          FROM lock WHERE lock."locked"),
      moved AS (
        INSERT INTO "ConsumerCursor" ("consumer", "xid", "updatedAt")
          SELECT $1, settled."xid", $3::timestamp(3) FROM settled
          ON CONFLICT ("consumer") DO UPDATE SET "xid" = greatest("ConsumerCursor"."xid", EXCLUDED."xid"), "updatedAt" = EXCLUDED."updatedAt"
          RETURNING "xid")
    SELECT coalesce((SELECT "xid" FROM moved), (SELECT "xid" FROM cursor))::text AS "xid"`,
    [consumer, types, now.toISOString(), SETTLE_LOCK_CLASS],
  );
  const cursor = BigInt(rows[0]!.xid);
  knownCursorsOf(db).set(consumer, cursor);
  return cursor;
}

/**
 * Takes the consumer's pending events in order (time, then key), each in its own transaction
 * with its ConsumedEvent row (or a page at a time with `applyBatch`), so a repeated or
 * concurrent run applies each once. An event whose apply throws stays pending (retried by the
 * next run) and the others go on: it is skipped for the rest of this run, so it cannot hold the
 * consumer in a loop either. Returns how many it applied.
 */
export async function consumeEvents<T extends EventType>(db: Db, options: ConsumeOptions<T>): Promise<number> {
  return (await consumeEventPages(db, options)).applied;
}

export interface ConsumeResult {
  /** Events this run applied. */
  applied: number;
  /** A partition was held by another process: events may be waiting there that this run could not take. */
  contended: boolean;
}

/** consumeEvents, also saying whether another process held a partition (a fan-out loop then keeps at it). */
export async function consumeEventPages<T extends EventType>(db: Db, options: ConsumeOptions<T>): Promise<ConsumeResult> {
  const batchSize = options.batchSize ?? 200;
  const logger = options.logger ?? defaultLogger();
  // A consumer's transactions: Prisma's, or plain SQL's for `applyBatchSql` (its statements the same raw ones).
  const viaSql = options.applyBatchSql !== undefined;
  const inTransaction = <R>(work: (tx: RawTx) => Promise<R>): Promise<R> =>
    viaSql ? db.sql.transaction((query) => work(rawTxOf(query))) : db.prisma.$transaction((tx) => work(tx));
  // Given a Prisma transaction (viaSql false), the handlers get it back as one.
  const applyBatch: ((tx: RawTx, events: ConsumedEvent<T>[]) => Promise<void>) | undefined =
    options.applyBatchSql ?? (options.applyBatch ? (tx, events) => options.applyBatch!(tx as Tx, events) : undefined);
  const apply: ((tx: RawTx, event: ConsumedEvent<T>) => Promise<void>) | undefined = options.apply
    ? (tx, event) => options.apply!(tx as Tx, event)
    : applyBatch
      ? (tx, event) => applyBatch(tx, [event])
      : undefined;
  if (!apply) throw new Error(`consumer ${options.consumer}: apply, applyBatch or applyBatchSql is required`);
  const paged = applyBatch !== undefined && !options.onlyIds;
  /** The events whose apply threw in this run: left pending, not read again until the next run. */
  const failed: string[] = [];
  let applied = 0;
  let contended = false;
  /** In insertion order, the last seq this run has read: the next page starts above it. */
  let after = 0n;
  const cursor = await cursorOf(db, options.consumer);

  /** One event in its own transaction; one whose apply throws is left pending, and skipped by the rest of this run. */
  async function applyOne(row: PendingRow<T>): Promise<void> {
    const event = decoded(row, options);
    let done: boolean;
    try {
      done = await inTransaction(async (tx) => {
        const count = await tx.$executeRaw`
          INSERT INTO "ConsumedEvent" ("consumer", "eventId", "consumedAt")
          VALUES (${options.consumer}, ${row.id}::uuid, ${options.now.toISOString()}::timestamp(3)) ON CONFLICT DO NOTHING`;
        if (count === 0) return false;
        if (event) {
          try {
            await apply!(tx, event);
          } catch (error) {
            throw new ApplyFailed(error);
          }
        }
        return true;
      });
    } catch (thrown) {
      if (!(thrown instanceof ApplyFailed)) throw thrown;
      failed.push(row.id);
      const { error } = thrown;
      logger.warn(
        { consumer: options.consumer, eventId: row.id, type: row.type, error: error instanceof Error ? error.message : String(error) },
        "event not applied; left for the next run",
      );
      return;
    }
    if (done && event) options.afterCommit?.(event);
    if (done) applied += 1;
  }

  /**
   * One page of a partition in one transaction under its page lock: the rows read, or "busy" when
   * another process holds it. Reading on, it starts where any process last read the partition to
   * (ConsumerPartition), and moves that on: processes that take turns at a partition's pages never
   * read again the pages another took.
   */
  async function applyPage(partition: { index: number; count: number }, top: bigint | undefined): Promise<PendingRow<T>[] | "busy"> {
    let taken: ConsumedEvent<T>[] = [];
    const key = `${partition.index}/${partition.count}`;
    const rows = await inTransaction(async (tx) => {
      // The lock, then (held) the partition's shared read-on point: one statement.
      const [lock] = await tx.$queryRaw<{ locked: boolean; readTo: string | null }[]>`
        SELECT l."locked", CASE WHEN l."locked" THEN (
            SELECT "readTo"::text FROM "ConsumerPartition" WHERE "consumer" = ${options.consumer} AND "partition" = ${key}) END AS "readTo"
          FROM (SELECT pg_try_advisory_xact_lock(${PAGE_LOCK_CLASS}::int, hashtext(${`${options.consumer}:${partition.index}`})) AS "locked") l`;
      if (!lock?.locked) return "busy" as const;
      const shared = lock.readTo === null ? 0n : BigInt(lock.readTo);
      if (rememberReads && after > 0n && shared > after) after = shared;
      const page = await readPending(tx, options, batchSize, failed, after, cursor, partition);
      if (rememberReads) {
        // A short page saw every visible event of the partition up to the top read before it.
        const last = page.length > 0 ? BigInt(page[page.length - 1]!.seq) : 0n;
        const readTo = page.length < batchSize && top !== undefined && top > last ? top : last;
        if (readTo > shared) {
          await tx.$executeRaw`
            INSERT INTO "ConsumerPartition" ("consumer", "partition", "readTo", "updatedAt")
              VALUES (${options.consumer}, ${key}, ${readTo}, ${options.now.toISOString()}::timestamp(3))
              ON CONFLICT ("consumer", "partition") DO UPDATE
                SET "readTo" = greatest("ConsumerPartition"."readTo", EXCLUDED."readTo"), "updatedAt" = EXCLUDED."updatedAt"`;
        }
      }
      const pending = page.filter((row) => !row.taken);
      if (pending.length === 0) return page;
      const marked = await tx.$queryRaw<{ eventId: string }[]>`
        INSERT INTO "ConsumedEvent" ("consumer", "eventId", "consumedAt")
        SELECT ${options.consumer}, id, ${options.now.toISOString()}::timestamp(3) FROM unnest(${pending.map((row) => row.id)}::uuid[]) AS id
        ON CONFLICT DO NOTHING RETURNING "eventId"::text AS "eventId"`;
      const mine = new Set(marked.map((row) => row.eventId));
      taken = pending.filter((row) => mine.has(row.id)).flatMap((row) => decoded(row, options) ?? []);
      try {
        if (taken.length > 0) await applyBatch!(tx, taken);
      } catch (error) {
        throw new ApplyFailed(error);
      }
      applied += mine.size;
      return page;
    });
    if (rows !== "busy") for (const event of taken) options.afterCommit?.(event);
    return rows;
  }

  /**
   * The pending events of a partition (all of them without `applyBatch`), page after page until
   * none is left or another process holds it. `top` is the outbox's highest seq, read before.
   */
  async function drain(partition: { index: number; count: number }, top: bigint | undefined) {
    const remembered = rememberReads ? rememberedOf(partition) : undefined;
    // From the cursor every REREAD_FROM_CURSOR_MS, but not while a backlog flows (this process's
    // last page of the partition was full: that read would scan the backlog), BACKLOG_DELAY_MAX_MS at most.
    const sinceFromCursor = remembered ? performance.now() - remembered.fromCursorAt : Number.POSITIVE_INFINITY;
    const fromCursor =
      !remembered || (sinceFromCursor >= REREAD_FROM_CURSOR_MS && (!remembered.full || sinceFromCursor >= BACKLOG_DELAY_MAX_MS));
    if (remembered && fromCursor) remembered.fromCursorAt = performance.now();
    // Read on to the top already, and no read from the cursor due: nothing to look at (an idle poll costs one statement per run).
    if (remembered && !fromCursor && top !== undefined && remembered.after >= top) return;
    after = fromCursor ? 0n : remembered.after;
    for (;;) {
      let rows: PendingRow<T>[] | "busy";
      if (paged) {
        try {
          rows = await applyPage(partition, top);
        } catch (thrown) {
          if (!(thrown instanceof ApplyFailed)) throw thrown;
          // The page again, event by event: the bad one is left pending, the others are taken.
          rows = await readPending(db.prisma, options, batchSize, failed, after, cursor, partition);
          for (const row of rows) if (!row.taken) await applyOne(row);
        }
        if (rows === "busy") {
          contended = true;
          return;
        }
        if (remembered) remembered.full = rows.length >= batchSize;
        if (remembered && rows.length > 0) remembered.after = BigInt(rows[rows.length - 1]!.seq);
        // A short page saw every visible event of the partition up to the top read before it: the
        // next reads go on from there, even when it found nothing (one that commits behind it is
        // the next read from the cursor's).
        if (remembered && top !== undefined && rows.length < batchSize && remembered.after < top) remembered.after = top;
      } else {
        rows = await readPending(db.prisma, options, batchSize, failed, after, cursor, partition);
        for (const row of rows) if (!row.taken) await applyOne(row);
      }
      if (options.order === "insertion" && rows.length > 0) after = BigInt(rows[rows.length - 1]!.seq);
      // A failed event is excluded from the next read: a full page means more may be pending.
      if (rows.length < batchSize) return;
    }
  }

  const rememberReads = paged && options.order === "insertion";
  function rememberedOf(partition: { index: number; count: number }) {
    const partitions = readUpTo.get(db) ?? new Map<string, Remembered>();
    readUpTo.set(db, partitions);
    const key = `${options.consumer}:${partition.index}/${partition.count}`;
    const remembered = partitions.get(key) ?? { after: 0n, fromCursorAt: Number.NEGATIVE_INFINITY, full: false };
    partitions.set(key, remembered);
    return remembered;
  }

  const count = paged ? Math.max(1, options.partitions ?? 1) : 1;
  // Each process starts at a partition of its own chance, so two of them seldom queue for one lock.
  const first = Math.floor(Math.random() * count);
  let top: bigint | undefined;
  if (rememberReads) {
    const { rows } = await db.sql.query<{ top: string }>(`SELECT coalesce(max("seq"), 0)::text AS "top" FROM "DomainEvent"`);
    top = BigInt(rows[0]?.top ?? 0);
  }
  for (let i = 0; i < count; i += 1) await drain({ index: (first + i) % count, count }, top);
  // Not while a backlog flows (this run took a full page's worth, or another process holds a
  // partition): the move would scan the backlog, and the run after it moves the cursor past it.
  const sinceSettled = performance.now() - (lastSettled.get(options.consumer) ?? 0);
  const backlog = contended || applied >= batchSize;
  if (!options.onlyIds && sinceSettled >= SETTLE_EVERY_MS && (!backlog || sinceSettled >= BACKLOG_DELAY_MAX_MS)) {
    lastSettled.set(options.consumer, performance.now());
    await settleCursor(db, options.consumer, options.types, options.now);
  }
  return { applied, contended };
}
