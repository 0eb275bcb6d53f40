// A payment on credit or in installments (D-81, D-89, D-127): the loans it takes for a payer, at
// the payer's tier terms in full. Credit is one loan of the whole amount, for the tier's longest
// term (or the merchant's creditOptions.maxDuration when shorter); split is `installments` loans
// due one `frequency` apart, closer together when the tier's longest term is shorter than the plan.
// Each is the same loan a P2P borrower would take for its part of the price: the merchant's fee
// (2 % for credit, 1.5 % per installment) comes off the part, and the principal is what is left
// grossed up by the P2P insurance fee, so the reserve gets that fee's share of it whoever pays it.
// Its interest is the tier's rate (credit) or none (split), at least the loan book's floor, the
// loan's provision. Every loan is at least the loan book's smallest. The payer's tier and the floor
// come in, the plan goes out.
import { randomUUID } from "node:crypto";
import { AppError } from "../errors.js";
import { notEligible } from "../loans/financing.js";
import { INSURANCE_FEE_BPS, loanTerms, MIN_LOAN_MICRO, MIN_TERM_DAYS } from "../loans/terms.js";

/** How a payer may pay a merchant (part 2): the methods the rules (rules.ts) price and the checkout offers. */
export const PAYMENT_METHODS = ["direct", "credit", "split"] as const;
export type PaymentMethod = (typeof PAYMENT_METHODS)[number];
/** The installments a split payment takes unless its merchant says otherwise (each is one of the payer's at most 3 loans). */
export const DEFAULT_INSTALLMENTS = 3;
/** Days between installments. */
export const PERIOD_DAYS = { weekly: 7, biweekly: 14, monthly: 30 } as const;
export type Frequency = keyof typeof PERIOD_DAYS;

export interface PlanTier {
  maxDuration: number;
  interestRate: number;
  interestRateBps: number;
}

export interface PlannedLoan {
  id: string;
  /** The part of the payment's amount this loan pays. */
  price: bigint;
  /** The loan: the part less the merchant's fee, grossed up by the P2P insurance fee (at least the price). */
  principal: bigint;
  interest: bigint;
  /** The merchant's fee on the part. */
  fee: bigint;
  /** The principal above what the merchant receives: kept in the pool's insurance reserve. */
  insuranceFee: bigint;
  durationDays: number;
}

/** The least interest the loan book takes on a loan of `principal` to this payer: its provision (minInterestOf). */
export type InterestFloor = (principal: bigint) => Promise<bigint>;

/**
 * The principal of a loan whose net amount is `net`: net / (1 - INSURANCE_FEE_BPS), rounded down
 * (the payer's favour), so its insurance fee is at most a P2P loan's share of it.
 */
export const grossUp = (net: bigint) => (net * 10_000n) / (10_000n - INSURANCE_FEE_BPS);

/** What each method would cost a payer now (GET /checkout/{id}/terms), in USDC at the edge. */
export interface PayerTerms {
  direct?: { total: number };
  credit?: {
    eligible: boolean;
    reason: string | null;
    interestRate: number | null;
    insuranceFee: number | null;
    interest: number | null;
    totalRepayment: number | null;
    dueDate: string | null;
  };
  split?: {
    eligible: boolean;
    reason: string | null;
    installments: { amount: number; insuranceFee: number; totalRepayment: number; dueDate: string }[];
  };
}

export interface FinancingPlan {
  method: "credit" | "split";
  loans: PlannedLoan[];
  fee: bigint;
  /** What the payer owes in all: principals plus interest. */
  totalRepayment: bigint;
  /** The tier's rate where every loan carries it; null where the floor sets the interest (split, or above the tier's). */
  rateBps: number | null;
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
 * The loans of a payment of `amount` by `method` for a payer of `tier`, each paying the depositors
 * at least `floor` (D-127): 400 INVALID_AMOUNT when a loan would be below the loan book's smallest;
 * NOT_ELIGIBLE when the rate is above the merchant's creditOptions.maxInterest or the installments
 * cannot fit the tier's longest term a week apart (D-89). The credit the loans take is the loans
 * domain's to check (their principals, under the payer's row lock).
 */
export async function planOf(
  method: "credit" | "split",
  amount: bigint,
  feeBps: bigint,
  tier: PlanTier,
  options: {
    creditOptions: { maxDuration?: number; maxInterest?: number } | null;
    splitOptions: { installments?: number; frequency?: Frequency } | null;
  },
  floor: InterestFloor,
): Promise<FinancingPlan> {
  const tooSmall = financingRefusal(method, amount, options.splitOptions);
  if (tooSmall)
    throw new AppError("INVALID_AMOUNT", `This payment is too small to pay by ${method}: ${tooSmall}`, {
      field: "method",
      reason: "AMOUNT_BELOW_LOAN_MINIMUM",
    });
  const loan = async (price: bigint, rateBps: number, durationDays: number): Promise<PlannedLoan> => {
    const fee = (price * feeBps) / 10_000n;
    const principal = grossUp(price - fee);
    const atRate = rateBps === 0 ? 0n : loanTerms(principal, rateBps).interest;
    const least = await floor(principal);
    const interest = atRate > least ? atRate : least;
    return { id: randomUUID(), price, principal, interest, fee, insuranceFee: principal - (price - fee), durationDays };
  };
  let loans: PlannedLoan[];
  let rateBps: number | null = null;
  if (method === "credit") {
    const days = Math.min(options.creditOptions?.maxDuration ?? tier.maxDuration, tier.maxDuration);
    loans = [await loan(amount, tier.interestRateBps, days)];
    const maxInterest = options.creditOptions?.maxInterest;
    const only = loans[0]!;
    if (only.interest === loanTerms(only.principal, tier.interestRateBps).interest) rateBps = tier.interestRateBps;
    // A rate to compare with the merchant's fraction (no money moves on it): the tier's, or the floor's where it binds.
    const rate = rateBps !== null ? tier.interestRate : Number(only.interest) / Number(only.principal);
    if (maxInterest !== undefined && rate > maxInterest) {
      throw notEligible("INTEREST_ABOVE_OFFER", `Your rate (${Number(rate.toFixed(4))}) is above the merchant's ${maxInterest}`);
    }
  } else {
    const schedule = splitSchedule(amount, options.splitOptions, tier.maxDuration);
    if (!schedule) {
      throw notEligible(
        "DURATION_ABOVE_TIER",
        `Your tier's longest loan is ${tier.maxDuration} days: too short for ${loanCountOf("split", options.splitOptions)} installments a week apart`,
      );
    }
    loans = await Promise.all(schedule.map((part) => loan(part.amount, 0, part.days)));
  }
  return {
    method,
    loans,
    fee: loans.reduce((sum, item) => sum + item.fee, 0n),
    totalRepayment: loans.reduce((sum, item) => sum + item.principal + item.interest, 0n),
    rateBps,
  };
}

/** The router's and the pool's refusals of a payment on credit, as the spec's codes. */
export function financedRevert(revert: { name: string; args: unknown[] }): AppError | undefined {
  switch (revert.name) {
    case "PaymentRouterAlreadyPaid":
      return new AppError("ALREADY_PAID", "This payment was paid already");
    case "LoanBookInvalidPrincipal":
      return new AppError("INVALID_AMOUNT", "The lending pool does not lend this amount", {
        field: "amount",
        reason: "outside the loan book's limits",
      });
    case "LoanBookInvalidDuration":
      return new AppError("INVALID_DURATION", "The lending pool does not lend for this term", {
        field: "method",
        reason: "outside the loan book's terms",
      });
    case "LoanBookUnprovenLimitReached":
      return new AppError(
        "NOT_ELIGIBLE",
        "The pool lends no more now on loans above what payers have repaid in full themselves; pay directly or try later",
        {
          field: "eligibility",
          reason: "NEW_BORROWER_LIMIT",
        },
      );
    // The loan's expected loss is above what the pool may charge, or rose since the plan (D-127): a new attempt re-plans.
    case "LoanBookInterestTooHigh":
    case "PaymentRouterInterestBelowExpectedLoss":
      return notEligible(
        "INTEREST_FLOOR",
        "The pool cannot lend this now at a rate that pays its expected loss; pay directly or try again",
      );
    case "StakingVaultInsufficientLiquidity":
    case "LoanBookFundingCapReached":
      return new AppError("INSUFFICIENT_LIQUIDITY", "The lending pool cannot fund this payment now; pay directly or try later", {
        field: "method",
        reason: "not enough liquidity in the pool",
      });
    case "EnforcedPause":
      return new AppError("VAULT_PAUSED", "The lending pool is temporarily paused");
    default:
      return undefined;
  }
}
