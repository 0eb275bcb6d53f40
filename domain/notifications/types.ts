// The words of the notifications domain, shared by its rules, its service and the API schemas.

/**
 * The 13 notification types of service-spec part 2, in its order, and five extensions:
 * `webhook_failing` (one of your webhooks stopped receiving; D-77), `payment_receipt` (you paid
 * a merchant; D-81), `loan_refused` (the pool refused your request at funding: your terms got
 * worse; D-89), `payment_refunded` (a merchant refunded your purchase; D-89) and
 * `transaction_reverted` (a chain reorganisation removed what an earlier notification announced;
 * D-94). A row's `type` is always one of them.
 */
export const NOTIFICATION_TYPES = [
  "loan_created",
  "loan_funded",
  "loan_due_reminder",
  "loan_overdue",
  "loan_repaid",
  "guardian_request",
  "guardian_accepted",
  "withdrawal_requested",
  "withdrawal_approval_needed",
  "vault_locked",
  "trust_score_updated",
  "level_up",
  "badge_earned",
  "webhook_failing",
  "payment_receipt",
  "loan_refused",
  "payment_refunded",
  "transaction_reverted",
] as const;
export type NotificationType = (typeof NOTIFICATION_TYPES)[number];

export const isNotificationType = (value: string): value is NotificationType => (NOTIFICATION_TYPES as readonly string[]).includes(value);

/**
 * The preference groups a notification can belong to (the per-channel switches of part 2's
 * Notification preferences that concern events; `marketing` and `weekly_summary` concern no event).
 */
export type PreferenceGroup = "loan_reminders" | "guardian_alerts";

/** The channels besides the in-app feed (which every notification reaches). */
export type Channel = "push" | "email" | "sms";

/** The values a template is filled with: text, whole numbers, micro-USDC as decimal digits, ISO 8601 times. JSON, so a scheduled item can be stored as is. */
export type TemplateValues = Record<string, string | number>;

/** What one domain event means to one user: `notify` turns it into an in-app row (and its deliveries). */
export interface NotificationItem {
  /** The recipient. */
  userId: string;
  type: NotificationType;
  /** The row's `data`: what the app needs to open the right screen (ids such as loanId, withdrawalId, vaultAddress, badgeId). */
  data: Record<string, string | number | boolean | null>;
  /** What the title and body are filled with (templates.ts), in the recipient's language when written. */
  values: TemplateValues;
  /** The template when it is not the type's own (the test notification's). */
  template?: TemplateKey;
  /** The preference group whose per-channel switch applies; null: only the channel's `enabled` does. */
  group: PreferenceGroup | null;
  /**
   * Written for its recipient alone and never mirrored to anyone else: nothing of a guardian's
   * vault_locked ever reaches the vault's owner, whose phone a coercer may hold.
   */
  silent: boolean;
  /** Goes out even in the recipient's quiet hours (guardian alerts, an overdue loan). */
  urgent: boolean;
  /**
   * What it comes from: the domain event's id, or a key two twin events share (a Trust Score
   * change is recorded under two names). The row's dedupeKey is `<sourceId>:<userId>:<type>`,
   * so a repeated fan-out writes nothing twice. Null: never deduplicated (the test route's).
   */
  sourceId: string | null;
  /** Not to be written before this instant (ISO 8601): the caller schedules it (guardian_accepted at the guardian's activeAt). */
  notBefore?: string;
}

/** A template of templates.ts: each notification type's, and the test route's. */
export type TemplateKey = NotificationType | "test" | "weekly_summary";
