// Deliveries of domain events to webhooks, on the job queue (domain/jobs/): the outbox consumer
// `webhooks` only fans out (in the transaction that takes the events, `webhook.delivery` jobs of up
// to MAX_ITEMS_PER_JOB events for one subscribed webhook, or the events join its batch still
// waiting for a slot), and the job makes each event's attempts: at 0, 1 min, 5 min, 30 min,
// 2 h and 24 h on the service clock (part 6), a 429 or 503's Retry-After honoured where it asks
// for longer. After the sixth failed attempt the webhook is `failing`.
//
// Who receives what: an event concerning a user goes to that user's webhooks subscribed to its
// name; vault.yield_distributed (everyone's) to every webhook subscribed to it. A lock
// (`social_vault.locked`) goes to the owner's webhooks, the owner's own server-side integrations
// (the lock's answer already told the caller; the owner's feed, devices and e-mail hear nothing of
// it, as it may be a duress lock), and, under the same name, to the webhooks of the vault's
// guardians who are users, from their silent alert (social_vault.guardian_alert). While a webhook is `failing`, no new event is queued for
// it and its queued deliveries end without an attempt; PATCH status active revives it.
//
// Reorgs: a chain fact reaches the outbox once its block has CONFIRMATIONS (the indexer follows
// head - CONFIRMATIONS), so it is never sent earlier. When a deeper reorg removes a fact, the
// indexer writes chain.fact_reverted; each webhook to which an attempt of the fact was made (the
// receiver may have acted on it, even on an attempt whose answer was lost) receives
// `<event>.reverted`, whose data is the original payload (its id among it). A fact that comes back
// in the new branch (chain.fact_restored) is sent again, with its original id, to each webhook
// that was told `.reverted`. Both wait REORG_FOLLOW_UP_DELAY_MS, so an attempt in flight at the
// revert is logged first; an attempt of a fact that is reverted by then is not made.
//
// The fan-out is fan-out.ts, the attempts attempt.ts, what both share delivery-items.ts.
import { createWebhookAttempts } from "./attempt.js";
import type { WebhookDeliveriesDeps } from "./delivery-items.js";
import { createWebhookFanOut } from "./fan-out.js";

export {
  type DeliveryJobPayload,
  REORG_FOLLOW_UP_DELAY_MS,
  WEBHOOK_CONCURRENCY,
  WEBHOOK_RETRY_DELAYS_MS,
  type WebhookDeliveriesDeps,
} from "./delivery-items.js";

export function createWebhookDeliveries(deps: WebhookDeliveriesDeps) {
  return { ...createWebhookFanOut(deps), ...createWebhookAttempts(deps) };
}

export type WebhookDeliveries = ReturnType<typeof createWebhookDeliveries>;
