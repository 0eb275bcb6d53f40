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
 * The most one loan to a borrower may be under the loan book's limits on unproven loans (D-125),
 * micro-USDC: what the borrower proved it repays (`provenUpTo`: the largest loan it repaid in full
 * itself after a week), or what the pool still lends on loans above that (`unprovenExposure`),
 * whichever is more.
 */
export type UnprovenRoom = (borrower: string) => Promise<bigint>;

/** UnprovenRoom read from the deployment's loan book (two views, read together). */
export function unprovenRoomOn(chain: { deployment: Deployment; provider: ContractRunner }): UnprovenRoom {
  const loanBook = platformContract(chain.deployment, "loanBook", chain.provider);
  return async (borrower) => {
    const [proven, [, available]] = await Promise.all([
      loanBook.getFunction("provenUpTo")(borrower) as Promise<bigint>,
      loanBook.getFunction("unprovenExposure")() as Promise<[bigint, bigint]>,
    ]);
    // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.max does not take
    return proven > available ? proven : available;
  };
}

/** The room that holds `wallet`'s loans now; undefined without a chain to ask. */
export const roomFor = (wallet: string, room: UnprovenRoom | undefined) => (room ? room(wallet) : Promise.resolve(undefined));

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
  /** While the limits on unproven loans hold the borrower below its tier: the most one loan may be (USDC). */
  newBorrowerCredit?: number;
}

/**
 * A borrower's eligibility at `now`, from their standing; `minScore` is LOAN_MIN_SCORE. `maxAmount`
 * is the credit the tier leaves beside the open loans (D-122): the tier's amount less their
 * principal, so that an account cannot multiply its tier's limit by holding several loans; and,
 * no more than `room`, the most the limits on unproven loans allow one loan now (UnprovenRoom, D-125).
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
    ...(room !== undefined && room < BigInt(tier.maxAmount) * MICRO_PER_USDC && { newBorrowerCredit: usdcNumber(room) }),
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
