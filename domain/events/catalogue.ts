// The one catalogue of domain events: a zod schema per event type, used by every writer
// (the indexer for chain facts, the domain services for their own) and every consumer
// (rewards now; notifications and webhooks next).
//
// Each event's stored data is the webhook-facing `data` of service-spec part 6 (presentation
// formats: two-decimal strings, JSON numbers) plus `raw`, the exact values internal consumers
// read (micro-USDC as bigint, on-chain ids). `raw` never leaves the service: `publicData`
// strips it. Writers hand bigints and the catalogue encodes them (decimal strings in JSON);
// consumers decode back to bigints, so no amount goes through a presentation string.
import { z } from "zod";

/** An integer amount in the token's smallest unit (micro-USDC, or 1e-18 tmUSDC): a decimal string in JSON, a bigint in code. */
export const integerAmount = z.codec(z.string().regex(/^-?\d+$/), z.bigint(), {
  decode: (text) => BigInt(text),
  encode: (value) => value.toString(),
});

const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/);
const txHash = z.string().regex(/^0x[0-9a-fA-F]{64}$/);
const isoTime = z.string().datetime({ offset: true });
/** Two-decimal USDC string (service-spec part 1, vault money values). */
const usdc2 = z.string().regex(/^-?\d+\.\d{2}$/);
/** A platform user id, or null when the wallet is not a platform user's. */
const userRef = z.string().nullable();

interface EventDefinition<D extends z.ZodObject, R extends z.ZodObject | undefined> {
  /** Who writes it: the indexer (from a contract event) or a domain service. */
  source: "chain" | "service";
  description: string;
  data: D;
  raw: R;
}

function defineEvent<D extends z.ZodObject, R extends z.ZodObject | undefined = undefined>(definition: {
  source: "chain" | "service";
  description: string;
  data: D;
  raw?: R;
}): EventDefinition<D, R> {
  return { raw: undefined as R, ...definition };
}

const trustScoreChange = z.object({
  userId: z.string(),
  previousScore: z.number().int(),
  newScore: z.number().int(),
  change: z.number().int(),
  reason: z.string(),
  timestamp: isoTime,
});

const chainLoan = z.object({ chainLoanId: integerAmount });
const withdrawalRef = z.object({ vault: address, requestId: integerAmount });

export const EVENT_CATALOGUE = {
  "vault.deposit": defineEvent({
    source: "chain",
    description: "USDC deposited into the staking vault (through the API or by a wallet).",
    data: z.object({ userId: userRef, walletAddress: address, usdcAmount: usdc2, tmUSDCReceived: usdc2, txHash }),
    raw: z.object({ assets: integerAmount, shares: integerAmount }),
  }),
  "vault.withdraw": defineEvent({
    source: "chain",
    description: "tmUSDC redeemed for USDC.",
    data: z.object({ userId: userRef, walletAddress: address, tmUSDCRedeemed: usdc2, usdcReceived: usdc2, txHash }),
    raw: z.object({ assets: integerAmount, shares: integerAmount }),
  }),
  "vault.yield_distributed": defineEvent({
    source: "chain",
    description: "Yield added to the vault; the exchange rate rose.",
    data: z.object({ amount: usdc2, totalYield: usdc2, newExchangeRate: z.number(), txHash }),
    raw: z.object({ amount: integerAmount, totalYield: integerAmount, exchangeRate: integerAmount }),
  }),
  "loan.created": defineEvent({
    source: "service",
    description: "A borrower asked for a loan; it is pending until the pool funds it.",
    data: z.object({
      loanId: z.string(),
      userId: z.string(),
      amount: z.number(),
      netAmount: z.number(),
      duration: z.number().int(),
      interestRate: z.number(),
      totalRepayment: z.number(),
      expiresAt: isoTime,
    }),
    raw: z.object({ amount: integerAmount, interest: integerAmount, insuranceFee: integerAmount }),
  }),
  "loan.refused": defineEvent({
    source: "service",
    description:
      "The pool refused a pending request when it came to fund it, because the borrower's terms got worse meanwhile (reason: the restriction codes, TERMS_ABOVE_TIER or RATE_ROSE); the request is cancelled.",
    data: z.object({
      loanId: z.string(),
      userId: z.string(),
      amount: z.number(),
      duration: z.number().int(),
      reason: z.string(),
      why: z.string(),
      cancelledAt: isoTime,
    }),
  }),
  "loan.due_reminder": defineEvent({
    source: "service",
    description: "A loan falls due within a day (for the notifications: loan_due_reminder).",
    data: z.object({ loanId: z.string(), userId: z.string(), dueDate: isoTime, remainingBalance: z.number() }),
  }),
  "loan.funded": defineEvent({
    source: "chain",
    description:
      "The pool funded a loan: the borrower received netAmount, or (a purchase on credit or in installments) the payment router did, for the merchant.",
    data: z.object({ loanId: z.string(), amount: z.number(), netAmount: z.number(), dueDate: isoTime, txHash }),
    raw: chainLoan.extend({
      principal: integerAmount,
      netAmount: integerAmount,
      interest: integerAmount,
      insuranceFee: integerAmount,
      /** Who received netAmount (absent in events recorded before payments: the borrower). */
      recipient: address.optional(),
    }),
  }),
  "loan.partial_payment": defineEvent({
    source: "chain",
    description: "A repayment that left a balance.",
    data: z.object({ loanId: z.string(), amount: z.number(), remainingBalance: z.number(), txHash }),
    raw: chainLoan.extend({ amount: integerAmount, remainingBalance: integerAmount }),
  }),
  "loan.repaid": defineEvent({
    source: "chain",
    description: "The repayment that closed a loan.",
    data: z.object({ loanId: z.string(), totalPaid: z.number(), txHash }),
    raw: chainLoan.extend({ totalPaid: integerAmount }),
  }),
  "loan.refunded": defineEvent({
    source: "chain",
    description:
      "A merchant's refund of the purchase a loan paid for settled part or all of it (D-89): its principal fell by amount and its interest by interestForgiven; returned went back to the borrower; closed when it left nothing owed.",
    data: z.object({
      loanId: z.string(),
      amount: z.number(),
      interestForgiven: z.number(),
      returned: z.number(),
      remainingBalance: z.number(),
      closed: z.boolean(),
      txHash,
    }),
    raw: chainLoan.extend({
      principalRefunded: integerAmount,
      interestForgiven: integerAmount,
      toPool: integerAmount,
      principalReturned: integerAmount,
      interestReturned: integerAmount,
      remainingBalance: integerAmount,
    }),
  }),
  "loan.overdue": defineEvent({
    source: "chain",
    description: "A loan was marked overdue after its due date.",
    data: z.object({ loanId: z.string(), daysOverdue: z.number().int().nonnegative() }),
    raw: chainLoan.extend({ dueDate: isoTime }),
  }),
  "loan.defaulted": defineEvent({
    source: "chain",
    description: "A loan defaulted; the insurance reserve covered its share of the loss.",
    data: z.object({ loanId: z.string(), loss: z.number(), coveredByInsurance: z.number(), uncovered: z.number(), txHash }),
    raw: chainLoan.extend({ loss: integerAmount, coveredByInsurance: integerAmount, uncovered: integerAmount }),
  }),
  "social_vault.withdrawal_requested": defineEvent({
    source: "chain",
    description: "A withdrawal above the daily limit waits for guardian approvals and its timelock.",
    data: z.object({
      withdrawalId: z.string(),
      amount: usdc2,
      recipient: address,
      requiredApprovals: z.number().int(),
      executeAfter: isoTime,
      expiresAt: isoTime,
    }),
    raw: withdrawalRef.extend({ amount: integerAmount }),
  }),
  "social_vault.withdrawal_approved": defineEvent({
    source: "chain",
    description: "A guardian approved a pending withdrawal.",
    data: z.object({ withdrawalId: z.string(), approver: z.string(), approverAddress: address, totalApprovals: z.number().int() }),
    raw: withdrawalRef,
  }),
  "social_vault.withdrawal_executed": defineEvent({
    source: "chain",
    description: "An approved withdrawal was executed after its timelock.",
    data: z.object({ withdrawalId: z.string(), amount: usdc2, recipient: address, txHash }),
    raw: withdrawalRef.extend({ amount: integerAmount }),
  }),
  "social_vault.locked": defineEvent({
    source: "chain",
    description: "The vault was locked (the owner's duress PIN, or a guardian); its open withdrawal requests were closed.",
    data: z.object({ vaultOwner: z.string().nullable(), vaultAddress: address, lockedAt: isoTime }),
  }),
  "social_vault.guardian_alert": defineEvent({
    source: "service",
    description:
      "The silent alert of a lock, one per guardian who is a platform user (addressed to the guardian, never to the owner): the vault was locked, maybe under duress.",
    data: z.object({
      vaultAddress: address,
      vaultOwner: userRef,
      guardianAddress: address,
      reason: z.literal("locked"),
      lockedAt: isoTime,
    }),
  }),
  "user.guardian_added": defineEvent({
    source: "chain",
    description: "A guardian was added to a social vault; it becomes active at activeAt.",
    data: z.object({ vaultAddress: address, guardianAddress: address, guardianUserId: userRef, activeAt: isoTime }),
  }),
  "user.level_up": defineEvent({
    source: "service",
    description: "The user reached a new XP level.",
    data: z.object({ userId: z.string(), level: z.string(), previousLevel: z.string(), xp: z.number().int(), timestamp: isoTime }),
  }),
  "user.badge_earned": defineEvent({
    source: "service",
    description: "The user earned a badge.",
    data: z.object({ userId: z.string(), badgeId: z.string(), name: z.string(), earnedAt: isoTime }),
  }),
  "trust_score.updated": defineEvent({
    source: "service",
    description: "The user's Trust Score changed (also sent as user.trust_score_updated: the spec uses both names).",
    data: trustScoreChange,
  }),
  "webhook.failing": defineEvent({
    source: "service",
    description:
      "One of the user's webhooks turned failing (the sixth attempt of a delivery failed): told to its owner, never delivered to webhooks.",
    data: z.object({ userId: z.string(), webhookId: z.string(), url: z.string(), lastError: z.string(), failedAt: isoTime }),
  }),
  "chain.fact_reverted": defineEvent({
    source: "chain",
    description:
      "A reorganisation removed the block of a chain fact whose event a consumer had already taken (that event stays, marked revertedAt). Written by the indexer's rollback; its userId is the fact's.",
    data: z.object({ eventId: z.guid(), type: z.string() }),
  }),
  "chain.fact_restored": defineEvent({
    source: "chain",
    description:
      "A reverted chain fact came back in the new branch (the same transaction, and the same place among its logs): its event is no longer reverted. revertEventId is the chain.fact_reverted it undoes.",
    data: z.object({ eventId: z.guid(), type: z.string(), revertEventId: z.guid() }),
  }),
  "payment.paid": defineEvent({
    source: "chain",
    description:
      "A payment was paid on the payment router: the merchant received amount - fee, the treasury fee (the payments consumer turns it into payment.success).",
    data: z.object({
      paymentId: z.string(),
      payerId: userRef,
      payerAddress: address,
      merchantId: userRef,
      merchantAddress: address,
      amount: z.number(),
      fee: z.number(),
      net: z.number(),
      txHash,
    }),
    raw: z.object({ amount: integerAmount, fee: integerAmount }),
  }),
  "payment.refund_made": defineEvent({
    source: "chain",
    description: "A merchant refunded part or all of a payment to its payer (the payments consumer turns it into payment.refunded).",
    data: z.object({
      paymentId: z.string(),
      refundId: z.string(),
      payerId: userRef,
      merchantId: userRef,
      merchantAddress: address,
      amount: z.number(),
      totalRefunded: z.number(),
      txHash,
    }),
    raw: z.object({ paymentAmount: integerAmount, amount: integerAmount, totalRefunded: integerAmount }),
  }),
  "payment.success": defineEvent({
    source: "service",
    description: "A merchant's payment was paid: to the merchant's webhooks, and a receipt to the payer.",
    data: z.object({
      type: z.literal("payment.success"),
      paymentId: z.string(),
      amount: z.number(),
      fee: z.number(),
      net: z.number(),
      currency: z.literal("USDC"),
      method: z.string(),
      description: z.string(),
      payerId: userRef,
      metadata: z.record(z.string(), z.unknown()),
      txHash,
      paidAt: isoTime,
    }),
  }),
  "payment.failed": defineEvent({
    source: "service",
    description:
      "An attempt to pay a merchant's payment failed: declined or insufficient_funds (the sandbox's test addresses, an empty wallet), not_eligible (the payer may not borrow it), insufficient_liquidity (the pool), refused (the chain refused its transaction) or interrupted (it stopped before its transaction went out); its reserved loans are cancelled, and the payment stays open for another attempt.",
    data: z.object({
      type: z.literal("payment.failed"),
      paymentId: z.string(),
      amount: z.number(),
      currency: z.literal("USDC"),
      method: z.string(),
      reason: z.enum(["declined", "insufficient_funds", "not_eligible", "insufficient_liquidity", "refused", "interrupted"]),
      metadata: z.record(z.string(), z.unknown()),
      failedAt: isoTime,
    }),
  }),
  "payment.refunded": defineEvent({
    source: "service",
    description: "A merchant refunded part or all of a payment (refundedAmount so far; fullyRefunded once nothing is left).",
    data: z.object({
      type: z.literal("payment.refunded"),
      paymentId: z.string(),
      refundId: z.string(),
      amount: z.number(),
      refundedAmount: z.number(),
      fullyRefunded: z.boolean(),
      reason: z.string(),
      /** Who paid (told of the refund); absent in events recorded before D-89. */
      payerId: z.string().nullable().optional(),
      currency: z.literal("USDC"),
      metadata: z.record(z.string(), z.unknown()),
      txHash,
      refundedAt: isoTime,
    }),
  }),
  "user.trust_score_updated": defineEvent({
    source: "service",
    description: "Same as trust_score.updated, under the name of the spec's event list.",
    data: trustScoreChange,
  }),
} as const;

export type EventType = keyof typeof EVENT_CATALOGUE;
export const EVENT_TYPES = Object.keys(EVENT_CATALOGUE) as EventType[];

type Definition<T extends EventType> = (typeof EVENT_CATALOGUE)[T];
type RawOf<T extends EventType> = Definition<T>["raw"] extends z.ZodObject ? Definition<T>["raw"] : undefined;

/** An event's data as code sees it: the public fields, and `raw` with bigints where the event has raw fields. */
export type EventData<T extends EventType> = z.output<Definition<T>["data"]> &
  (RawOf<T> extends z.ZodObject ? { raw: z.output<RawOf<T>> } : unknown);

/** The stored (JSON) form of an event's data. */
export type StoredEventData = Record<string, unknown>;

const storedSchemas = new Map<EventType, z.ZodType>(
  EVENT_TYPES.map((type) => {
    const definition = EVENT_CATALOGUE[type] as EventDefinition<z.ZodObject, z.ZodObject | undefined>;
    return [type, definition.raw ? definition.data.extend({ raw: definition.raw }) : definition.data];
  }),
);

export const isEventType = (type: string): type is EventType => storedSchemas.has(type as EventType);

/** Validates an event's data and turns it into its stored JSON form; throws on data that breaks the catalogue. */
export function encodeEventData<T extends EventType>(type: T, data: EventData<T>): StoredEventData {
  return z.encode(storedSchemas.get(type)!, data) as StoredEventData;
}

/** A stored event's data as code sees it (bigints in `raw`); throws when it does not match its type's schema. */
export function decodeEventData<T extends EventType>(type: T, stored: unknown): EventData<T> {
  return z.decode(storedSchemas.get(type)!, stored as never) as EventData<T>;
}

/** The webhook-facing data of a stored event: the spec's fields, without `raw`. */
export function publicData(type: EventType, stored: unknown): Record<string, unknown> {
  return EVENT_CATALOGUE[type].data.parse(stored) as Record<string, unknown>;
}
