import { z } from "zod";
import { LOAN_STATUSES } from "../../domain/loans/repo.js";
import { MAX_DURATION_DAYS, MIN_DURATION_DAYS } from "../../domain/loans/service.js";
import { queryInteger, usdcAmount } from "../http/input.js";

// One schema per route part: they validate, type the handlers and generate the OpenAPI document.
// Loan money values are JSON numbers of USDC (service-spec part 2), exact to the micro-USDC.

const usdc = (what: string) => z.number().describe(`${what}, USDC`);
const isoDate = z.string().describe("ISO 8601 UTC timestamp");
const RESTRICTIONS = ["SCORE_TOO_LOW", "MAX_LOANS_REACHED", "OVERDUE_LOAN", "RECENT_DEFAULT"] as const;

export const loanIdParams = z.object({
  loanId: z
    .string()
    .max(80)
    .regex(/^[0-9A-Za-z-]+$/, "must be a loan id")
    .describe("the loan's id (a UUID)"),
});

export const eligibilityResponse = z.object({
  eligible: z.boolean(),
  trustScore: z.number().int(),
  tier: z.enum(["New", "Building", "Established", "Trusted", "Elite"]),
  maxAmount: usdc("the most one loan of your tier may be"),
  maxDuration: z.number().int().describe("the longest term of your tier, days"),
  currentLoans: z.number().int().describe("your open loans: requests waiting for funding, active and overdue loans"),
  maxActiveLoans: z.number().int(),
  interestRate: z.number().describe("your tier's rate for a loan's whole term, a fraction (0.05 = 5 %)"),
  restrictions: z.array(z.enum(RESTRICTIONS)).describe("why you may not borrow now; empty when eligible"),
});

export const requestBody = z.strictObject({
  amount: usdcAmount({ max: 1_000_000, description: "USDC to borrow: at least 1 and at most your tier's maxAmount, at most 6 decimals" }),
  duration: z
    .number()
    .int()
    .min(MIN_DURATION_DAYS)
    .max(MAX_DURATION_DAYS)
    .describe(`days, a whole number from ${MIN_DURATION_DAYS} to ${MAX_DURATION_DAYS}, at most your tier's maxDuration`),
  purpose: z.string().max(500).optional().describe("free text, at most 500 characters"),
});

export const createdLoan = z.object({
  id: z.string(),
  status: z.literal("pending"),
  amount: usdc("principal asked for"),
  netAmount: usdc("paid to your managed wallet when funded: amount less insuranceFee"),
  insuranceFee: usdc("10 % of the amount, kept from the payout"),
  duration: z.number().int().describe("days"),
  interestRate: z.number().describe("flat rate for the term, a fraction"),
  totalRepayment: usdc("amount plus interest, owed by the due date"),
  purpose: z.string().nullable(),
  createdAt: isoDate,
  expiresAt: isoDate.describe("the request lapses (becomes cancelled) if not funded by then"),
});

export const loanDetail = z.object({
  id: z.string(),
  borrower: z.string().nullable().describe("the borrower's user id"),
  status: z.enum(LOAN_STATUSES),
  amount: usdc("principal"),
  netAmount: usdc("paid out: amount less insuranceFee"),
  insuranceFee: usdc("kept from the payout"),
  duration: z.number().int().describe("days"),
  interestRate: z.number().describe("flat rate for the term, a fraction"),
  totalRepayment: usdc("amount plus interest"),
  purpose: z.string().nullable(),
  amountPaid: usdc("repaid so far"),
  remainingBalance: usdc("still owed (totalRepayment while pending; 0 once closed or cancelled)"),
  createdAt: isoDate,
  expiresAt: isoDate.nullable().describe("when a pending request lapses; null for a loan funded outside the API"),
  fundedAt: isoDate.nullable(),
  dueDate: isoDate.nullable(),
  daysRemaining: z.number().int().nullable().describe("whole days to the due date, rounded up; null unless active or overdue"),
  cancelledAt: isoDate.nullable(),
  txHash: z.string().nullable().describe("the funding transaction"),
});

export const listQuery = z.object({
  status: z.enum(LOAN_STATUSES).optional().describe("only loans in this status"),
  limit: queryInteger({ min: 1, max: 100, default: 20 }),
  offset: queryInteger({ min: 0, max: 1_000_000, default: 0 }),
});
export const loanListItem = loanDetail.pick({
  id: true,
  status: true,
  amount: true,
  remainingBalance: true,
  dueDate: true,
  daysRemaining: true,
});

export const repayBody = z.strictObject({
  amount: usdcAmount({
    max: 1_000_000,
    description:
      "USDC to pay from your managed wallet, at most 6 decimals; a part is allowed, and an amount at or above the payoff closes the loan and pays only the payoff",
  }),
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

export const payoffResponse = z.object({
  loanId: z.string(),
  originalTotal: usdc("amount plus the whole term's interest"),
  earlyPayoffAmount: usdc("what closing the loan takes now: the principal still out plus the interest of the days charged so far"),
  interestSaved: usdc("remaining balance less earlyPayoffAmount"),
  daysEarly: z.number().int().describe("days of the term not charged"),
});

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
