// Peer-to-peer loans for borrowers: eligibility by Trust Score tier, requests (pending until the
// pool funds them), the list and detail views, cancellation, and funding by the pool through the
// one transaction sender (a job once a request is LOAN_FUNDING_DELAY_S old, or the sandbox at
// once, the same code). Money in bigint micro-USDC, formatted only in the views.
import { randomUUID } from "node:crypto";
import type { Contract } from "ethers";
import type { Clock } from "../../core/clock.js";
import type { Logger } from "../../core/logger.js";
import { usdcNumber } from "../../core/money.js";
import type { Db } from "../db.js";
import { AppError } from "../errors.js";
import { domainEvent, recordEvents } from "../events/outbox.js";
import type { OperationKey } from "../idempotency/operation-key.js";
import type { RewardsConsumer } from "../rewards/consumer.js";
import { chainFailure } from "../transactions/failures.js";
import type { MirrorWait } from "../transactions/read-your-writes.js";
import { requireReceiptEvent } from "../transactions/receipts.js";
import { TransactionRevertedError, type TransactionSender } from "../transactions/sender.js";
import type { UserWrite } from "../transactions/user-write.js";
import { type Tier, tierFor } from "../trust-score/rules.js";
import { type UserRecord, withWallet } from "../users/repo.js";
import type { XpService } from "../xp/service.js";
import { eligibilityOf } from "./eligibility.js";
import { loanIdFromRef, refFromLoanId } from "./ids.js";
import { type BorrowerStanding, type LoanRow, type LoanStatus, type LoansRepo, loanIdOf, loanStatus } from "./repo.js";
import { extensionInterest, loanTerms } from "./terms.js";

export { MAX_ACTIVE_LOANS, RECENT_DEFAULT_DAYS } from "./eligibility.js";
/** How long a request waits for funding before it lapses (becomes cancelled). */
export const REQUEST_LIFETIME_HOURS = 72;
/** The shortest and longest terms (the spec's 7 to 90 days; the tier caps the longest further). */
export const MIN_DURATION_DAYS = 7;
export const MAX_DURATION_DAYS = 90;
/** The smallest loan: below it the fee and interest round to nothing worth a transaction. */
export const MIN_LOAN_MICRO = 1_000_000n;
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
/** How long a funder's claim on a request stands before another funder may retry it (its sender waits 60 s for a receipt). */
const CLAIM_STALE_MS = 120_000;
const DAY_MS = 86_400_000;

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
    sender: Pick<TransactionSender, "send">;
    mirror: Pick<MirrorWait, "untilIndexed">;
    /** The one path of a user's money write (a repayment is the borrower's; domain/transactions/user-write.ts). */
    userWrite: UserWrite;
    rewards: Pick<RewardsConsumer, "xpOf" | "runTrust">;
  };
  /** LOAN_FUNDING_DELAY_S: how old a request is before the pool funds it by itself. */
  fundingDelaySeconds: number;
  /**
   * LOAN_MIN_SCORE: below this Trust Score a user may not borrow (SCORE_TOO_LOW). 0 by default, so
   * that the tier table holds from its first row: tier New starts at score 0.
   */
  minScore: number;
}

const rate = (bps: number) => bps / 10_000;

export function createLoansService(deps: LoansServiceDeps) {
  const { db, repo } = deps;

  const eligibilityFrom = (user: UserRecord, standing: BorrowerStanding, now: Date) => eligibilityOf(user, standing, now, deps.minScore);

  /**
   * Whole days left of the term: all of it while pending (it starts at funding), the days to the
   * due date rounded up while active, none once overdue or closed.
   */
  function daysRemainingOf(row: LoanRow, status: LoanStatus, now: Date): number {
    if (status === "pending") return row.durationDays;
    if (status !== "active" || !row.dueDate) return 0;
    // From the funding at the earliest: a development chain's block time may run a few seconds
    // ahead of the service clock.
    const from = Math.max(now.getTime(), row.fundedAt?.getTime() ?? 0);
    return Math.max(0, Math.ceil((row.dueDate.getTime() - from) / DAY_MS));
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
  function checkTerms(tier: Tier, input: { amount: bigint; duration: number }) {
    if (input.amount < MIN_LOAN_MICRO || input.amount > BigInt(tier.maxAmount) * 1_000_000n) {
      throw new AppError("INVALID_AMOUNT", `The amount must be from 1 to ${tier.maxAmount} USDC for the ${tier.tier} tier`, {
        field: "amount",
        reason: `1 to ${tier.maxAmount} USDC`,
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
   * Funds a claimed request through the sender as the pool's operator (`fundLoan`), then waits
   * for the mirror. A refusal the pool can outgrow (liquidity, pause) gives the claim back.
   */
  async function fundClaimed(loanId: string): Promise<"funded" | "waiting"> {
    const chain = deps.chain;
    if (!chain) throw new Error("this process has no chain to fund loans on");
    const request = (await repo.request(loanId))!;
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
      await repo.release(loanId);
      if (error instanceof TransactionRevertedError) {
        deps.logger?.info({ loanId, revert: error.revert?.name ?? error.message }, "the pool cannot fund this loan now; it waits");
        return "waiting";
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
    async eligibility(user: UserRecord) {
      const now = deps.clock.now();
      const standing = await db.prisma.$transaction((tx) => repo.standing(tx, user.id, user.walletAddress, now));
      return eligibilityFrom(user, standing, now);
    },

    /**
     * A new request at the tier's terms, checked and written under the borrower's row lock, so
     * concurrent requests never pass the cap of open loans together. Records `loan.created` and
     * the `loan_created` activity (no XP: asking is not an achievement) in the same transaction.
     */
    async request(user: UserRecord, input: { amount: bigint; duration: number; purpose?: string }) {
      const now = deps.clock.now();
      const tier = tierFor(user.trustScore);
      const id = randomUUID();
      const expiresAt = new Date(now.getTime() + REQUEST_LIFETIME_HOURS * 3_600_000);
      await db.prisma.$transaction(async (tx) => {
        await repo.lockBorrower(tx, user.id);
        const eligibility = eligibilityFrom(user, await repo.standing(tx, user.id, user.walletAddress, now), now);
        if (!eligibility.eligible) {
          throw new AppError("NOT_ELIGIBLE", `Not eligible for a loan now: ${eligibility.restrictions.join(", ")}`, {
            field: "eligibility",
            reason: eligibility.restrictions.join(","),
          });
        }
        checkTerms(tier, input);
        const terms = loanTerms(input.amount, tier.interestRateBps);
        await repo.insertRequest(tx, {
          id,
          userId: user.id,
          borrower: user.walletAddress,
          chainId: deps.chain?.chainId ?? 0,
          amount: terms.amount,
          insuranceFee: terms.insuranceFee,
          interest: terms.interest,
          interestRateBps: tier.interestRateBps,
          durationDays: input.duration,
          purpose: input.purpose ?? null,
          createdAt: now,
          expiresAt,
        });
        await deps.xp.awardXp(tx, user.id, { type: "loan_created", description: "Asked for a loan", xp: 0, sourceId: id }, now);
        await recordEvents(tx, [
          domainEvent({
            type: "loan.created",
            userId: user.id,
            data: {
              loanId: id,
              userId: user.id,
              amount: usdcNumber(terms.amount),
              netAmount: usdcNumber(terms.netAmount),
              duration: input.duration,
              interestRate: tier.interestRate,
              totalRepayment: usdcNumber(terms.totalRepayment),
              expiresAt: expiresAt.toISOString(),
              raw: { amount: terms.amount, interest: terms.interest, insuranceFee: terms.insuranceFee },
            },
            dedupeKey: `loan.created:${id}`,
            now,
          }),
        ]);
      });
      deps.invalidateUser(user.id);
      const view = detailView(await rowOf(user, id), deps.clock.now(), user.id);
      return {
        id: view.id,
        status: "pending" as const,
        amount: view.amount,
        netAmount: view.netAmount,
        insuranceFee: view.insuranceFee,
        duration: view.duration,
        interestRate: view.interestRate,
        totalRepayment: view.totalRepayment,
        ...(view.purpose !== undefined && { purpose: view.purpose }),
        createdAt: view.createdAt,
        expiresAt: view.expiresAt!,
      };
    },

    async detail(user: UserRecord, loanId: string) {
      return detailView(await rowOf(user, loanId), deps.clock.now(), user.id);
    },

    /** The user's loans, newest first, optionally of one status; the list view's fields. */
    async list(user: UserRecord, query: { status?: string; limit: number; offset: number }) {
      const now = deps.clock.now();
      const all = (await repo.loansOf(user.id, user.walletAddress)).map((row) => detailView(row, now, user.id));
      const matching = query.status ? all.filter((loan) => loan.status === query.status) : all;
      const page = matching.slice(query.offset, query.offset + query.limit);
      return {
        data: page.map((loan) => ({
          id: loan.id,
          status: loan.status,
          amount: loan.amount,
          remainingBalance: loan.remainingBalance,
          ...(loan.dueDate !== undefined && { dueDate: loan.dueDate }),
          daysRemaining: loan.daysRemaining,
        })),
        pagination: {
          total: matching.length,
          limit: query.limit,
          offset: query.offset,
          hasMore: query.offset + page.length < matching.length,
        },
      };
    },

    /**
     * Repays `amount` micro-USDC of the user's loan from their managed wallet, as their own
     * transaction (an EIP-2612 permit and a forwarded repayWithPermit). An amount at or above the
     * payoff closes the loan and the LoanBook takes only the payoff. Answers after the mirror, with
     * the XP and the Trust Score change the repayment brought. An amount the LoanBook would take
     * for nothing (not positive, or dust: checkPayment) is refused before anything is sent.
     */
    async repay(user: UserRecord, loanId: string, amount: bigint, operation: OperationKey) {
      if (amount <= 0n || amount > MAX_PAYMENT_MICRO) {
        throw new AppError("INVALID_AMOUNT", `A repayment is more than 0 and at most ${usdcNumber(MAX_PAYMENT_MICRO)} USDC`, {
          field: "amount",
          reason: `more than 0 and at most ${usdcNumber(MAX_PAYMENT_MICRO)} USDC`,
        });
      }
      const row = await rowOf(user, loanId);
      const chainLoanId = openLoan(row, deps.clock.now());
      checkPayment(row, amount);
      const chain = chainOrFail();
      const loanBook = chain.loanBook;
      const sent = await chain.userWrite.send({
        user,
        purpose: "loan.repay",
        operation,
        to: loanBook.target as string,
        call: {
          permit: { spender: loanBook.target as string, value: amount },
          data: (permit) =>
            loanBook.interface.encodeFunctionData("repayWithPermit", [chainLoanId, amount, permit.deadline, permit.v, permit.r, permit.s]),
        },
        reverts: (revert) => {
          if (revert.name !== "LoanBookLoanNotOpen") return undefined;
          return (revert.args[1] as bigint) === 3n
            ? new AppError("ALREADY_REPAID", "This loan is already repaid")
            : new AppError("CONFLICT", "This loan takes no more payments", { field: "loanId", reason: "closed" });
        },
      });
      const { args: payment, eventId } = chain.userWrite.eventOf<{ amount: bigint; remainingBalance: bigint; closed: boolean }>(
        loanBook,
        sent,
        "LoanRepaymentMade",
      );
      let xpEarned = 0;
      let trustScoreChange = 0;
      if (sent.indexed && payment.closed) {
        // The repayment's own XP and Trust Score, applied now rather than by the worker's next run.
        const repaid = eventId("loan.repaid");
        const before = await db.prisma.user.findUniqueOrThrow({ where: { id: user.id }, select: { trustScore: true } });
        xpEarned = (await chain.rewards.xpOf(deps.clock.now(), repaid)) ?? 0;
        await chain.rewards.runTrust(deps.clock.now(), [repaid]);
        const after = await db.prisma.user.findUniqueOrThrow({ where: { id: user.id }, select: { trustScore: true } });
        trustScoreChange = after.trustScore - before.trustScore;
        deps.invalidateUser(user.id);
      }
      return {
        loanId: loanIdOf(row),
        amountPaid: usdcNumber(payment.amount),
        remainingBalance: usdcNumber(payment.remainingBalance),
        status: payment.closed ? ("repaid" as const) : loanStatus(row, deps.clock.now()),
        trustScoreChange,
        xpEarned,
        txHash: sent.txHash,
      };
    },

    /** What closing the loan now takes (the LoanBook's payoffQuote at the chain's latest block). */
    async payoff(user: UserRecord, loanId: string) {
      const row = await rowOf(user, loanId);
      const chainLoanId = openLoan(row, deps.clock.now());
      const chain = chainOrFail();
      const quote = (await chain.loanBook.payoffQuote(chainLoanId)) as {
        originalTotal: bigint;
        payoffAmount: bigint;
        interestSaved: bigint;
        daysEarly: bigint;
      };
      return {
        loanId: loanIdOf(row),
        originalTotal: usdcNumber(quote.originalTotal),
        earlyPayoffAmount: usdcNumber(quote.payoffAmount),
        interestSaved: usdcNumber(quote.interestSaved),
        daysEarly: Number(quote.daysEarly),
      };
    },

    /**
     * Extends an active loan by `days` for the interest of those days at the loan's own daily rate
     * (terms.ts): once per loan, before its due date, and within the borrower's tier's longest
     * term. The pool's operator sends the LoanBook's extend; the answer waits for the mirror.
     */
    async extend(user: UserRecord, loanId: string, days: number, operation: OperationKey) {
      const now = deps.clock.now();
      const row = await rowOf(user, loanId);
      const chainLoanId = openLoan(row, now);
      const chain = chainOrFail();
      const tier = tierFor(user.trustScore);
      const refuse = (reason: string) => {
        throw new AppError("EXTENSION_NOT_ALLOWED", `This loan cannot be extended: ${reason}`, { field: "days", reason });
      };
      if (loanStatus(row, now) !== "active" || row.dueDate! <= now) refuse("it is past its due date");
      if (row.extensions >= MAX_EXTENSIONS) refuse("a loan is extended at most once");
      if (row.durationDays + days > Math.min(tier.maxDuration, MAX_DURATION_DAYS)) {
        refuse(`the term would pass ${Math.min(tier.maxDuration, MAX_DURATION_DAYS)} days, the longest of the ${tier.tier} tier`);
      }
      const additionalInterest = extensionInterest({ interest: row.interest, durationDays: row.durationDays }, days);
      const sent = await chain.sender
        .send({
          purpose: "loan.extend",
          userId: user.id,
          ...operation,
          to: chain.loanBook.target as string,
          data: chain.loanBook.interface.encodeFunctionData("extend", [chainLoanId, days, additionalInterest]),
        })
        .catch((error) =>
          chainFailure(error, (revert) =>
            revert.name === "LoanBookPastDue" || revert.name === "LoanBookLoanNotActive"
              ? new AppError("EXTENSION_NOT_ALLOWED", "This loan cannot be extended: it is past its due date", {
                  field: "days",
                  reason: "past due",
                })
              : revert.name === "LoanBookInvalidExtension" || revert.name === "LoanBookInterestTooHigh"
                ? new AppError("EXTENSION_NOT_ALLOWED", "This loan cannot be extended by so many days", {
                    field: "days",
                    reason: revert.name,
                  })
                : undefined,
          ),
        );
      await chain.mirror.untilIndexed(sent.blockNumber);
      const extended = requireReceiptEvent<{ newDueDate: bigint }>(chain.loanBook, sent.receipt, "LoanExtended").args;
      return {
        loanId: loanIdOf(row),
        extensionGranted: true,
        newDueDate: new Date(Number(extended.newDueDate) * 1_000).toISOString(),
        additionalInterest: usdcNumber(additionalInterest),
      };
    },

    /**
     * The due-date job: reminds borrowers a day before (a `loan.due_reminder` event, once per
     * loan and due date), marks loans past their due date overdue, and defaults those past the
     * LoanBook's grace period (its insurance reserve covers its share). Anyone may call the
     * LoanBook's markOverdue and markDefaulted; the pool's operator does, through the sender.
     */
    async runDueDates(now: Date) {
      const chain = chainOrFail();
      const graceDays = Number(((await chain.loanBook.limits()) as { gracePeriodDays: bigint }).gracePeriodDays);
      const reminders = await repo.openLoansDueBefore(new Date(now.getTime() + REMINDER_HOURS * 3_600_000), 200);
      const soon = reminders.filter((loan) => loan.status === "active" && loan.dueDate > now && loan.userId);
      if (soon.length > 0) {
        await db.prisma.$transaction(async (tx) => {
          const rows = await Promise.all(
            soon.map(async (loan) => {
              const balance = await tx.loanChainState.findFirstOrThrow({ where: { ref: loan.ref }, select: { remainingBalance: true } });
              return domainEvent({
                type: "loan.due_reminder",
                userId: loan.userId!,
                data: {
                  loanId: loanIdFromRef(loan.ref),
                  userId: loan.userId!,
                  dueDate: loan.dueDate.toISOString(),
                  remainingBalance: usdcNumber(BigInt(balance.remainingBalance)),
                },
                dedupeKey: `loan.due_reminder:${loan.ref}:${loan.dueDate.toISOString()}`,
                now,
              });
            }),
          );
          await recordEvents(tx, rows);
        });
      }
      let overdue = 0;
      let defaulted = 0;
      for (const loan of await repo.openLoansDueBefore(now, 200)) {
        const pastGrace = loan.dueDate.getTime() + graceDays * DAY_MS < now.getTime();
        const action = pastGrace ? "markDefaulted" : loan.status === "active" ? "markOverdue" : null;
        if (!action) continue;
        try {
          await chain.sender.send({
            purpose: pastGrace ? "loan.default" : "loan.overdue",
            // Keyed by the loan: a repeated or concurrent run finds the transaction sent first.
            userId: loan.userId ?? "pool",
            idempotencyKey: `${chain.chainId}:${loan.loanId}`,
            to: chain.loanBook.target as string,
            data: chain.loanBook.interface.encodeFunctionData(action, [loan.loanId]),
          });
          if (pastGrace) defaulted += 1;
          else overdue += 1;
        } catch (error) {
          // Not due yet by the chain's clock, or repaid meanwhile: the next run looks again.
          if (!(error instanceof TransactionRevertedError)) throw error;
        }
      }
      return { reminded: soon.length, overdue, defaulted };
    },

    /** Cancels a pending request; a funded loan must be repaid instead. */
    async cancel(user: UserRecord, loanId: string) {
      const row = await rowOf(user, loanId);
      const now = deps.clock.now();
      const status = loanStatus(row, now);
      if (status === "repaid") throw new AppError("ALREADY_REPAID", "This loan is already repaid");
      if (status !== "pending" || !row.id || !(await repo.cancel(user.id, row.id, now))) {
        throw new AppError("CONFLICT", `Only pending loans can be cancelled; this one is ${loanStatus(await rowOf(user, loanId), now)}`, {
          field: "loanId",
          reason: "not pending",
        });
      }
      return { loanId: row.id, status: "cancelled" as const, cancelledAt: now.toISOString() };
    },

    /**
     * Funds one request at once (the sandbox's /dev/loans/{loanId}/fund, and the job): the same
     * claim, transaction and mirror wait. Answers the loan's detail as its borrower sees it.
     */
    async fundNow(loanId: string) {
      const now = deps.clock.now();
      const request = /^[0-9a-f-]{36}$/i.test(loanId) ? await repo.request(loanId.toLowerCase()) : null;
      if (!request) throw new AppError("LOAN_NOT_FOUND", "Loan not found");
      const id = request.id;
      if (request.status !== "funded") {
        const claimed = await repo.claim(id, now, new Date(now.getTime() - CLAIM_STALE_MS));
        if (!claimed) {
          const status = loanStatus({ chainStatus: null, requestStatus: request.status, expiresAt: request.expiresAt }, now);
          throw new AppError("CONFLICT", `This loan cannot be funded: it is ${request.status === "funding" ? "being funded" : status}`, {
            field: "loanId",
            reason: status,
          });
        }
        if ((await fundClaimed(id)) === "waiting") {
          throw new AppError("INSUFFICIENT_LIQUIDITY", "The pool cannot fund this loan now (liquidity or pause); it stays pending");
        }
      }
      const owner = withWallet(await db.prisma.user.findUniqueOrThrow({ where: { id: request.userId } }));
      return detailView(await rowOf(owner, id), deps.clock.now(), owner.id);
    },

    /**
     * The funding job: lapses requests past their expiry, then funds the requests that are at
     * least LOAN_FUNDING_DELAY_S old, oldest first, while the pool can. Returns what it did.
     */
    async fundDue(now: Date) {
      const lapsed = await repo.lapse(now);
      const due = await repo.dueForFunding(
        now,
        new Date(now.getTime() - deps.fundingDelaySeconds * 1_000),
        new Date(now.getTime() - CLAIM_STALE_MS),
        20,
      );
      let funded = 0;
      for (const { id } of due) {
        if (!(await repo.claim(id, now, new Date(now.getTime() - CLAIM_STALE_MS)))) continue;
        if ((await fundClaimed(id)) === "funded") funded += 1;
        else break; // the pool is short now: later, smaller requests wait their turn
      }
      return { lapsed, funded, waiting: due.length - funded };
    },
  };
}

export type LoansService = ReturnType<typeof createLoansService>;
