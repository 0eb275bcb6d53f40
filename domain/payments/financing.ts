// A payment on credit or in installments (D-81, D-89): the loans it takes for a payer, at the
// payer's tier terms in full. Credit is one loan of the whole amount at the tier's rate, for the
// tier's longest term (or the merchant's creditOptions.maxDuration when shorter); split is
// `installments` loans without interest, due one `frequency` apart, closer together when the tier's
// longest term is shorter than the plan. Every loan is at least the loan book's smallest. The
// merchant's fee is taken from each loan (2 % for credit, 1.5 % per installment). Pure: the payer's
// tier comes in, the plan goes out.
import { randomUUID } from "node:crypto";
import { AppError } from "../errors.js";
import { notEligible } from "../loans/financing.js";
import { loanTerms, MIN_LOAN_MICRO, MIN_TERM_DAYS } from "../loans/terms.js";

/** How a payer may pay a merchant (part 2): the methods the rules (rules.ts) price and the checkout offers. */
export const PAYMENT_METHODS = ["direct", "credit", "split"] as const;
export type PaymentMethod = (typeof PAYMENT_METHODS)[number];
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

/**
 * A split payment's installments: equal parts (the first taking what does not divide), due one
 * period apart; within `maxDuration` days (the payer's tier) the period shrinks so that the last
 * falls due by then (whole days; null when even MIN_TERM_DAYS apart they would not fit).
 */
export function splitSchedule(
  amount: bigint,
  splitOptions: { installments?: number; frequency?: Frequency } | null,
  maxDuration = Number.POSITIVE_INFINITY,
): { amount: bigint; days: number }[] | null {
  const count = BigInt(loanCountOf("split", splitOptions));
  const period = Math.min(PERIOD_DAYS[splitOptions?.frequency ?? "weekly"], Math.floor(maxDuration / Number(count)));
  if (period < MIN_TERM_DAYS) return null;
  const part = amount / count;
  return Array.from({ length: Number(count) }, (_, k) => ({
    amount: k === 0 ? amount - part * (count - 1n) : part,
    days: period * (k + 1),
  }));
}

/**
 * Why a payment of `amount` cannot be financed by `method` at all, whoever pays (a loan below the
 * loan book's smallest, MIN_LOAN_MICRO), or null: the merchant is told at creation, a payer before
 * anything is held.
 */
export function financingRefusal(
  method: "credit" | "split",
  amount: bigint,
  splitOptions: { installments?: number } | null,
): string | null {
  const count = BigInt(loanCountOf(method, splitOptions));
  if (amount / count >= MIN_LOAN_MICRO) return null;
  return method === "credit"
    ? `a purchase on credit is a loan of at least ${MIN_LOAN_MICRO / 1_000_000n} USDC`
    : `each of the ${count} installments is a loan of at least ${MIN_LOAN_MICRO / 1_000_000n} USDC`;
}

/**
 * The loans of a payment of `amount` by `method` for a payer of `tier`: 400 INVALID_AMOUNT when a
 * loan would be below the loan book's smallest; NOT_ELIGIBLE when the amount is above the tier's,
 * the tier's rate above the merchant's creditOptions.maxInterest, or the installments cannot fit the
 * tier's longest term a week apart (D-89).
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
  const tooSmall = financingRefusal(method, amount, options.splitOptions);
  if (tooSmall)
    throw new AppError("INVALID_AMOUNT", `This payment is too small to pay by ${method}: ${tooSmall}`, {
      field: "method",
      reason: "AMOUNT_BELOW_LOAN_MINIMUM",
    });
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
    const schedule = splitSchedule(amount, options.splitOptions, tier.maxDuration);
    if (!schedule) {
      throw notEligible(
        "DURATION_ABOVE_TIER",
        `Your tier's longest loan is ${tier.maxDuration} days: too short for ${loanCountOf("split", options.splitOptions)} installments a week apart`,
      );
    }
    loans = schedule.map((part) => loan(part.amount, 0n, part.days));
  }
  return {
    method,
    loans,
    fee: loans.reduce((sum, item) => sum + item.fee, 0n),
    totalRepayment: loans.reduce((sum, item) => sum + item.principal + item.interest, 0n),
    rateBps: method === "credit" ? tier.interestRateBps : 0,
  };
}
