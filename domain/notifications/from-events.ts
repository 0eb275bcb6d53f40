// What each domain event means to whom: a pure mapping from one catalogue event
// (domain/events/catalogue.ts) to the notifications it makes, with the recipients, the data an
// app needs to open the right screen, the template values, the preference group and whether it
// is silent or urgent. What it needs from the database (who owns a wallet, a vault's guardians,
// display names) comes in `context`, loaded beforehand (`eventContextNeeds` says what), so the
// mapping is tested without one. The table it implements is in README.md.
import { microFromNumber } from "../../core/money.js";
import { shortAddress } from "../../core/text.js";
import type { EventData, EventType } from "../events/catalogue.js";
import type { NotificationItem, NotificationType, TemplateValues } from "./types.js";

/** The parts of an outbox event the mapping reads (a `ConsumedEvent` of domain/events/consumer.ts is one). */
export type NotifiableEvent = {
  [K in EventType]: { id: string; type: K; userId: string | null; data: EventData<K> };
}[EventType];

/** What the mapping needs to know besides the event. */
export interface EventContext {
  /** The platform user whose managed wallet this is (any case), or null. */
  userIdByWallet(address: string): string | null;
  /** A user's display name (their public profile's), or null when unknown. */
  displayNameOf(userId: string): string | null;
  /** The wallets of a social vault's guardians that were active when the event happened. */
  activeGuardiansOf(vault: string): readonly string[];
}

/** What to load for `context`: wallets to resolve, users to name, vaults whose active guardians to list. */
export interface ContextNeeds {
  wallets: string[];
  userIds: string[];
  guardiansOf: string[];
}

/** A loan amount given only as a JSON number (loan.due_reminder's) as micro-USDC digits. */
function microOfNumber(amount: number): string {
  return (microFromNumber(amount) ?? BigInt(Math.round(amount * 1_000_000))).toString();
}

type Rules = Pick<NotificationItem, "group" | "silent" | "urgent">;

/** Each type's preference group and flags: one place, so a type is never urgent in one event and not in another. */
export const TYPE_RULES: Record<NotificationType, Rules> = {
  loan_created: { group: null, silent: false, urgent: false },
  loan_funded: { group: null, silent: false, urgent: false },
  loan_due_reminder: { group: "loan_reminders", silent: false, urgent: false },
  loan_overdue: { group: "loan_reminders", silent: false, urgent: true },
  loan_repaid: { group: null, silent: false, urgent: false },
  guardian_request: { group: "guardian_alerts", silent: false, urgent: false },
  guardian_accepted: { group: "guardian_alerts", silent: false, urgent: false },
  withdrawal_requested: { group: "guardian_alerts", silent: false, urgent: true },
  withdrawal_approval_needed: { group: "guardian_alerts", silent: false, urgent: true },
  vault_locked: { group: "guardian_alerts", silent: true, urgent: true },
  trust_score_updated: { group: null, silent: false, urgent: false },
  level_up: { group: null, silent: false, urgent: false },
  badge_earned: { group: null, silent: false, urgent: false },
  webhook_failing: { group: null, silent: false, urgent: false },
  payment_receipt: { group: null, silent: false, urgent: false },
  loan_refused: { group: null, silent: false, urgent: false },
  payment_refunded: { group: null, silent: false, urgent: false },
  // A correction keeps the group and silence of what it corrects (notifications/service.ts, `retract`).
  transaction_reverted: { group: null, silent: false, urgent: false },
};

function item(
  sourceId: string,
  userId: string | null | undefined,
  type: NotificationType,
  data: NotificationItem["data"],
  values: TemplateValues,
  extra: Pick<NotificationItem, "notBefore"> = {},
): NotificationItem[] {
  if (!userId) return [];
  return [{ userId, type, data, values, ...TYPE_RULES[type], sourceId, ...extra }];
}

type EventOf<T extends EventType> = Extract<NotifiableEvent, { type: T }>;

/** What one event type means to whom: what to load for it first, and the notifications it makes. */
interface Mapping<T extends EventType> {
  needs?(event: EventOf<T>, needs: ContextNeeds): void;
  notify(event: EventOf<T>, context: EventContext): NotificationItem[];
}

const mapping = <T extends EventType>(definition: Mapping<T>) => definition;

/** The user ids of the event's user, when there is one. */
const eventUser = (event: { userId: string | null }, needs: ContextNeeds) => {
  if (event.userId) needs.userIds.push(event.userId);
};

function trustScoreUpdated({ data }: EventOf<"trust_score.updated" | "user.trust_score_updated">): NotificationItem[] {
  // One change is recorded under both names with the same data: both map to one source, so
  // whichever comes first writes the notification and the other finds it written.
  const source = `trust-score:${data.userId}:${data.timestamp}:${data.previousScore}:${data.newScore}`;
  const values = { previousScore: data.previousScore, newScore: data.newScore, change: data.change };
  return item(source, data.userId, "trust_score_updated", values, values);
}

/** Each event type that makes notifications, and how: the notifications consumer takes these types. */
const MAPPINGS = {
  "loan.created": mapping<"loan.created">({
    notify: ({ id, data }) =>
      item(id, data.userId, "loan_created", { loanId: data.loanId }, { amount: data.raw.amount.toString(), duration: data.duration }),
  }),
  "loan.funded": mapping<"loan.funded">({
    needs: ({ data }, needs) => {
      if (data.raw.recipient) needs.wallets.push(data.raw.recipient);
    },
    notify: (event, context) => {
      const { data } = event;
      // A purchase's loan paid the merchant, not the borrower: their receipt says it (payment_receipt), not "in your wallet".
      if (data.raw.recipient !== undefined && context.userIdByWallet(data.raw.recipient) !== event.userId) return [];
      // The chain's events carry the borrower as the event's user (null when the wallet is no user's).
      return item(
        event.id,
        event.userId,
        "loan_funded",
        { loanId: data.loanId },
        { netAmount: data.raw.netAmount.toString(), dueDate: data.dueDate },
      );
    },
  }),
  "loan.due_reminder": mapping<"loan.due_reminder">({
    notify: ({ id, data }) =>
      item(
        id,
        data.userId,
        "loan_due_reminder",
        { loanId: data.loanId },
        { remainingBalance: microOfNumber(data.remainingBalance), dueDate: data.dueDate },
      ),
  }),
  "loan.overdue": mapping<"loan.overdue">({
    notify: ({ id, userId, data }) =>
      item(id, userId, "loan_overdue", { loanId: data.loanId, daysOverdue: data.daysOverdue }, { dueDate: data.raw.dueDate }),
  }),
  "loan.repaid": mapping<"loan.repaid">({
    notify: ({ id, userId, data }) =>
      item(id, userId, "loan_repaid", { loanId: data.loanId }, { totalPaid: data.raw.totalPaid.toString() }),
  }),
  "user.guardian_added": mapping<"user.guardian_added">({
    needs: (event, needs) => {
      needs.wallets.push(event.data.guardianAddress);
      eventUser(event, needs);
      if (event.data.guardianUserId) needs.userIds.push(event.data.guardianUserId);
    },
    notify: ({ id, userId: owner, data }, context) => {
      // The indexer names the guardian's user when it records the event; a wallet that became a
      // user's since (or that the indexer did not know yet) is looked up again.
      const guardian = data.guardianUserId ?? context.userIdByWallet(data.guardianAddress);
      const screen = { vaultAddress: data.vaultAddress, guardianAddress: data.guardianAddress };
      const ownerName = (owner && context.displayNameOf(owner)) || shortAddress(data.vaultAddress);
      const guardianName = (guardian && context.displayNameOf(guardian)) || shortAddress(data.guardianAddress);
      return [
        // Nobody is their own guardian's audience: an owner naming their own wallet hears nothing twice.
        ...(guardian !== owner ? item(id, guardian, "guardian_request", screen, { owner: ownerName }) : []),
        // No event marks the activation (it is a time on chain): the caller schedules this one at activeAt.
        ...item(id, owner, "guardian_accepted", screen, { guardian: guardianName }, { notBefore: data.activeAt }),
      ];
    },
  }),
  "social_vault.withdrawal_requested": mapping<"social_vault.withdrawal_requested">({
    needs: (event, needs) => {
      needs.guardiansOf.push(event.data.raw.vault);
      eventUser(event, needs);
    },
    notify: ({ id, userId: owner, data }, context) => {
      const screen = { withdrawalId: data.withdrawalId, vaultAddress: data.raw.vault };
      const amount = data.raw.amount.toString();
      const ownerName = (owner && context.displayNameOf(owner)) || shortAddress(data.raw.vault);
      // Guardians are asked only when an approval is needed, each once, never the owner.
      const guardians =
        data.requiredApprovals > 0
          ? [...new Set(context.activeGuardiansOf(data.raw.vault).map((wallet) => context.userIdByWallet(wallet)))].filter(
              (userId): userId is string => userId !== null && userId !== owner,
            )
          : [];
      return [
        ...item(id, owner, "withdrawal_requested", screen, {
          amount,
          executeAfter: data.executeAfter,
          requiredApprovals: data.requiredApprovals,
        }),
        ...guardians.flatMap((guardian) => item(id, guardian, "withdrawal_approval_needed", screen, { amount, owner: ownerName })),
      ];
    },
  }),
  "social_vault.guardian_alert": mapping<"social_vault.guardian_alert">({
    needs: ({ data }, needs) => {
      if (data.vaultOwner) needs.userIds.push(data.vaultOwner);
    },
    notify: ({ id, userId, data }, context) => {
      // Addressed to the guardian (the event's user); never to the owner, whatever the event says.
      if (userId === data.vaultOwner) return [];
      const ownerName = (data.vaultOwner && context.displayNameOf(data.vaultOwner)) || shortAddress(data.vaultAddress);
      return item(id, userId, "vault_locked", { vaultAddress: data.vaultAddress, lockedAt: data.lockedAt }, { owner: ownerName });
    },
  }),
  "trust_score.updated": mapping<"trust_score.updated">({ notify: trustScoreUpdated }),
  "user.trust_score_updated": mapping<"user.trust_score_updated">({ notify: trustScoreUpdated }),
  "user.level_up": mapping<"user.level_up">({
    notify: ({ id, data }) => item(id, data.userId, "level_up", { level: data.level }, { level: data.level }),
  }),
  "user.badge_earned": mapping<"user.badge_earned">({
    notify: ({ id, data }) => item(id, data.userId, "badge_earned", { badgeId: data.badgeId }, { badge: data.name }),
  }),
  "webhook.failing": mapping<"webhook.failing">({
    notify: ({ id, data }) =>
      item(id, data.userId, "webhook_failing", { webhookId: data.webhookId }, { url: data.url, error: data.lastError }),
  }),
  "payment.success": mapping<"payment.success">({
    needs: eventUser,
    notify: ({ id, userId, data }, context) => {
      // The payer's receipt (the event is the merchant's: its webhooks hear it).
      const merchant = (userId && context.displayNameOf(userId)) ?? "the merchant";
      return item(
        id,
        data.payerId,
        "payment_receipt",
        { paymentId: data.paymentId, txHash: data.txHash },
        { amount: microOfNumber(data.amount), merchant, description: data.description || "-", paidAt: data.paidAt },
      );
    },
  }),
  "payment.refunded": mapping<"payment.refunded">({
    notify: ({ id, userId, data }, context) => {
      // The payer is told of every refund (the event is the merchant's: its webhooks hear it).
      if (!data.payerId) return [];
      const merchant = (userId && context.displayNameOf(userId)) ?? "the merchant";
      return item(
        id,
        data.payerId,
        "payment_refunded",
        { paymentId: data.paymentId, refundId: data.refundId, txHash: data.txHash },
        { amount: microOfNumber(data.amount), merchant, refundedAt: data.refundedAt },
      );
    },
  }),
  "loan.refused": mapping<"loan.refused">({
    notify: ({ id, data }) =>
      item(id, data.userId, "loan_refused", { loanId: data.loanId }, { amount: microOfNumber(data.amount), why: data.why }),
  }),
};

/** The event types that make notifications: the ones the notifications consumer takes. */
export type NotifiableType = keyof typeof MAPPINGS;
export const NOTIFIABLE_EVENT_TYPES = Object.keys(MAPPINGS) as NotifiableType[];

const mappingOf = (event: NotifiableEvent) => MAPPINGS[event.type as NotifiableType] as Mapping<EventType> | undefined;

/** What to load for `context` before mapping this event. */
export function eventContextNeeds(event: NotifiableEvent): ContextNeeds {
  const needs: ContextNeeds = { wallets: [], userIds: [], guardiansOf: [] };
  mappingOf(event)?.needs?.(event as never, needs);
  return needs;
}

/** The notifications one event makes (none for the events no user is told about). */
export function notificationsFor(event: NotifiableEvent, context: EventContext): NotificationItem[] {
  return mappingOf(event)?.notify(event as never, context) ?? [];
}
