// The loans domain's manifest (domain/module.ts).
import { z } from "zod";
import { address, defineEvent, integerAmount, isoTime, txHash } from "../events/define.js";
import { defineModule } from "../module.js";

const chainLoan = z.object({ chainLoanId: integerAmount });

export const loansModule = defineModule({
  name: "loans",
  errors: {
    INVALID_AMOUNT: 400,
    INVALID_DURATION: 400,
    NOT_ELIGIBLE: 403,
    LOAN_NOT_FOUND: 404,
    ALREADY_REPAID: 409,
    EXTENSION_NOT_ALLOWED: 409,
  },
  tables: { LoanRequest: "chain", LoanChainState: "state" },
  consumers: ["loans"],
  jobs: ["loans.fund", "loans.due-dates"],
  contracts: { loanBook: { relay: ["repayWithPermit", "repay"] } },
  routeTag: "Loans",
  events: {
    "loan.created": defineEvent({
      source: "service",
      webhook: true,
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
      webhook: true,
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
      webhook: true,
      description: "A repayment that left a balance.",
      data: z.object({ loanId: z.string(), amount: z.number(), remainingBalance: z.number(), txHash }),
      raw: chainLoan.extend({ amount: integerAmount, remainingBalance: integerAmount }),
    }),
    "loan.repaid": defineEvent({
      source: "chain",
      webhook: true,
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
      webhook: true,
      description: "A loan was marked overdue after its due date.",
      data: z.object({ loanId: z.string(), daysOverdue: z.number().int().nonnegative() }),
      raw: chainLoan.extend({ dueDate: isoTime }),
    }),
    "loan.defaulted": defineEvent({
      source: "chain",
      webhook: true,
      description: "A loan defaulted; the insurance reserve covered its share of the loss.",
      data: z.object({ loanId: z.string(), loss: z.number(), coveredByInsurance: z.number(), uncovered: z.number(), txHash }),
      raw: chainLoan.extend({ loss: integerAmount, coveredByInsurance: integerAmount, uncovered: integerAmount }),
    }),
  },
});
