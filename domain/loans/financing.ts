// Loans that pay a merchant (a purchase on credit or in installments; D-81): the payer's
// eligibility for them, and their reservation, under the borrower's row lock like a loan
// request's, so that the cap of open loans holds whatever runs at once. The loans are the payment
// router's to fund in the payment's own transaction (the funding job never touches them); once
// funded they are the payer's loans like any other (GET /v1/loans, repay, overdue, default).
import type { Clock } from "../../core/clock.js";
import { usdcNumber } from "../../core/money.js";
import type { Db, Tx } from "../db.js";
import { AppError } from "../errors.js";
import { tierFor } from "../trust-score/rules.js";
import type { UserRecord } from "../users/repo.js";
import { creditLeft, type Eligibility, eligibilityOf, roomFor, type UnprovenRoom } from "./eligibility.js";
import type { LoansRepo } from "./repo.js";
import { rateBpsOf } from "./terms.js";

/** One loan of a plan: what the payer owes, and in how many days. */
export interface Installment {
  id: string;
  principal: bigint;
  interest: bigint;
  /** The principal above what the merchant receives: kept in the pool's reserve (D-101, D-127). */
  insuranceFee: bigint;
  durationDays: number;
}

/** NOT_ELIGIBLE naming what stands in the way (a restriction code, or the tier's limit). */
export const notEligible = (reason: string, message: string) => new AppError("NOT_ELIGIBLE", message, { field: "eligibility", reason });

export function createLoanFinancing(deps: {
  db: Db;
  repo: LoansRepo;
  clock: Pick<Clock, "now">;
  chainId: number;
  minScore: number;
  /** The most one loan may be under the limits on unproven loans (D-125); absent: no limit known. */
  unprovenRoom?: UnprovenRoom | undefined;
}) {
  const { repo } = deps;

  /**
   * A borrower's eligibility for `count` new loans of `principal` micro-USDC in all (when known), at
   * `now`, read in `tx`: the restrictions, then room under the cap of open loans, the tier's credit
   * and the pool's limits on unproven borrowers.
   */
  async function check(tx: Tx, payer: UserRecord, count: number, now: Date, principal?: bigint): Promise<Eligibility> {
    const standing = await repo.standing(tx, payer.id, payer.walletAddress, now);
    const room = await roomFor(payer.walletAddress, deps.unprovenRoom);
    const eligibility = eligibilityOf(payer, standing, now, deps.minScore, room);
    const blocking = eligibility.restrictions.filter((code) => code !== "MAX_LOANS_REACHED");
    if (blocking.length > 0) throw notEligible(blocking.join(","), `Not eligible for a loan now: ${blocking.join(", ")}`);
    if (count > eligibility.maxActiveLoans) {
      throw notEligible(
        "INSTALLMENTS_ABOVE_TIER",
        `This takes ${count} loans; your tier may have at most ${eligibility.maxActiveLoans} open at once`,
      );
    }
    if (eligibility.currentLoans + count > eligibility.maxActiveLoans) {
      throw notEligible(
        "MAX_LOANS_REACHED",
        `This takes ${count} loan${count === 1 ? "" : "s"}; you have ${eligibility.currentLoans} open of at most ${eligibility.maxActiveLoans}`,
      );
    }
    const credit = creditLeft(tierFor(payer.trustScore), standing);
    if (principal !== undefined && principal > credit) {
      throw notEligible(
        "AMOUNT_ABOVE_TIER",
        `Your tier's credit left beside your open loans is ${usdcNumber(credit)} USDC; this payment's loans are ${usdcNumber(principal)} USDC (the price less the merchant's fee, with the insurance fee every loan pays)`,
      );
    }
    if (principal !== undefined && room !== undefined && principal > room) {
      throw notEligible(
        "NEW_BORROWER_LIMIT",
        `The pool lends at most ${usdcNumber(room)} USDC now on a loan above what you have repaid in full yourself; this payment's loans are ${usdcNumber(principal)} USDC`,
      );
    }
    return eligibility;
  }

  return {
    /**
     * The payer's tier (maxAmount, maxDuration, rate) and eligibility for `count` loans of
     * `principal` in all now; throws NOT_ELIGIBLE.
     */
    async eligibility(payer: UserRecord, count: number, principal?: bigint) {
      const now = deps.clock.now();
      const eligibility = await deps.db.prisma.$transaction((tx) => check(tx, payer, count, now, principal));
      return { ...eligibility, interestRateBps: tierFor(payer.trustScore).interestRateBps };
    },

    /**
     * Reserves the plan's loans for `paymentId` in the caller's transaction (with the payment's
     * hold): the borrower's row locked, eligibility checked again, the loans written `funding`.
     */
    async reserve(
      tx: Tx,
      payer: UserRecord,
      plan: { paymentId: string; installments: Installment[]; purpose: string; rateBps: number | null },
    ) {
      const now = deps.clock.now();
      await repo.lockBorrower(tx, payer.id);
      // An earlier attempt at this payment that held it is over (its hold was free to take): its loans never were.
      await repo.settleFinancing(plan.paymentId, null, tx);
      const principal = plan.installments.reduce((sum, installment) => sum + installment.principal, 0n);
      await check(tx, payer, plan.installments.length, now, principal);
      await repo.insertFinancing(
        tx,
        plan.installments.map((installment) => ({
          id: installment.id,
          userId: payer.id,
          borrower: payer.walletAddress,
          chainId: deps.chainId,
          amount: installment.principal,
          insuranceFee: installment.insuranceFee,
          interest: installment.interest,
          interestRateBps: plan.rateBps ?? rateBpsOf(installment),
          durationDays: installment.durationDays,
          purpose: plan.purpose,
          createdAt: now,
          expiresAt: now,
          claimedAt: now,
          paymentId: plan.paymentId,
        })),
      );
    },

    /** The payment's transaction settled its loans: funded by `txHash`, or none (cancelled). */
    settle: (paymentId: string, txHash: string | null, tx?: Tx) => repo.settleFinancing(paymentId, txHash, tx, deps.clock.now()),

    /** The ids of the loans an attempt at `paymentId` reserved and that are not settled yet. */
    reserved: (paymentId: string) => repo.reservedFor(paymentId),
  };
}

export type LoanFinancing = ReturnType<typeof createLoanFinancing>;
