// Due dates on the service clock: the reminder a day before (an event once per loan and due
// date), overdue past the due date, and default past the LoanBook's grace period, sent by the pool's
// operator through the sender. Each loan's grace period is its own, fixed at funding.
import { DAY_MS } from "../../core/clock.js";
import { usdcNumber } from "../../core/money.js";
import { domainEvent, recordEvents } from "../events/outbox.js";
import { TransactionRevertedError } from "../transactions/failures.js";
import { type LoansContext, REMINDER_HOURS } from "./context.js";
import { loanIdFromRef } from "./ids.js";
import { remainingBalanceOf } from "./repo.js";

export function createLoanDueDates({ db, repo, chainOrFail }: LoansContext) {
  return {
    /**
     * The due-date job: reminds borrowers a day before (a `loan.due_reminder` event, once per
     * loan and due date), marks loans past their due date overdue, and defaults those past the
     * LoanBook's grace period (its insurance reserve covers its share). Anyone may call the
     * LoanBook's markOverdue and markDefaulted; the pool's operator does, through the sender.
     */
    async runDueDates(now: Date) {
      const chain = chainOrFail();
      const reminders = await repo.openLoansDueBefore(new Date(now.getTime() + REMINDER_HOURS * 3_600_000), 200);
      const soon = reminders.filter((loan) => loan.status === "active" && loan.dueDate > now && loan.userId);
      if (soon.length > 0) {
        await db.prisma.$transaction(async (tx) => {
          const rows = await Promise.all(
            soon.map(async (loan) => {
              const remaining = await remainingBalanceOf(tx, loan.ref);
              return domainEvent({
                type: "loan.due_reminder",
                userId: loan.userId!,
                data: {
                  loanId: loanIdFromRef(loan.ref),
                  userId: loan.userId!,
                  dueDate: loan.dueDate.toISOString(),
                  remainingBalance: usdcNumber(remaining),
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
        // The loan's own grace period, the limits' when it was funded (D-100).
        const { gracePeriodDays } = (await chain.loanBook.getLoan(loan.loanId)) as { gracePeriodDays: bigint };
        const pastGrace = loan.dueDate.getTime() + Number(gracePeriodDays) * DAY_MS < now.getTime();
        // Overdue first, even past the grace period: only an impaired loan can default (D-95).
        const actions: ("markOverdue" | "markDefaulted")[] = [];
        if (loan.status === "active") actions.push("markOverdue");
        if (pastGrace) actions.push("markDefaulted");
        try {
          for (const action of actions) {
            await chain.sender.send({
              purpose: action === "markDefaulted" ? "loan.default" : "loan.overdue",
              // Keyed by the loan and the step: a repeated or concurrent run finds the transaction sent first.
              userId: loan.userId ?? "pool",
              idempotencyKey: `${chain.chainId}:${loan.loanId}:${action}`,
              to: chain.loanBook.target as string,
              data: chain.loanBook.interface.encodeFunctionData(action, [loan.loanId]),
            });
            if (action === "markDefaulted") defaulted += 1;
            else overdue += 1;
          }
        } catch (error) {
          // Not due yet by the chain's clock, or repaid meanwhile: the next run looks again.
          if (!(error instanceof TransactionRevertedError)) throw error;
        }
      }
      return { reminded: soon.length, overdue, defaulted };
    },
  };
}
