// Peer-to-peer loans: the borrower's side (eligibility by Trust Score tier, requests, the list and
// detail views, repayments, extensions, cancellation), funding by the pool through the one
// transaction sender (a job once a request is LOAN_FUNDING_DELAY_S old, or the sandbox at once, the
// same code), and the due-date job. Money in bigint micro-USDC, formatted only in the views. One
// file per role; context.ts holds what they share.

import { createBorrowerLoans } from "./borrower.js";
import { type LoansServiceDeps, loansContext } from "./context.js";
import { createLoanDueDates } from "./due-dates.js";
import { createLoanFunding } from "./funding.js";

export {
  type LoansServiceDeps,
  MAX_ACTIVE_LOANS,
  MAX_DURATION_DAYS,
  MAX_EXTENSIONS,
  MAX_PAYMENT_MICRO,
  MIN_DURATION_DAYS,
  MIN_LOAN_MICRO,
  MIN_PAYMENT_MICRO,
  RECENT_DEFAULT_DAYS,
  REMINDER_HOURS,
  REQUEST_LIFETIME_HOURS,
  type Restriction,
} from "./context.js";

export function createLoansService(deps: LoansServiceDeps) {
  const context = loansContext(deps);
  return {
    ...createBorrowerLoans(context),
    ...createLoanFunding(context),
    ...createLoanDueDates(context),
  };
}

export type LoansService = ReturnType<typeof createLoansService>;
