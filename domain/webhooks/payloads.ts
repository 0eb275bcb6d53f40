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

/** The outbox's event types a webhook hears, and the name each is delivered under. */
export const DELIVERED_AS = {
  "loan.created": "loan.created",
  "loan.funded": "loan.funded",
  "loan.repaid": "loan.repaid",
  "loan.partial_payment": "loan.partial_payment",
  "loan.overdue": "loan.overdue",
  "loan.defaulted": "loan.defaulted",
  "vault.deposit": "vault.deposit",
  "vault.withdraw": "vault.withdraw",
  "vault.yield_distributed": "vault.yield_distributed",
  "social_vault.withdrawal_requested": "social_vault.withdrawal_requested",
  "social_vault.withdrawal_approved": "social_vault.withdrawal_approved",
  "social_vault.withdrawal_executed": "social_vault.withdrawal_executed",
  // The owner's lock (the chain fact, to the owner's webhooks), and each guardian's silent alert of it.
  "social_vault.locked": "social_vault.locked",
  "social_vault.guardian_alert": "social_vault.locked",
  "user.trust_score_updated": "user.trust_score_updated",
  "user.level_up": "user.level_up",
  "user.guardian_added": "user.guardian_added",
  "trust_score.updated": "trust_score.updated",
  // The merchant's payment events (the payments consumer writes them with the merchant's metadata).
  "payment.success": "payment.success",
  "payment.failed": "payment.failed",
  "payment.refunded": "payment.refunded",
} as const satisfies Partial<Record<EventType, WebhookEvent>>;
export type DeliveredType = keyof typeof DELIVERED_AS;
export const DELIVERED_TYPES = Object.keys(DELIVERED_AS) as DeliveredType[];
export const isDeliveredType = (type: string): type is DeliveredType => Object.hasOwn(DELIVERED_AS, type);
/** Events of no user: every subscriber hears them. */
export const EVERYONES: WebhookEvent[] = ["vault.yield_distributed"];

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
