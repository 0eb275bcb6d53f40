// Who may borrow now (service-spec part 2 Loan eligibility): the tier of the borrower's Trust
// Score and what stands in the way, from their standing (open loans, an overdue one, a recent
// default). One rule for a loan request and for a purchase on credit or in installments.
import type { ContractRunner } from "ethers";
import { DAY_MS } from "../../core/clock.js";
import type { Deployment } from "../../core/deployments.js";
import { MICRO_PER_USDC, usdcNumber } from "../../core/money.js";
import { platformContract } from "../../core/platform-abi.js";
import { TIERS, type Tier, tierFor } from "../trust-score/rules.js";
import type { UserRecord } from "../users/repo.js";
import type { BorrowerStanding } from "./repo.js";
import { MIN_LOAN_MICRO } from "./terms.js";

/** The most open loans (waiting requests, active and overdue loans) any tier allows at once (the spec's example). */
export const MAX_ACTIVE_LOANS = Math.max(...TIERS.map((tier) => tier.maxActiveLoans));
/** A default blocks new loans for this long (the spec's figure). */
export const RECENT_DEFAULT_DAYS = 90;

export type Restriction = "SCORE_TOO_LOW" | "MAX_LOANS_REACHED" | "OVERDUE_LOAN" | "RECENT_DEFAULT";

/**
 * What the pool still lends a borrower who has never repaid a loan in full (D-125), micro-USDC, or
 * undefined when it is not held to that (proven on chain, or no chain to ask): the loan book's
 * `unprovenExposure`, which bounds such borrowers' principal out in all and per day.
 */
export type UnprovenRoom = (borrower: string) => Promise<bigint | undefined>;

/** UnprovenRoom read from the deployment's loan book (two views, read together). */
export function unprovenRoomOn(chain: { deployment: Deployment; provider: ContractRunner }): UnprovenRoom {
  const loanBook = platformContract(chain.deployment, "loanBook", chain.provider);
  return async (borrower) => {
    const [proven, [, available]] = await Promise.all([
      loanBook.getFunction("isProven")(borrower) as Promise<boolean>,
      loanBook.getFunction("unprovenExposure")() as Promise<[bigint, bigint]>,
    ]);
    return proven ? undefined : available;
  };
}

/** The room that holds `standing`'s borrower: none once the mirror shows a loan they repaid in full. */
export const roomFor = (standing: BorrowerStanding, wallet: string, room: UnprovenRoom | undefined) =>
  standing.proven || !room ? Promise.resolve(undefined) : room(wallet);

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
  /** For a borrower who has never repaid a loan in full: what the pool still lends such borrowers (USDC). */
  newBorrowerCredit?: number;
}

/**
 * A borrower's eligibility at `now`, from their standing; `minScore` is LOAN_MIN_SCORE. `maxAmount`
 * is the credit the tier leaves beside the open loans (D-122): the tier's amount less their
 * principal, so that an account cannot multiply its tier's limit by holding several loans; and,
 * for a borrower who has never repaid a loan in full, no more than `room` (UnprovenRoom, D-125).
 */
export function eligibilityOf(
  user: Pick<UserRecord, "trustScore">,
  standing: BorrowerStanding,
  now: Date,
  minScore: number,
  room?: bigint,
): Eligibility {
  const tier = tierFor(user.trustScore);
  const credit = creditWithin(creditLeft(tier, standing), room);
  const restrictions: Restriction[] = [];
  if (user.trustScore < minScore) restrictions.push("SCORE_TOO_LOW");
  if (standing.openLoans >= tier.maxActiveLoans || credit < MIN_LOAN_MICRO) restrictions.push("MAX_LOANS_REACHED");
  if (standing.overdue) restrictions.push("OVERDUE_LOAN");
  if (standing.lastDefaultAt && now.getTime() - standing.lastDefaultAt.getTime() < RECENT_DEFAULT_DAYS * DAY_MS) {
    restrictions.push("RECENT_DEFAULT");
  }
  return {
    eligible: restrictions.length === 0,
    trustScore: user.trustScore,
    tier: tier.tier,
    maxAmount: usdcNumber(credit),
    maxDuration: tier.maxDuration,
    currentLoans: standing.openLoans,
    maxActiveLoans: tier.maxActiveLoans,
    interestRate: tier.interestRate,
    restrictions,
    ...(room !== undefined && { newBorrowerCredit: usdcNumber(room) }),
  };
}

/** The credit left, within the pool's room for unproven borrowers when that holds them. */
export function creditWithin(credit: bigint, room: bigint | undefined): bigint {
  return room !== undefined && room < credit ? room : credit;
}

/** The credit, micro-USDC, `tier` leaves beside the standing's open loans (never below zero). */
export function creditLeft(tier: Tier, standing: Pick<BorrowerStanding, "creditInUse">): bigint {
  const left = BigInt(tier.maxAmount) * MICRO_PER_USDC - standing.creditInUse;
  return left > 0n ? left : 0n;
}
