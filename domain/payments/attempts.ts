// How a payer's attempt at a payment ends (D-89): paid (the mirror says so), or failed, said on
// the payment and as `payment.failed` to the merchant, with the attempt's reserved loans cancelled
// in the same database transaction, so the payer's eligibility is as before. An attempt holds its
// payment for at most ATTEMPT_HOLD_MAX_S (real time), and only while its process beats (repo.ts, HELD):
// a `processing` that outlives its attempt cannot be. `settleStale` finishes the bookkeeping of
// attempts on credit that stopped (a crash, an answer that never came), from what the sender
// recorded under the attempt's key.
import { randomUUID } from "node:crypto";
import type { Clock } from "../../core/clock.js";
import type { Logger } from "../../core/logger.js";
import { usdcNumber } from "../../core/money.js";
import type { Db, Tx } from "../db.js";
import { domainEvent, recordEvents } from "../events/outbox.js";
import type { LoanFinancing } from "../loans/financing.js";
import { TransactionPendingError, TransactionRefusedError, TransactionRevertedError } from "../transactions/failures.js";
import type { TransactionSender } from "../transactions/sender.js";
import type { PaymentRow, PaymentsRepo } from "./repo.js";
import type { FailureReason } from "./rules.js";

/** The sender's purpose of a payment on credit or in installments (the router's payWithLoans). */
export const FINANCE_PURPOSE = "payment.finance";

/** The idempotency key of an attempt on credit: its payment and the smallest id of its loans (new for every attempt). */
export const attemptKeyOf = (paymentId: string, loanIds: readonly string[]) => `payment:${paymentId}:${[...loanIds].sort()[0]}`;

export function createPaymentAttempts(deps: {
  db: Db;
  clock: Pick<Clock, "now">;
  repo: Pick<PaymentsRepo, "release" | "recordFailure" | "staleFinancedAttempts">;
  financing: Pick<LoanFinancing, "settle" | "reserved">;
  sender?: Pick<TransactionSender, "earlier" | "resume">;
  logger?: Pick<Logger, "warn" | "info">;
}) {
  const { repo } = deps;

  /**
   * Says that an attempt failed: on the payment (`lastFailure`; its hold given back when `held`)
   * and as `payment.failed` to the merchant, with the attempt's reserved loans cancelled, all in
   * one transaction. Answers false, and does nothing, when a held payment was no longer held (it
   * ended already).
   */
  async function fail(
    row: Pick<PaymentRow, "id" | "merchantId" | "amount" | "metadata">,
    method: string,
    reason: FailureReason,
    held: boolean,
  ) {
    const now = deps.clock.now();
    const failure = { reason, method, at: now.toISOString() };
    return deps.db.prisma.$transaction(async (tx: Tx) => {
      if (held) {
        if (!(await repo.release(tx, row.id, failure))) return false;
        await deps.financing.settle(row.id, null, tx);
      } else {
        await repo.recordFailure(tx, row.id, failure);
      }
      await recordEvents(tx, [
        domainEvent({
          type: "payment.failed",
          userId: row.merchantId,
          data: {
            type: "payment.failed",
            paymentId: row.id,
            amount: usdcNumber(row.amount),
            currency: "USDC",
            method,
            reason,
            metadata: row.metadata,
            failedAt: failure.at,
          },
          dedupeKey: `payment-failed:${row.id}:${randomUUID()}`,
          now,
        }),
      ]);
      return true;
    });
  }

  return {
    fail,

    /**
     * Ends the attempts on credit that stopped holding their payment (their process stopped
     * beating, or ATTEMPT_HOLD_MAX_S passed): one whose transaction was never recorded, or that
     * the chain refused, fails (`interrupted`, `refused`); one that was mined is settled (its loans
     * funded; the mirror's `payment.paid` makes it paid); one still pending is looked at again at
     * the next run. Idempotent: the worker runs it every few seconds. Answers how many it ended.
     */
    async settleStale(): Promise<number> {
      let ended = 0;
      for (const attempt of await repo.staleFinancedAttempts()) {
        const loanIds = await deps.financing.reserved(attempt.id);
        const key = loanIds.length > 0 && attempt.payerId ? attemptKeyOf(attempt.id, loanIds) : null;
        const recorded =
          key && deps.sender
            ? await deps.sender.earlier({ userId: attempt.payerId!, idempotencyKey: key, purpose: FINANCE_PURPOSE })
            : null;
        if (!recorded) {
          if (await fail(attempt, attempt.method, "interrupted", true)) ended += 1;
          continue;
        }
        try {
          // Mined: the payment is paid, and the mirror's payment.paid settles its loans (events.ts).
          await deps.sender!.resume(recorded);
        } catch (error) {
          if (error instanceof TransactionRevertedError || error instanceof TransactionRefusedError) {
            if (await fail(attempt, attempt.method, "refused", true)) ended += 1;
          } else if (!(error instanceof TransactionPendingError)) {
            deps.logger?.warn(
              { paymentId: attempt.id, error: (error as Error).message },
              "payment attempt not settled; trying again later",
            );
          }
        }
      }
      return ended;
    },
  };
}

export type PaymentAttempts = ReturnType<typeof createPaymentAttempts>;
