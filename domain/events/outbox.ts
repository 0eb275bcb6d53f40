import { randomUUID } from "node:crypto";
import type { Prisma } from "../../generated/prisma/client.js";
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
  const { count } = await tx.domainEvent.createMany({
    data: events.map((event) => ({
      id: randomUUID(),
      type: event.type,
      userId: event.userId,
      data: encodeEventData(event.type, event.data) as Prisma.InputJsonValue,
      dedupeKey: event.dedupeKey,
      createdAt: event.now,
    })),
    skipDuplicates: true,
  });
  return count;
}
