// Outbox consumers on the job queue (D-83). Each consumer has one cursor, a position (xid, seq) in
// the outbox: a producer turns the events of its types above the cursor into page jobs
// (`outbox.<consumer>`, their ids in the payload) and moves the cursor past them, in one
// transaction. The queue runs the pages: its claim, retries, dead jobs (`listDead`/`retryDead`),
// crash recovery and concurrency are the consumers' too. A page applies its events in the
// transaction that marks them taken (ConsumedEvent), so a page run twice, or an event an API
// write took at once (`take`), is applied once.
//
// The cursor is exact: a producer reads only events of transactions below the oldest one still
// running (the xmin of its statement's snapshot), all of them visible and none able to appear any
// more, in (xid, seq) order, so nothing can land behind the cursor. A reorg deletes the events of
// removed blocks that no consumer has taken; those already taken are kept, marked `revertedAt`,
// and no other consumer takes them. A fact back after a rollback takes a new xid and seq: above
// every cursor again.

import type { Logger } from "../../core/logger.js";
import { jsonForPostgres } from "../../core/text.js";
import { Prisma } from "../../generated/prisma/client.js";
import { type Db, plainTransaction, type RawTx, type Tx } from "../db.js";
import type { JobQueue } from "../jobs/queue.js";
import type { JobKind } from "../jobs/runner.js";
import type { ConsumerName } from "../modules.js";
import { decodeEventData, type EventData, type EventType } from "./catalogue.js";

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

/** What a consumer does with its events; the engine reads, pages, marks and retries. */
export interface OutboxConsumer<T extends EventType = EventType> {
  name: ConsumerName;
  types: readonly T[];
  /** Events per page job (default 200): a page is one transaction. */
  pageSize?: number;
  /**
   * Its page jobs running at once, across processes (default 1: pages are applied in the
   * outbox's order, one after the other).
   */
  concurrency?: number;
  /**
   * Reads and decodes the data of these types only (default: every type's). The others come with
   * `data` undefined: for a consumer that reads what it needs of them later, by id.
   */
  dataFor?: readonly T[];
  /** Applies a page (or, after the page failed, one of its events) in the transaction that marks them taken. */
  apply?(tx: Tx, events: ConsumedEvent<T>[], now: Date): Promise<void>;
  /**
   * `apply` in a transaction of plain SQL (`db.sql`) with its raw statements only: for a page of
   * large parameters and results (webhooks), where Prisma's client costs about twice the driver's.
   */
  applySql?(tx: RawTx, events: ConsumedEvent<T>[], now: Date): Promise<void>;
  /**
   * Takes back what `apply` did for facts a reorganisation removed, in the transaction that takes
   * their `chain.fact_reverted` (D-94). The engine gives it only the facts this consumer applied
   * and that are still reverted, and forgets that it took them: a fact that comes back is applied
   * again, once.
   */
  revert?(tx: Tx, facts: ConsumedEvent<T>[], now: Date): Promise<void>;
  /** After the commit of events it applied or reverted (dropping a cache, waking this process's runners). */
  afterCommit?(events: ConsumedEvent<T>[]): void;
}

/** The types a consumer takes: its own, and the reverts of chain facts when it takes those back. */
const typesOf = (consumer: OutboxConsumer): readonly string[] =>
  consumer.revert ? [...consumer.types, "chain.fact_reverted"] : consumer.types;

/** A page job's payload: the events' ids, in the outbox's order. */
export interface PagePayload {
  ids: string[];
}

export const pageJobKind = (consumer: ConsumerName) => `outbox.${consumer}`;
/** Events per page job unless the consumer says otherwise: one transaction, which commits in well under a second. */
const DEFAULT_PAGE_SIZE = 200;

/** An apply's own failure, told apart from the database's. */
class ApplyFailed extends Error {
  constructor(
    readonly error: unknown,
    readonly events: readonly { type: string }[],
  ) {
    super("apply failed");
  }
}

type EventRow = Omit<ConsumedEvent, "data"> & { data: unknown };

export interface TakeResult {
  /** Events this call applied (those taken before are skipped). */
  applied: number;
  /** Events whose apply threw: left untaken. */
  failed: { id: string; type: string; error: string }[];
}

/** The advisory lock a consumer's pages share and an adoption holds alone (`adopt`). */
const adoptionLockOf = (consumer: string) => `outbox adoption ${consumer}`;

export function createOutbox({ db, jobs, logger }: { db: Db; jobs: Pick<JobQueue, "enqueue" | "wake">; logger: Pick<Logger, "warn"> }) {
  const inTransaction = <R>(sql: boolean, work: (tx: RawTx) => Promise<R>): Promise<R> =>
    sql ? plainTransaction(db, work) : db.prisma.$transaction((tx) => work(tx));

  /** The events decoded by the catalogue; one whose stored data no longer matches it is taken without effect, and said. */
  function decoded<T extends EventType>(consumer: OutboxConsumer<T>, rows: EventRow[]): ConsumedEvent<T>[] {
    return rows.flatMap((row) => {
      try {
        const data = !consumer.dataFor || consumer.dataFor.includes(row.type as T) ? decodeEventData(row.type, row.data) : undefined;
        return [{ ...row, data } as ConsumedEvent<T>];
      } catch (error) {
        logger.warn(
          { consumer: consumer.name, eventId: row.id, type: row.type, error: (error as Error).message },
          "event data does not match the catalogue; skipped",
        );
        return [];
      }
    });
  }

  /**
   * The facts named by these `chain.fact_reverted` events that the consumer took and that are
   * still reverted, read in the statement that forgets it took them (a fact back meanwhile keeps
   * its marker: nothing to take back, nothing to take again).
   */
  async function forgetReverted<T extends EventType>(tx: RawTx, consumer: OutboxConsumer<T>, revertIds: readonly string[]) {
    const rows = await tx.$queryRaw<EventRow[]>`
      WITH undone AS (
        DELETE FROM "ConsumedEvent" c USING "DomainEvent" r, "DomainEvent" d
         WHERE r."id" = ANY(${revertIds}::uuid[]) AND d."id" = (r."data"->>'eventId')::uuid AND d."revertedAt" IS NOT NULL
           AND c."consumer" = ${consumer.name} AND c."eventId" = d."id"
        RETURNING c."eventId")
      SELECT d."id", d."seq", d."type", d."userId", (u."id" IS NOT NULL AND u."deletedAt" IS NULL) AS "userActive", d."chainId",
          d."createdAt", d."data"
        FROM undone m JOIN "DomainEvent" d ON d."id" = m."eventId" LEFT JOIN "User" u ON u."id" = d."userId"
        ORDER BY d."xid", d."seq"`;
    return decoded({ ...consumer, dataFor: undefined }, rows);
  }

  /**
   * Marks the events of `ids` not taken yet and applies them (the reverts among them: takes back
   * their facts), in one transaction; answers the events applied and the facts taken back.
   */
  async function applyMarked<T extends EventType>(
    consumer: OutboxConsumer<T>,
    ids: readonly string[],
    now: Date,
  ): Promise<{ events: ConsumedEvent<T>[]; reverted: ConsumedEvent<T>[] }> {
    const data = consumer.dataFor
      ? Prisma.sql`CASE WHEN d."type" = ANY(${consumer.dataFor}::text[]) THEN d."data" END`
      : Prisma.sql`d."data"`;
    return inTransaction(consumer.applySql !== undefined, async (tx) => {
      // Shared by the consumer's pages, exclusive to an adoption (`adopt`), which must see the
      // markers of the pages in flight; taken before the marking statement, whose snapshot then
      // follows an adoption that held it.
      await tx.$executeRaw`SELECT 1 FROM pg_advisory_xact_lock_shared(hashtext(${adoptionLockOf(consumer.name)}))`;
      // One statement marks what no one took yet and reads it: a page run twice, or beside an API
      // write that took its own event, applies each event once.
      const rows = await tx.$queryRaw<EventRow[]>`
        WITH marked AS (
          INSERT INTO "ConsumedEvent" ("consumer", "eventId", "consumedAt")
          SELECT ${consumer.name}, d."id", ${now.toISOString()}::timestamp(3) FROM "DomainEvent" d
            WHERE d."id" = ANY(${ids}::uuid[]) AND d."type" = ANY(${typesOf(consumer)}::text[]) AND d."revertedAt" IS NULL
          ON CONFLICT DO NOTHING RETURNING "eventId")
        SELECT d."id", d."seq", d."type", d."userId", (u."id" IS NOT NULL AND u."deletedAt" IS NULL) AS "userActive", d."chainId",
            d."createdAt", ${data} AS "data"
          FROM marked m JOIN "DomainEvent" d ON d."id" = m."eventId" LEFT JOIN "User" u ON u."id" = d."userId"
          ORDER BY d."xid", d."seq"`;
      const taken = decoded(consumer, rows);
      // Only a consumer that takes facts back reads reverts this way (webhooks apply theirs as events).
      const reverts = consumer.revert ? taken.filter((event) => (event.type as EventType) === "chain.fact_reverted") : [];
      const events = reverts.length === 0 ? taken : taken.filter((event) => !reverts.includes(event));
      const reverted =
        reverts.length === 0
          ? []
          : await forgetReverted(
              tx,
              consumer,
              reverts.map((event) => event.id),
            );
      try {
        if (events.length > 0) {
          if (consumer.applySql) await consumer.applySql(tx, events, now);
          else await consumer.apply!(tx as Tx, events, now);
        }
        if (reverted.length > 0) await consumer.revert!(tx as Tx, reverted, now);
      } catch (error) {
        throw new ApplyFailed(error, [...events, ...reverted]);
      }
      return { events, reverted };
    });
  }

  /**
   * Takes the events of `ids` not taken yet: in one transaction, or, when that throws, each in
   * its own, so one bad event leaves the others taken. Never throws for an apply's failure: it
   * answers the events that failed (a page job then fails, and the queue tries again later).
   */
  async function take<T extends EventType>(consumer: OutboxConsumer<T>, ids: readonly string[], now: Date): Promise<TakeResult> {
    const result: TakeResult = { applied: 0, failed: [] };
    /** Applies a batch; answers its failure, if its apply threw. */
    const attempt = async (batch: readonly string[]): Promise<ApplyFailed | undefined> => {
      try {
        const { events, reverted } = await applyMarked(consumer, batch, now);
        result.applied += events.length;
        if (events.length + reverted.length > 0) consumer.afterCommit?.([...events, ...reverted]);
        return undefined;
      } catch (thrown) {
        if (thrown instanceof ApplyFailed) return thrown;
        throw thrown;
      }
    };
    if (ids.length === 0) return result;
    const whole = await attempt(ids);
    if (!whole) return result;
    // The page again, event by event: the bad one is left untaken, the others are taken.
    for (const id of ids) {
      const failure = ids.length === 1 ? whole : await attempt([id]);
      if (!failure) continue;
      const error = failure.error instanceof Error ? failure.error.message : String(failure.error);
      result.failed.push({ id, type: failure.events[0]?.type ?? "unknown", error });
    }
    if (result.failed.length > 0) logger.warn({ consumer: consumer.name, failed: result.failed }, "events not applied; left untaken");
    return result;
  }

  /**
   * Turns the consumer's events above its cursor into page jobs, a page per transaction, while
   * pages come full. One process at a time per consumer (the cursor's row lock; another that
   * finds it held passes). Answers the pages it queued, each the ids of its events.
   */
  async function produce(consumer: OutboxConsumer, now: Date): Promise<string[][]> {
    const pageSize = consumer.pageSize ?? DEFAULT_PAGE_SIZE;
    const pages: string[][] = [];
    for (;;) {
      const page = await plainTransaction(db, async (tx) => {
        const at = now.toISOString();
        await tx.$executeRaw`INSERT INTO "ConsumerCursor" ("consumer", "updatedAt") VALUES (${consumer.name}, ${at}::timestamp(3)) ON CONFLICT DO NOTHING`;
        const [cursor] = await tx.$queryRaw<{ xid: bigint; seq: bigint }[]>`
          SELECT "xid", "seq" FROM "ConsumerCursor" WHERE "consumer" = ${consumer.name} FOR UPDATE SKIP LOCKED`;
        if (!cursor) return [];
        // Only transactions that ended: every event below the snapshot's xmin is visible, and no
        // transaction below it can write again.
        const rows = await tx.$queryRaw<{ id: string; xid: bigint; seq: bigint }[]>`
          SELECT d."id", d."xid", d."seq" FROM "DomainEvent" d
            WHERE d."type" = ANY(${typesOf(consumer)}::text[]) AND d."revertedAt" IS NULL
              AND d."xid" >= ${cursor.xid}::bigint AND (d."xid", d."seq") > (${cursor.xid}::bigint, ${cursor.seq}::bigint)
              AND d."xid" < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
            ORDER BY d."xid", d."seq" LIMIT ${pageSize}::int`;
        if (rows.length === 0) return rows;
        const last = rows[rows.length - 1]!;
        await jobs.enqueue<PagePayload>(
          {
            kind: pageJobKind(consumer.name),
            payload: { ids: rows.map((row) => row.id) },
            // A position is never produced twice: a seq is unique, and a fact back after a rollback takes a new one.
            dedupeKey: `outbox:${consumer.name}:${rows[0]!.seq}`,
            concurrency: { key: pageJobKind(consumer.name), limit: consumer.concurrency ?? 1 },
          },
          tx,
        );
        await tx.$executeRaw`
          UPDATE "ConsumerCursor" SET "xid" = ${last.xid}::bigint, "seq" = ${last.seq}::bigint, "updatedAt" = ${at}::timestamp(3)
            WHERE "consumer" = ${consumer.name}`;
        return rows;
      });
      if (page.length > 0) pages.push(page.map((row) => row.id));
      if (page.length < pageSize) break;
    }
    if (pages.length > 0) jobs.wake();
    return pages;
  }

  /** The consumers with events above their cursor to produce: one statement for all of them (an idle poll). */
  async function pending(consumers: readonly OutboxConsumer[]): Promise<OutboxConsumer[]> {
    const wanted = jsonForPostgres(consumers.map((consumer) => ({ consumer: consumer.name, types: typesOf(consumer) })));
    const rows = await db.plain.$queryRaw<{ consumer: string }[]>`
      SELECT v."consumer" FROM json_to_recordset(${wanted}::json) AS v ("consumer" text, "types" text[])
        LEFT JOIN "ConsumerCursor" c ON c."consumer" = v."consumer"
        WHERE EXISTS (SELECT 1 FROM "DomainEvent" d
          WHERE d."type" = ANY(v."types") AND d."revertedAt" IS NULL
            AND d."xid" >= coalesce(c."xid", 0) AND (d."xid", d."seq") > (coalesce(c."xid", 0), coalesce(c."seq", 0))
            AND d."xid" < pg_snapshot_xmin(pg_current_snapshot())::text::bigint)`;
    const names = new Set(rows.map((row) => row.consumer));
    return consumers.filter((consumer) => names.has(consumer.name));
  }

  /**
   * The facts of `wallet` (its `walletAddress`) that no account had when they were derived, made
   * `userId`'s (a wallet that signs in after using the platform's contracts itself: D-119), and
   * left untaken again by `consumers`, which skipped them then, so that `take` applies them once.
   * Each consumer's pages of them are queued in the same transaction: a process that stops before
   * it takes them leaves them to the queue, not lost. It waits for the consumers' pages in flight,
   * which may be marking these very facts as taken without an account. Answers their ids in outbox order.
   */
  async function adopt(input: { userId: string; wallet: string; consumers: readonly OutboxConsumer[] }): Promise<string[]> {
    const types = [...new Set(input.consumers.flatMap((consumer) => typesOf(consumer)))];
    const names = input.consumers.map((consumer) => consumer.name);
    const rows = await plainTransaction(db, async (tx) => {
      // The consumers' pages in flight end first (their markers are then seen and forgotten); those that follow see the account.
      for (const name of [...names].sort()) await tx.$executeRaw`SELECT 1 FROM pg_advisory_xact_lock(hashtext(${adoptionLockOf(name)}))`;
      const adopted = await tx.$queryRaw<{ id: string; type: string }[]>`
        WITH adopted AS (
          UPDATE "DomainEvent" SET "userId" = ${input.userId}
           WHERE "userId" IS NULL AND "revertedAt" IS NULL AND "type" = ANY(${types}::text[])
             AND lower("data"->>'walletAddress') = ${input.wallet.toLowerCase()}
          RETURNING "id", "type", "xid", "seq"),
        forgotten AS (
          DELETE FROM "ConsumedEvent" WHERE "consumer" = ANY(${names}::text[]) AND "eventId" IN (SELECT "id" FROM adopted))
        SELECT "id"::text, "type" FROM adopted ORDER BY "xid", "seq"`;
      for (const consumer of input.consumers) {
        const wanted = new Set(typesOf(consumer));
        const ids = adopted.filter((row) => wanted.has(row.type)).map((row) => row.id);
        const pageSize = consumer.pageSize ?? DEFAULT_PAGE_SIZE;
        for (let at = 0; at < ids.length; at += pageSize) {
          const page = ids.slice(at, at + pageSize);
          await jobs.enqueue<PagePayload>(
            {
              kind: pageJobKind(consumer.name),
              payload: { ids: page },
              // An event is adopted once (its userId is set): its page is queued once.
              dedupeKey: `outbox:${consumer.name}:adopted:${page[0]}`,
              concurrency: { key: pageJobKind(consumer.name), limit: consumer.concurrency ?? 1 },
            },
            tx,
          );
        }
      }
      return adopted;
    });
    if (rows.length > 0) jobs.wake();
    return rows.map((row) => row.id);
  }

  return {
    take,
    produce,
    pending,
    adopt,
    /**
     * Produces the consumer's pages and takes them at once, rather than through a runner (whose
     * jobs then find them taken): for a process without workers (tests, a script). Pages produced
     * before are left to their jobs. Answers how many events it applied.
     */
    async drain(consumer: OutboxConsumer, now: Date): Promise<number> {
      let applied = 0;
      for (const ids of await produce(consumer, now)) applied += (await take(consumer, ids, now)).applied;
      return applied;
    },
    /** The queue handlers of the consumers' page jobs: a page with an event that failed fails, and is tried again (dead after its attempts). */
    handlers(consumers: readonly OutboxConsumer[], clock: { now(): Date }): Record<string, JobKind> {
      return Object.fromEntries(
        consumers.map((consumer) => [
          pageJobKind(consumer.name),
          async ({ ids }: PagePayload) => {
            const { failed } = await take(consumer, ids, clock.now());
            if (failed.length > 0)
              throw new Error(`events not applied: ${failed.map((event) => `${event.id} (${event.type}): ${event.error}`).join("; ")}`);
          },
        ]),
      );
    },
  };
}

export type Outbox = ReturnType<typeof createOutbox>;
