import { z } from "zod";
import { MICRO_PER_USDC, microFromNumber } from "../../core/money.js";
import { LOAN_STATUSES } from "../../domain/loans/repo.js";
import { MAX_DURATION_DAYS, MIN_DURATION_DAYS } from "../../domain/loans/service.js";
import { listQuery } from "../http/pagination.js";

// One schema per route part: they validate, type the handlers and generate the OpenAPI document.
// Loan money values are JSON numbers of USDC (service-spec part 2), exact to the micro-USDC.

const usdc = (what: string) => z.number().describe(`${what}, USDC`);
const isoDate = z.string().describe("ISO 8601 UTC timestamp");
const RESTRICTIONS = ["SCORE_TOO_LOW", "MAX_LOANS_REACHED", "OVERDUE_LOAN", "RECENT_DEFAULT"] as const;

/** A JSON number of USDC as micro-USDC, sign kept; null with more than 6 decimals. */
function signedMicro(amount: number): bigint | null {
  // Whole numbers exactly, however large (1e21 has no plain decimal text).
  if (Number.isInteger(amount)) return BigInt(amount) * MICRO_PER_USDC;
  const micro = microFromNumber(Math.abs(amount));
  return micro === null ? null : amount < 0 ? -micro : micro;
}

/**
 * A loan's USDC amount: any JSON number with at most 6 decimals, as micro-USDC. Only its form is
 * checked here (a string or 7 decimals is VALIDATION_ERROR, as for every money field); whether it
 * is in range, zero and negatives included, is the loans domain's INVALID_AMOUNT.
 */
const loanAmount = (description: string) =>
  z
    .number()
    .transform((amount, context) => {
      const micro = signedMicro(amount);
      if (micro === null) {
        context.addIssue({ code: "custom", message: "must be a USDC amount with at most 6 decimals" });
        return z.NEVER;
      }
      return micro;
    })
    .describe(description);

export const loanIdParams = z.object({
  loanId: z
    .string()
    .max(80)
    .regex(/^[0-9A-Za-z-]+$/, "must be a loan id")
    .describe("the loan's id (a UUID)"),
});

export const eligibilityResponse = z
  .object({
    eligible: z.boolean(),
    trustScore: z.number().int(),
    tier: z.enum(["New", "Building", "Established", "Trusted", "Elite"]),
    maxAmount: usdc("the most one loan of your tier may be"),
    maxDuration: z.number().int().describe("the longest term of your tier, days"),
    currentLoans: z.number().int().describe("your open loans: requests waiting for funding, active and overdue loans"),
    maxActiveLoans: z.number().int(),
    interestRate: z.number().describe("your tier's rate for a loan's whole term, a fraction (0.05 = 5 %)"),
    restrictions: z.array(z.enum(RESTRICTIONS)).describe("why you may not borrow now; empty when eligible"),
    newBorrowerCredit: usdc(
      "while the pool's limits on unproven loans hold you below your tier: the most one loan may be now, what you have repaid in full yourself (a loan held a week) or what the pool still lends on loans above that (its share of the pool and today's budget); maxAmount is at most this, and MAX_LOANS_REACHED stands when it is below 1",
    ).optional(),
  })
  .meta({ id: "LoanEligibility" });

export const requestBody = z.strictObject({
  amount: loanAmount(
    "USDC to borrow, a number with at most 6 decimals (else 400 VALIDATION_ERROR): from 1 to your tier's maxAmount, else 400 INVALID_AMOUNT",
  ),
  duration: z
    .number()
    .int()
    .describe(
      `days, a whole number (else 400 VALIDATION_ERROR): from ${MIN_DURATION_DAYS} to your tier's maxDuration (${MAX_DURATION_DAYS} at most), else 400 INVALID_DURATION`,
    ),
  purpose: z.string().max(500).optional().describe("free text, at most 500 characters"),
});

export const createdLoan = z
  .object({
    id: z.string(),
    status: z.literal("pending"),
    amount: usdc("principal asked for"),
    netAmount: usdc("paid to your managed wallet when funded: amount less insuranceFee"),
    insuranceFee: usdc("10 % of the amount, kept from the payout"),
    duration: z.number().int().describe("days"),
    interestRate: z.number().describe("flat rate for the term, a fraction"),
    totalRepayment: usdc("amount plus interest, owed by the due date"),
    purpose: z.string().optional().describe("as given; absent when none was"),
    createdAt: isoDate,
    expiresAt: isoDate.describe("the request lapses (becomes cancelled) if not funded by then"),
  })
  .meta({ id: "LoanRequest" });

export const loanDetail = z
  .object({
    id: z.string(),
    borrower: z.string().describe("the borrower's user id (yours)"),
    status: z.enum(LOAN_STATUSES),
    amount: usdc("principal"),
    netAmount: usdc("paid out: amount less insuranceFee"),
    insuranceFee: usdc("kept from the payout"),
    duration: z.number().int().describe("days"),
    interestRate: z.number().describe("flat rate for the term, a fraction"),
    totalRepayment: usdc("amount plus interest"),
    purpose: z.string().optional().describe("as given; absent when none was"),
    amountPaid: usdc("repaid so far"),
    remainingBalance: usdc("still owed (totalRepayment while pending; 0 once closed or cancelled)"),
    createdAt: isoDate,
    expiresAt: isoDate
      .optional()
      .describe("when the request lapses if not funded by then; absent only for a loan funded outside the API, which had no request"),
    fundedAt: isoDate.optional().describe("when the pool funded it; absent until funded"),
    dueDate: isoDate.optional().describe("fundedAt plus the term (and any extension); absent until funded"),
    daysRemaining: z
      .number()
      .int()
      .describe(
        "whole days of the term left: the duration while pending, the days to dueDate rounded up while active, 0 once overdue or closed",
      ),
    cancelledAt: isoDate.optional().describe("present only on a cancelled loan (a lapsed request: its expiresAt)"),
    txHash: z.string().optional().describe("the funding transaction; absent until funded"),
  })
  .meta({ id: "Loan" });

export const loansQuery = listQuery({ status: z.enum(LOAN_STATUSES).optional().describe("only loans in this status") });
export const loanListItem = loanDetail.pick({
  id: true,
  status: true,
  amount: true,
  remainingBalance: true,
  dueDate: true,
  daysRemaining: true,
});

export const repayBody = z.strictObject({
  amount: loanAmount(
    "USDC to pay from your managed wallet, a number with at most 6 decimals (else 400 VALIDATION_ERROR); a part is allowed, from 0.01 USDC (less only when it pays the whole remaining balance), else 400 INVALID_AMOUNT; an amount at or above the payoff closes the loan and pays only the payoff",
  ),
});
export const repayResponse = z.object({
  loanId: z.string(),
  amountPaid: usdc("taken by this payment (at most the payoff)"),
  remainingBalance: usdc("still owed after it"),
  status: z.enum(LOAN_STATUSES),
  trustScoreChange: z.number().int().describe("what this payment changed in your Trust Score (an on-time full repayment raises it)"),
  xpEarned: z.number().int().describe("XP this payment earned (a full repayment earns 50)"),
  txHash: z.string(),
});

export const payoffResponse = z
  .object({
    loanId: z.string(),
    originalTotal: usdc("amount plus the whole term's interest"),
    earlyPayoffAmount: usdc("what closing the loan takes now: the principal still out plus the interest of the days charged so far"),
    interestSaved: usdc("remaining balance less earlyPayoffAmount"),
    daysEarly: z.number().int().describe("days of the term not charged"),
  })
  .meta({ id: "LoanPayoff" });

export const extensionBody = z.strictObject({
  days: z.number().int().min(1).max(MAX_DURATION_DAYS).describe("days to add to the term, a whole number"),
  reason: z.string().max(500).optional().describe("why, free text, at most 500 characters"),
});
export const extensionResponse = z.object({
  loanId: z.string(),
  extensionGranted: z.boolean(),
  newDueDate: isoDate,
  additionalInterest: usdc("the interest of the added days at the loan's own daily rate, added to what is owed"),
});

export const cancelResponse = z.object({ loanId: z.string(), status: z.literal("cancelled"), cancelledAt: isoDate });
