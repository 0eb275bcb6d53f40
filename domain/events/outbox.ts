import { randomUUID } from "node:crypto";
import { jsonForPostgres } from "../../core/text.js";
import type { Tx } from "../db.js";
import { type EventData, type EventType, encodeEventData } from "./catalogue.js";

/** A domain service's event; chain facts are written by the indexer through the same catalogue. */
export interface NewDomainEvent<T extends EventType = EventType> {
  type: T;
  userId: string;
  data: EventData<T>;
  /** Same key, same fact: recording it twice keeps one event. */
  dedupeKey: string;
  now: Date;
}

/** Builds an event with its type checked against its data. */
export const domainEvent = <T extends EventType>(event: NewDomainEvent<T>): NewDomainEvent => event as unknown as NewDomainEvent;

/**
 * Records events in the outbox inside the caller's transaction, so an event exists exactly
 * when its change committed. The data is validated and encoded by the catalogue. The id (a
 * UUID) is the future webhook payload id, which receivers use to drop repeated deliveries.
 * Returns how many were new.
 */
export async function recordEvents(tx: Tx, events: NewDomainEvent[]): Promise<number> {
  if (events.length === 0) return 0;
  // One statement of one JSON parameter, in the caller's transaction: a service's events go in
  // as its change does, and a page of them costs a fraction of Prisma's createMany (its rows'
  // fields are each a parameter). Their seq follows the order given.
  const rows = jsonForPostgres(
    events.map((event) => ({
      id: randomUUID(),
      type: event.type,
      userId: event.userId,
      data: encodeEventData(event.type, event.data),
      dedupeKey: event.dedupeKey,
      createdAt: event.now.toISOString(),
    })),
  );
  return tx.$executeRaw`
    INSERT INTO "DomainEvent" ("id", "type", "userId", "data", "dedupeKey", "createdAt")
    SELECT v."id", v."type", v."userId", v."data", v."dedupeKey", v."createdAt"
      FROM ROWS FROM (json_to_recordset(${rows}::json)
          AS ("id" uuid, "type" text, "userId" text, "data" jsonb, "dedupeKey" text, "createdAt" timestamp(3)))
        WITH ORDINALITY AS v ("id", "type", "userId", "data", "dedupeKey", "createdAt", "n")
      ORDER BY v."n"
    ON CONFLICT DO NOTHING`;
}
