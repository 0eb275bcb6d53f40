// A borrower's loans: eligibility by Trust Score tier, requests (pending until the pool funds
// them), the list and detail views, repayments (the borrower's own transaction through the relay),
// the payoff figure, an extension, and cancellation.
import { randomUUID } from "node:crypto";
import { usdcNumber } from "../../core/money.js";
import { AppError } from "../errors.js";
import { domainEvent, recordEvents } from "../events/outbox.js";
import type { OperationKey } from "../idempotency/operation-key.js";
import { listingInMemory, type PageRequest, paginate } from "../pagination.js";
import { chainFailure } from "../transactions/failures.js";
import { requireReceiptEvent } from "../transactions/receipts.js";
import { tierFor } from "../trust-score/rules.js";
import { freshUser, type UserRecord } from "../users/repo.js";
import { type LoansContext, MAX_DURATION_DAYS, MAX_EXTENSIONS, MAX_PAYMENT_MICRO, REQUEST_LIFETIME_HOURS } from "./context.js";
import { creditLeft, roomFor } from "./eligibility.js";
import { loanIdOf, loanStatus } from "./repo.js";
import { extensionInterest, loanTerms, MIN_LOAN_MICRO } from "./terms.js";

export function createBorrowerLoans({
  deps,
  db,
  repo,
  eligibilityFrom,
  detailView,
  checkTerms,
  checkPayment,
  rowOf,
  openLoan,
  chainOrFail,
}: LoansContext) {
  return {
    async eligibility(user: UserRecord) {
      const now = deps.clock.now();
      const standing = await db.prisma.$transaction((tx) => repo.standing(tx, user.id, user.walletAddress, now));
      return eligibilityFrom(user, standing, now, await roomFor(user.walletAddress, deps.unprovenRoom));
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
      // The limits on unproven loans are the chain's, not reserved here: read before the borrower's row lock.
      const room = await roomFor(user.walletAddress, deps.unprovenRoom);
      await db.prisma.$transaction(async (tx) => {
        await repo.lockBorrower(tx, user.id);
        const standing = await repo.standing(tx, user.id, user.walletAddress, now);
        const eligibility = eligibilityFrom(user, standing, now, room);
        // Only the pool's room for unproven borrowers stands in the way: say so.
        const held =
          room !== undefined &&
          room < MIN_LOAN_MICRO &&
          creditLeft(tier, standing) >= MIN_LOAN_MICRO &&
          standing.openLoans < tier.maxActiveLoans &&
          eligibility.restrictions.length === 1;
        if (!eligibility.eligible) {
          const why = held
            ? "the pool lends no more now on loans above what borrowers have repaid in full themselves (try again later)"
            : eligibility.restrictions.join(", ");
          throw new AppError("NOT_ELIGIBLE", `Not eligible for a loan now: ${why}`, {
            field: "eligibility",
            reason: eligibility.restrictions.join(","),
          });
        }
        checkTerms(tier, input, creditLeft(tier, standing), room);
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
    async list(user: UserRecord, filter: { status?: string | undefined }, page: PageRequest) {
      const now = deps.clock.now();
      const all = (await repo.loansOf(user.id, user.walletAddress)).map((row) => detailView(row, now, user.id));
      const { data, pagination } = await paginate(
        page,
        listingInMemory(all, (loan) => !filter.status || loan.status === filter.status),
      );
      return {
        data: data.map((loan) => ({
          id: loan.id,
          status: loan.status,
          amount: loan.amount,
          remainingBalance: loan.remainingBalance,
          ...(loan.dueDate !== undefined && { dueDate: loan.dueDate }),
          daysRemaining: loan.daysRemaining,
        })),
        pagination,
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
      // The score before the repayment went out: the worker may apply its fact before this answer does.
      const before = await freshUser(db.prisma, user.id);
      const sent = await chain.userWrite.send({
        user,
        purpose: "loan.repay",
        operation,
        to: loanBook.target as string,
        call: {
          pulls: { spender: loanBook.target as string, value: amount },
          data: loanBook.interface.encodeFunctionData("repay", [chainLoanId, amount]),
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
        // Its XP comes with its Trust Score verdict: earned only when the repayment counts (D-88).
        xpEarned = await chain.rewards.takeTrust(deps.clock.now(), [repaid]);
        const after = await freshUser(db.prisma, user.id);
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
      const extended = requireReceiptEvent<{ newDueDate: bigint }>(chain.loanBook, sent, "LoanExtended").args;
      return {
        loanId: loanIdOf(row),
        extensionGranted: true,
        newDueDate: new Date(Number(extended.newDueDate) * 1_000).toISOString(),
        additionalInterest: usdcNumber(additionalInterest),
      };
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
  };
}
