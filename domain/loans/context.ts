// What every part of the loans service shares: the rules' constants, the dependencies, the views
// of a loan, the checks of terms and payments, and the pool's claimed funding of a request.
import type { Contract } from "ethers";
import { type Clock, DAY_MS, HOUR_MS } from "../../core/clock.js";
import type { Logger } from "../../core/logger.js";
import { MICRO_PER_USDC, usdcNumber } from "../../core/money.js";
import type { Db } from "../db.js";
import { AppError } from "../errors.js";
import type { RewardsConsumer } from "../rewards/consumer.js";
import { TransactionRefusedError, TransactionRevertedError } from "../transactions/failures.js";
import type { MirrorWait } from "../transactions/read-your-writes.js";
import type { TransactionSender } from "../transactions/sender.js";
import type { UserWrite } from "../transactions/user-write.js";
import { type Tier, tierFor } from "../trust-score/rules.js";
import { freshUser, type UserRecord } from "../users/repo.js";
import type { XpService } from "../xp/service.js";
import { creditWithin, eligibilityOf, type UnprovenRoom } from "./eligibility.js";
import { refFromLoanId } from "./ids.js";
import { type BorrowerStanding, type LoanRow, type LoanStatus, type LoansRepo, loanIdOf, loanStatus } from "./repo.js";
import { loanTerms, MIN_LOAN_MICRO, MIN_TERM_DAYS } from "./terms.js";

export { MAX_ACTIVE_LOANS, RECENT_DEFAULT_DAYS } from "./eligibility.js";
/** How long a request waits for funding before it lapses (becomes cancelled). */
export const REQUEST_LIFETIME_HOURS = 72;
/** The shortest and longest terms (the spec's 7 to 90 days; the tier caps the longest further). */
export const MIN_DURATION_DAYS = MIN_TERM_DAYS;
/** The spec's longest term, days (Elite's maxDuration; the LoanBook's maxDurationDays). */
export const MAX_DURATION_DAYS = 90;
export { MIN_LOAN_MICRO };
/**
 * The smallest repayment, 0.01 USDC (the smallest amount the API shows with two decimals): less is
 * a transaction the service pays gas for that moves nothing visible. Paying the whole remaining
 * balance is allowed below it, so a loan can always be closed.
 */
export const MIN_PAYMENT_MICRO = 10_000n;
/** The largest repayment one request may offer: far above any loan's balance (the LoanBook takes only the payoff). */
export const MAX_PAYMENT_MICRO = 1_000_000n * 1_000_000n;
/** How long before the due date the borrower is reminded (a `loan.due_reminder` event). */
export const REMINDER_HOURS = 24;
/** Extensions a loan may have (documented in docs/decisions.md, "Loan extensions"). */
export const MAX_EXTENSIONS = 1;

export type { Restriction } from "./eligibility.js";

export interface LoansServiceDeps {
  db: Db;
  clock: Pick<Clock, "now">;
  repo: LoansRepo;
  xp: Pick<XpService, "awardXp">;
  invalidateUser(userId: string): void;
  logger?: Pick<Logger, "warn" | "info">;
  /** The pool's side: absent in processes without a chain (they serve reads and requests only). */
  chain?: {
    chainId: number;
    loanBook: Contract;
    sender: Pick<TransactionSender, "send" | "earlier" | "releaseKey">;
    mirror: Pick<MirrorWait, "untilIndexed">;
    /** The one path of a user's money write (a repayment is the borrower's; domain/transactions/user-write.ts). */
    userWrite: UserWrite;
    rewards: Pick<RewardsConsumer, "takeTrust">;
  };
  /** The most one loan may be under the limits on unproven loans (D-125); absent: no limit known. */
  unprovenRoom?: UnprovenRoom | undefined;
  /** LOAN_FUNDING_DELAY_S: how old a request is before the pool funds it by itself. */
  fundingDelaySeconds: number;
  /**
   * LOAN_MIN_SCORE: below this Trust Score a user may not borrow (SCORE_TOO_LOW). 0 by default, so
   * that the tier table holds from its first row: tier New starts at score 0.
   */
  minScore: number;
}

export const rate = (bps: number) => bps / 10_000;

/** What the service's parts share. */
export function loansContext(deps: LoansServiceDeps) {
  const { db, repo } = deps;

  const eligibilityFrom = (user: UserRecord, standing: BorrowerStanding, now: Date, room?: bigint) =>
    eligibilityOf(user, standing, now, deps.minScore, room);

  /**
   * Whole days left of the term: all of it while pending (it starts at funding), the days to the
   * due date rounded up while active (within the last hour, none), none once overdue or closed.
   */
  function daysRemainingOf(row: LoanRow, status: LoanStatus, now: Date): number {
    if (status === "pending") return row.durationDays;
    if (status !== "active" || !row.dueDate) return 0;
    // From the funding at the earliest: a development chain's block time may run a few seconds
    // ahead of the service clock.
    const from = Math.max(now.getTime(), row.fundedAt?.getTime() ?? 0);
    // The loan book rounds a due date up to the whole hour (D-123): that hour is no day of the term.
    return Math.max(0, Math.ceil((row.dueDate.getTime() - HOUR_MS - from) / DAY_MS));
  }

  /**
   * A loan as its borrower sees it (`borrowerId`: theirs, also for a loan funded outside the API).
   * A field the loan does not have yet is left out, never null: purpose when none was given; the
   * funding's time, due date and transaction until the mirror has the loan; expiresAt for a loan
   * funded outside the API (it had no request); cancelledAt unless cancelled.
   */
  function detailView(row: LoanRow, now: Date, borrowerId: string) {
    const status = loanStatus(row, now);
    const totalRepayment = row.amount + row.interest;
    const funded = row.chainStatus !== null;
    const remaining = funded ? row.remainingBalance! : status === "pending" ? totalRepayment : 0n;
    return {
      id: loanIdOf(row),
      borrower: borrowerId,
      status,
      amount: usdcNumber(row.amount),
      netAmount: usdcNumber(row.amount - row.insuranceFee),
      insuranceFee: usdcNumber(row.insuranceFee),
      duration: row.durationDays,
      interestRate:
        row.interestRateBps === null ? Number((Number(row.interest) / Number(row.amount)).toFixed(4)) : rate(row.interestRateBps),
      totalRepayment: usdcNumber(totalRepayment),
      ...(row.purpose !== null && { purpose: row.purpose }),
      amountPaid: usdcNumber(row.totalPaid ?? 0n),
      remainingBalance: usdcNumber(remaining),
      createdAt: row.createdAt.toISOString(),
      ...(row.expiresAt && { expiresAt: row.expiresAt.toISOString() }),
      ...(funded && {
        fundedAt: row.fundedAt!.toISOString(),
        dueDate: row.dueDate!.toISOString(),
        txHash: row.fundTxHash!,
      }),
      daysRemaining: daysRemainingOf(row, status, now),
      ...(status === "cancelled" && { cancelledAt: (row.cancelledAt ?? row.expiresAt)!.toISOString() }),
    };
  }

  /**
   * The request's own terms against the borrower's tier (service-spec: INVALID_AMOUNT,
   * INVALID_DURATION), zero and negative amounts included: the schema checks only their form.
   */
  /** The request's terms within the tier, its amount within the credit `creditLeft` beside the open loans (D-122). */
  function checkTerms(tier: Tier, input: { amount: bigint; duration: number }, creditLeft: bigint, room?: bigint) {
    const most = usdcNumber(creditWithin(creditLeft, room));
    if (input.amount < MIN_LOAN_MICRO || input.amount > creditWithin(creditLeft, room)) {
      const why =
        room !== undefined && room < creditLeft
          ? ` now: a loan above what you have repaid in full yourself is held to the pool's limits on such loans`
          : ` for the ${tier.tier} tier${most < tier.maxAmount ? ` (${tier.maxAmount} USDC less your open loans)` : ""}`;
      throw new AppError("INVALID_AMOUNT", `The amount must be from 1 to ${most} USDC${why}`, {
        field: "amount",
        reason: `1 to ${most} USDC`,
      });
    }
    const longest = Math.min(tier.maxDuration, MAX_DURATION_DAYS);
    if (input.duration < MIN_DURATION_DAYS || input.duration > longest) {
      const range = longest === MIN_DURATION_DAYS ? `${longest} days` : `${MIN_DURATION_DAYS} to ${longest} days`;
      throw new AppError("INVALID_DURATION", `The duration must be ${range} for the ${tier.tier} tier`, {
        field: "duration",
        reason: range,
      });
    }
  }

  /** A positive repayment below MIN_PAYMENT_MICRO is INVALID_AMOUNT, unless it pays the whole remaining balance. */
  function checkPayment(row: LoanRow, amount: bigint) {
    const remaining = row.remainingBalance ?? 0n;
    if (amount >= MIN_PAYMENT_MICRO || amount >= remaining) return;
    throw new AppError(
      "INVALID_AMOUNT",
      `A repayment is at least ${usdcNumber(MIN_PAYMENT_MICRO)} USDC, or the whole remaining balance (${usdcNumber(remaining)} USDC)`,
      { field: "amount", reason: `at least ${usdcNumber(MIN_PAYMENT_MICRO)} USDC, or the whole remaining balance` },
    );
  }

  async function rowOf(user: UserRecord, loanId: string): Promise<LoanRow> {
    const rows = await repo.loansOf(user.id, user.walletAddress);
    const row = rows.find((candidate) => loanIdOf(candidate) === loanId.toLowerCase());
    // Another user's loan is as unknown as a missing one.
    if (!row) throw new AppError("LOAN_NOT_FOUND", "Loan not found");
    return row;
  }

  /**
   * The terms a claimed request is funded at (D-89): the borrower's at the moment of funding, not
   * the request's. Refused when a restriction now stands in the way (an overdue loan, a recent
   * default, a score below LOAN_MIN_SCORE), when the amount or the term is above the borrower's
   * tier now, or when the tier's rate is now higher (the borrower did not agree to it); re-priced
   * at the tier's rate when it is now lower (in the borrower's favour).
   */
  async function termsAtFunding(
    request: NonNullable<Awaited<ReturnType<LoansRepo["request"]>>>,
    now: Date,
  ): Promise<{ refused: string; why: string } | { rateBps: number; interest: bigint }> {
    const borrower = await freshUser(db.prisma, request.userId);
    const standing = await repo.standing(db.prisma, borrower.id, borrower.walletAddress, now);
    const blocking = eligibilityFrom(borrower, standing, now).restrictions.filter((code) => code !== "MAX_LOANS_REACHED");
    const tier = tierFor(borrower.trustScore);
    if (borrower.deletedAt) return { refused: "ACCOUNT_DELETED", why: "the account was deleted" };
    if (blocking.length > 0) return { refused: blocking.join(","), why: `not eligible now (${blocking.join(", ")})` };
    // The request is one of the open loans the standing counts: together they stay within the tier's credit.
    if (standing.creditInUse > BigInt(tier.maxAmount) * MICRO_PER_USDC || request.durationDays > tier.maxDuration) {
      return {
        refused: "TERMS_ABOVE_TIER",
        why: `your ${tier.tier} tier now lends up to ${tier.maxAmount} USDC for ${tier.maxDuration} days`,
      };
    }
    if (tier.interestRateBps > request.interestRateBps) {
      return { refused: "RATE_ROSE", why: `your ${tier.tier} tier's rate is now ${tier.interestRateBps / 100} %` };
    }
    return { rateBps: tier.interestRateBps, interest: loanTerms(request.amount, tier.interestRateBps).interest };
  }

  /**
   * Funds a claimed request through the sender as the pool's operator (`fundLoan`) at the
   * borrower's terms now (termsAtFunding: re-priced, or refused and cancelled with `loan.refused`
   * to the borrower), then waits for the mirror. A refusal the pool can outgrow (liquidity, pause)
   * gives the claim back: "waiting" for the pool, "held" for this borrower (the limits on
   * unproven borrowers).
   */
  async function fundClaimed(loanId: string, resumed = false): Promise<"funded" | "waiting" | "held" | { refused: string; why: string }> {
    const chain = deps.chain;
    if (!chain) throw new Error("this process has no chain to fund loans on");
    const now = deps.clock.now();
    let request = (await repo.request(loanId))!;
    // A request funded before (its transaction recorded) is settled as it was sent, never re-priced;
    // unless that transaction did nothing (a reorganisation removed it and it reverted when broadcast
    // again, D-94): the request is funded anew. The chain funds a loan's ref once, so only one can.
    const recorded = await chain.sender.earlier({ userId: request.userId, idempotencyKey: loanId, purpose: "loan.fund" });
    const didNothing = recorded && (recorded.status === "reverted" || recorded.status === "failed");
    if (didNothing) await chain.sender.releaseKey(recorded);
    if (!recorded || didNothing) {
      const terms = await termsAtFunding(request, now);
      if ("refused" in terms) {
        await repo.refuse(loanId, { reason: terms.refused, why: terms.why }, now);
        deps.invalidateUser(request.userId);
        return terms;
      }
      if (terms.rateBps !== request.interestRateBps) request = await repo.reprice(loanId, terms);
    }
    try {
      const sent = await chain.sender.send({
        purpose: "loan.fund",
        userId: request.userId,
        idempotencyKey: loanId,
        to: chain.loanBook.target as string,
        data: chain.loanBook.interface.encodeFunctionData("fundLoan", [
          refFromLoanId(loanId),
          request.borrower,
          request.amount,
          request.interest,
          request.insuranceFee,
          request.durationDays,
        ]),
      });
      await repo.markFunded(loanId, sent.txHash);
      await chain.mirror.untilIndexed(sent.blockNumber);
      return "funded";
    } catch (error) {
      if (error instanceof TransactionRevertedError && error.revert?.name === "LoanBookDuplicateRef") {
        // Funded already (the chain has this ref): only the request's status was behind.
        await repo.markFunded(loanId, request.fundTxHash ?? "");
        return "funded";
      }
      // The recorded funding found gone for good (its nonce taken in a new branch): funded anew, once.
      if (error instanceof TransactionRefusedError && recorded && !didNothing && !resumed) return fundClaimed(loanId, true);
      await repo.release(loanId);
      if (error instanceof TransactionRevertedError) {
        deps.logger?.info({ loanId, revert: error.revert?.name ?? error.message }, "the pool cannot fund this loan now; it waits");
        // Held by the limits on unproven borrowers (D-125): the borrower's, not the pool's, so others go on.
        return error.revert?.name === "LoanBookUnprovenLimitReached" ? "held" : "waiting";
      }
      throw error;
    }
  }

  /** The funded loan of a row, or the spec's refusal for a loan that cannot take a payment now. */
  function openLoan(row: LoanRow, now: Date): bigint {
    const status = loanStatus(row, now);
    if (status === "repaid") throw new AppError("ALREADY_REPAID", "This loan is already repaid");
    if ((status !== "active" && status !== "overdue") || row.chainLoanId === null) {
      throw new AppError("CONFLICT", `Only a funded, open loan takes payments; this one is ${status}`, { field: "loanId", reason: status });
    }
    return row.chainLoanId;
  }

  function chainOrFail() {
    if (!deps.chain) throw new AppError("SERVICE_UNAVAILABLE", "This process has no chain to send loan transactions to");
    return deps.chain;
  }

  return {
    deps,
    db,
    repo,
    eligibilityFrom,
    daysRemainingOf,
    detailView,
    checkTerms,
    checkPayment,
    rowOf,
    fundClaimed,
    openLoan,
    chainOrFail,
  };
}

export type LoansContext = ReturnType<typeof loansContext>;
