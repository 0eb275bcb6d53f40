// Delivery state per consumer: each consumer (rewards now; notifications and webhooks next)
// takes every event of its types exactly once, in its own order and at its own pace, and marks
// it with a ConsumedEvent row in the same transaction as its effects. A reorg deletes the events
// of removed blocks that no consumer has taken yet; those already taken are kept, marked
// `revertedAt`, and no other consumer takes them afterwards.
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
  /** Applies one event inside the transaction that marks it taken; throwing rolls both back. */
  apply(tx: Tx, event: ConsumedEvent<T>): Promise<void>;
  /** After the commit of one event (e.g. dropping a cache). */
  afterCommit?(event: ConsumedEvent<T>): void;
  /**
   * An event whose stored data does not match the catalogue (written by an older version): it is
   * taken without effect, so one bad row never stops the consumer, and reported here.
   */
  onInvalid?(event: { id: string; type: string }, error: Error): void;
  batchSize?: number;
  /** Takes only these events (a request that waits for the effects of its own transaction). */
  onlyIds?: readonly string[];
}

/**
 * Takes the consumer's pending events in order (time, then key), each in its own transaction
 * with its ConsumedEvent row, so a repeated or concurrent run applies each once. Returns how
 * many it applied.
 */
export async function consumeEvents<T extends EventType>(db: Db, options: ConsumeOptions<T>): Promise<number> {
  const batchSize = options.batchSize ?? 200;
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
          ${options.onlyIds ? `AND d."id" = ANY($4::uuid[])` : ""}
        ORDER BY d."createdAt", d."blockNumber" NULLS FIRST, d."dedupeKey" LIMIT $3`,
      options.types,
      options.consumer,
      batchSize,
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
      const done = await db.prisma.$transaction(async (tx) => {
        const count = await tx.$executeRaw`
          INSERT INTO "ConsumedEvent" ("consumer", "eventId", "consumedAt")
          VALUES (${options.consumer}, ${row.id}::uuid, ${options.now.toISOString()}::timestamp(3)) ON CONFLICT DO NOTHING`;
        if (count === 0) return false;
        if (event) await options.apply(tx, event);
        return true;
      });
      if (done && event) options.afterCommit?.(event);
      if (done) applied += 1;
    }
    if (rows.length < batchSize) return applied;
  }
}
