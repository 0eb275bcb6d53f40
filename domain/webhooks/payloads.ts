// What a webhook receives of a domain event: which outbox events are delivered, under which
// part 6 name, and the payload {id, event, timestamp, data} (data: the catalogue's public fields).
import { type EventType, publicData } from "../events/catalogue.js";
import type { DeliveryEvent, WebhookEvent } from "./events.js";

/** The payload of every delivery (part 6): `id` is the event's, the same in every attempt. */
export interface WebhookPayload {
  id: string;
  event: DeliveryEvent;
  timestamp: string;
  /** Only on a test delivery. */
  test?: true;
  data: Record<string, unknown>;
}

/** The payload's data: the catalogue's public fields (a guardian's alert as part 6's social_vault.locked). */
function dataOf(type: EventType, stored: unknown): Record<string, unknown> {
  const data = publicData(type, stored);
  if (type !== "social_vault.guardian_alert") return data;
  return { vaultOwner: data.vaultOwner, vaultAddress: data.vaultAddress, lockedAt: data.lockedAt };
}

/** What a payload is built from: an outbox event as the repository reads it. */
type OutboxEvent = { id: string; type: EventType; createdAt: Date; data: unknown };

/** The payload of an outbox event under the name it is delivered as. */
export function payloadOfEvent(event: OutboxEvent, name: DeliveryEvent): WebhookPayload {
  return { id: event.id, event: name, timestamp: event.createdAt.toISOString(), data: dataOf(event.type, event.data) };
}

/**
 * What a webhook receives when a reorg removed a fact it was sent: `<name>.reverted`, with an id of
 * its own (receivers de-duplicate by id) and, as data, the original payload, its id among it.
 */
export function revertedPayload(revert: { id: string; revertedAt: string }, fact: OutboxEvent, name: WebhookEvent): WebhookPayload {
  return { id: revert.id, event: `${name}.reverted`, timestamp: revert.revertedAt, data: { ...payloadOfEvent(fact, name) } };
}
