// Who may borrow now (service-spec part 2 Loan eligibility): the tier of the borrower's Trust
// Score and what stands in the way, from their standing (open loans, an overdue one, a recent
// default). One rule for a loan request and for a purchase on credit or in installments.
import { DAY_MS } from "../../core/clock.js";
import { type Tier, tierFor } from "../trust-score/rules.js";
import type { UserRecord } from "../users/repo.js";
import type { BorrowerStanding } from "./repo.js";

/** Open loans (waiting requests, active and overdue loans) a borrower may have at once (the spec's example). */
export const MAX_ACTIVE_LOANS = 3;
/** A default blocks new loans for this long (the spec's figure). */
export const RECENT_DEFAULT_DAYS = 90;

export type Restriction = "SCORE_TOO_LOW" | "MAX_LOANS_REACHED" | "OVERDUE_LOAN" | "RECENT_DEFAULT";

export interface Eligibility {
  eligible: boolean;
  trustScore: number;
  tier: Tier["tier"];
  maxAmount: number;
  maxDuration: number;
  currentLoans: number;
  maxActiveLoans: number;
  interestRate: number;
  restrictions: Restriction[];
}

/** A borrower's eligibility at `now`, from their standing; `minScore` is LOAN_MIN_SCORE. */
export function eligibilityOf(user: Pick<UserRecord, "trustScore">, standing: BorrowerStanding, now: Date, minScore: number): Eligibility {
  const tier = tierFor(user.trustScore);
  const restrictions: Restriction[] = [];
  if (user.trustScore < minScore) restrictions.push("SCORE_TOO_LOW");
  if (standing.openLoans >= MAX_ACTIVE_LOANS) restrictions.push("MAX_LOANS_REACHED");
  if (standing.overdue) restrictions.push("OVERDUE_LOAN");
  if (standing.lastDefaultAt && now.getTime() - standing.lastDefaultAt.getTime() < RECENT_DEFAULT_DAYS * DAY_MS) {
    restrictions.push("RECENT_DEFAULT");
  }
  return {
    eligible: restrictions.length === 0,
    trustScore: user.trustScore,
    tier: tier.tier,
    maxAmount: tier.maxAmount,
    maxDuration: tier.maxDuration,
    currentLoans: standing.openLoans,
    maxActiveLoans: MAX_ACTIVE_LOANS,
    interestRate: tier.interestRate,
    restrictions,
  };
}
