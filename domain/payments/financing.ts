// A payment on credit or in installments (D-81): the loans it takes for a payer, at the payer's
// tier terms. Credit is one loan of the whole amount at the tier's rate, for the tier's longest
// term (or the merchant's creditOptions.maxDuration when shorter); split is `installments` loans
// without interest, due one `frequency` apart. The merchant's fee is taken from each loan (2 % for
// credit, 1.5 % per installment). Pure: the payer's tier and the clock come in, the plan goes out.
import { randomUUID } from "node:crypto";
import { notEligible } from "../loans/financing.js";
import { loanTerms } from "../loans/terms.js";
import type { PaymentMethod } from "./rules.js";

/** The installments a split payment takes unless its merchant says otherwise (each is one of the payer's at most 3 loans). */
export const DEFAULT_INSTALLMENTS = 3;
/** Days between installments. */
export const PERIOD_DAYS = { weekly: 7, biweekly: 14, monthly: 30 } as const;
export type Frequency = keyof typeof PERIOD_DAYS;

export interface PlanTier {
  maxAmount: number;
  maxDuration: number;
  interestRate: number;
  interestRateBps: number;
}

export interface PlannedLoan {
  id: string;
  principal: bigint;
  interest: bigint;
  fee: bigint;
  durationDays: number;
}

export interface FinancingPlan {
  method: "credit" | "split";
  loans: PlannedLoan[];
  fee: bigint;
  /** What the payer owes in all: principals plus interest. */
  totalRepayment: bigint;
  rateBps: number;
}

/** How many loans a method takes for a payment (before the payer's terms are known). */
export function loanCountOf(method: PaymentMethod, splitOptions: { installments?: number } | null): number {
  return method === "split" ? (splitOptions?.installments ?? DEFAULT_INSTALLMENTS) : 1;
}

/** A split payment's installments: equal parts (the first taking what does not divide), due one period apart. */
export function splitSchedule(amount: bigint, splitOptions: { installments?: number; frequency?: Frequency } | null) {
  const count = BigInt(loanCountOf("split", splitOptions));
  const period = PERIOD_DAYS[splitOptions?.frequency ?? "weekly"];
  const part = amount / count;
  return Array.from({ length: Number(count) }, (_, k) => ({
    amount: k === 0 ? amount - part * (count - 1n) : part,
    days: period * (k + 1),
  }));
}

/**
 * The loans of a payment of `amount` by `method` for a payer of `tier`; NOT_ELIGIBLE when the
 * amount is above the tier's, or the tier's rate above the merchant's creditOptions.maxInterest.
 */
export function planOf(
  method: "credit" | "split",
  amount: bigint,
  feeBps: bigint,
  tier: PlanTier,
  options: {
    creditOptions: { maxDuration?: number; maxInterest?: number } | null;
    splitOptions: { installments?: number; frequency?: Frequency } | null;
  },
): FinancingPlan {
  if (amount > BigInt(tier.maxAmount) * 1_000_000n) {
    throw notEligible("AMOUNT_ABOVE_TIER", `Your tier may borrow up to ${tier.maxAmount} USDC; this payment is more`);
  }
  const loan = (principal: bigint, interest: bigint, durationDays: number): PlannedLoan => ({
    id: randomUUID(),
    principal,
    interest,
    fee: (principal * feeBps) / 10_000n,
    durationDays,
  });
  let loans: PlannedLoan[];
  if (method === "credit") {
    const maxInterest = options.creditOptions?.maxInterest;
    if (maxInterest !== undefined && tier.interestRate > maxInterest) {
      throw notEligible("INTEREST_ABOVE_OFFER", `Your tier's rate (${tier.interestRate}) is above the merchant's ${maxInterest}`);
    }
    const days = Math.min(options.creditOptions?.maxDuration ?? tier.maxDuration, tier.maxDuration);
    loans = [loan(amount, loanTerms(amount, tier.interestRateBps).interest, days)];
  } else {
    loans = splitSchedule(amount, options.splitOptions).map((part) => loan(part.amount, 0n, part.days));
  }
  return {
    method,
    loans,
    fee: loans.reduce((sum, item) => sum + item.fee, 0n),
    totalRepayment: loans.reduce((sum, item) => sum + item.principal + item.interest, 0n),
    rateBps: method === "credit" ? tier.interestRateBps : 0,
  };
}
