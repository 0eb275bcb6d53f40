// The event names a webhook may subscribe to: service-spec part 6's list, every group.
export const WEBHOOK_EVENTS = [
  "loan.created",
  "loan.funded",
  "loan.repaid",
  "loan.partial_payment",
  "loan.overdue",
  "loan.defaulted",
  "vault.deposit",
  "vault.withdraw",
  "vault.yield_distributed",
  "social_vault.withdrawal_requested",
  "social_vault.withdrawal_approved",
  "social_vault.withdrawal_executed",
  "social_vault.locked",
  "user.trust_score_updated",
  "user.level_up",
  "user.guardian_added",
  "trust_score.updated",
  "payment.success",
  "payment.failed",
  "payment.refunded",
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

const known = new Set<string>(WEBHOOK_EVENTS);
export const isWebhookEvent = (name: string): name is WebhookEvent => known.has(name);

/** What a webhook receives when a reorg removed a fact it was sent: `<name>.reverted` (deliveries.ts). */
export type RevertedWebhookEvent = `${WebhookEvent}.reverted`;
/** A delivery's name, its payload's `event`: an event name, or a reorg's follow-up of one. */
export type DeliveryEvent = WebhookEvent | RevertedWebhookEvent;

const REVERTED = ".reverted";
/** The event name a reorg's follow-up takes back (loan.funded of loan.funded.reverted); undefined for an event name. */
export function revertedEventOf(name: DeliveryEvent): WebhookEvent | undefined {
  const taken = name.endsWith(REVERTED) ? name.slice(0, -REVERTED.length) : undefined;
  return taken !== undefined && isWebhookEvent(taken) ? taken : undefined;
}
export const isDeliveryEvent = (name: string): name is DeliveryEvent =>
  isWebhookEvent(name) || (name.endsWith(REVERTED) && isWebhookEvent(name.slice(0, -REVERTED.length)));
