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
