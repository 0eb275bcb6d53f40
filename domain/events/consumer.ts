// Delivery state per consumer: each consumer (rewards now; notifications and webhooks next)
// takes every event of its types exactly once, in its own order and at its own pace, and marks
// it with a ConsumedEvent row in the same transaction as its effects. A reorg deletes the events
// of removed blocks that no consumer has taken yet; those already taken are kept, marked
// `revertedAt`, and no other consumer takes them afterwards. An event whose apply throws is left
// untaken for the next run, and the run goes on with the others: one bad event blocks nothing.
import { createLogger, type Logger } from "../../core/logger.js";
import type { Db, Tx } from "../db.js";
import { decodeEventData, type EventData, type EventType } from "./catalogue.js";

/** The consumers of the outbox. A name is stored with each event a consumer took: never rename one without a migration. */
export const CONSUMERS = ["rewards", "trust-score", "guardian-alerts", "notifications", "webhooks"] as const;
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
  apply(tx: Tx, event: ConsumedEvent<T>): Promise<void>;
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
  /** Takes only these events (a request that waits for the effects of its own transaction). */
  onlyIds?: readonly string[];
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

/**
 * Takes the consumer's pending events in order (time, then key), each in its own transaction
 * with its ConsumedEvent row, so a repeated or concurrent run applies each once. An event whose
 * apply throws stays pending (retried by the next run) and the others go on: it is skipped for
 * the rest of this run, so it cannot hold the consumer in a loop either. Returns how many it
 * applied.
 */
export async function consumeEvents<T extends EventType>(db: Db, options: ConsumeOptions<T>): Promise<number> {
  const batchSize = options.batchSize ?? 200;
  const logger = options.logger ?? defaultLogger();
  /** The events whose apply threw in this run: left pending, not read again until the next run. */
  const failed: string[] = [];
  let applied = 0;
  for (;;) {
    const rows = await db.prisma.$queryRawUnsafe<
      { id: string; type: T; userId: string | null; userActive: boolean; chainId: number | null; createdAt: Date; data: unknown }[]
    >(
      `SELECT d."id"::text AS "id", d."type", d."userId", (u."id" IS NOT NULL AND u."deletedAt" IS NULL) AS "userActive",
          d."chainId", d."createdAt", d."data"
        FROM "DomainEvent" d LEFT JOIN "User" u ON u."id" = d."userId"
        WHERE d."type" = ANY($1::text[]) AND d."revertedAt" IS NULL
          AND NOT EXISTS (SELECT 1 FROM "ConsumedEvent" c WHERE c."consumer" = $2 AND c."eventId" = d."id")
          AND d."id" <> ALL($4::uuid[])
          ${options.onlyIds ? `AND d."id" = ANY($5::uuid[])` : ""}
        ORDER BY d."createdAt", d."blockNumber" NULLS FIRST, d."dedupeKey" LIMIT $3`,
      options.types,
      options.consumer,
      batchSize,
      failed,
      ...(options.onlyIds ? [options.onlyIds] : []),
    );
    if (rows.length === 0) return applied;
    for (const row of rows) {
      let event: ConsumedEvent<T> | undefined;
      try {
        event = {
          ...row,
          chainId: row.chainId === null ? null : Number(row.chainId),
          data: decodeEventData(row.type, row.data),
        } as ConsumedEvent<T>;
      } catch (error) {
        options.onInvalid?.(row, error as Error);
      }
      let done: boolean;
      try {
        done = await db.prisma.$transaction(async (tx) => {
          const count = await tx.$executeRaw`
            INSERT INTO "ConsumedEvent" ("consumer", "eventId", "consumedAt")
            VALUES (${options.consumer}, ${row.id}::uuid, ${options.now.toISOString()}::timestamp(3)) ON CONFLICT DO NOTHING`;
          if (count === 0) return false;
          if (event) {
            try {
              await options.apply(tx, event);
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
        continue;
      }
      if (done && event) options.afterCommit?.(event);
      if (done) applied += 1;
    }
    // A failed event is excluded from the next read: a full batch means more may be pending.
    if (rows.length < batchSize) return applied;
  }
}
