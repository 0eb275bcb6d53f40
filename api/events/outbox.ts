import { randomUUID } from "node:crypto";
import type { Prisma } from "../../generated/prisma/client.js";

/** A transaction (or the client) of the database that holds the outbox. */
export type Tx = Prisma.TransactionClient;

/** Event names recorded by the API's domains (service-spec part 6, plus user.badge_earned). */
export type DomainEventType = "user.level_up" | "user.badge_earned" | "trust_score.updated" | "user.trust_score_updated";

export interface NewDomainEvent {
  type: DomainEventType;
  userId: string;
  data: Record<string, unknown>;
  /** Same key, same fact: recording it twice keeps one event. */
  dedupeKey: string;
  now: Date;
}

/**
 * Records events in the outbox inside the caller's transaction, so an event exists exactly
 * when its change committed. The id (a UUID) is the future webhook payload id, which
 * receivers use to drop repeated deliveries. Returns how many were new.
 */
export async function recordEvents(tx: Tx, events: NewDomainEvent[]): Promise<number> {
  if (events.length === 0) return 0;
  const { count } = await tx.domainEvent.createMany({
    data: events.map((event) => ({
      id: randomUUID(),
      type: event.type,
      userId: event.userId,
      data: event.data as Prisma.InputJsonValue,
      dedupeKey: event.dedupeKey,
      createdAt: event.now,
    })),
    skipDuplicates: true,
  });
  return count;
}
