// Funding by the pool through the one transaction sender: a job once a request is
// LOAN_FUNDING_DELAY_S old, or the sandbox at once, the same code; a request that waits past its
// lifetime lapses.
import { AppError } from "../errors.js";
import { freshUser } from "../users/repo.js";
import type { LoansContext } from "./context.js";
import { loanStatus } from "./repo.js";

export function createLoanFunding({ deps, db, repo, detailView, rowOf, fundClaimed }: LoansContext) {
  return {
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
        const claimed = await repo.claim(id, now);
        if (!claimed) {
          const status = loanStatus({ chainStatus: null, requestStatus: request.status, expiresAt: request.expiresAt }, now);
          throw new AppError("CONFLICT", `This loan cannot be funded: it is ${request.status === "funding" ? "being funded" : status}`, {
            field: "loanId",
            reason: status,
          });
        }
        const outcome = await fundClaimed(id);
        if (outcome === "waiting") {
          throw new AppError(
            "INSUFFICIENT_LIQUIDITY",
            "The pool cannot fund this loan now (liquidity, its daily funding cap, or a pause); it stays pending",
          );
        }
        if (outcome === "held") {
          throw new AppError(
            "INSUFFICIENT_LIQUIDITY",
            "The pool lends no more now on loans above what their borrowers have repaid in full themselves (its share for them, or today's budget, is taken); it stays pending",
            { field: "loanId", reason: "NEW_BORROWER_LIMIT" },
          );
        }
        if (outcome !== "funded") {
          throw new AppError("NOT_ELIGIBLE", `The pool refused this loan at funding: ${outcome.why}; the request is cancelled`, {
            field: "eligibility",
            reason: outcome.refused,
          });
        }
      }
      const owner = await freshUser(db.prisma, request.userId);
      return detailView(await rowOf(owner, id), deps.clock.now(), owner.id);
    },

    /**
     * The funding job: lapses requests past their expiry, then funds the requests that are at
     * least LOAN_FUNDING_DELAY_S old, oldest first, while the pool can. Returns what it did.
     */
    async fundDue(now: Date) {
      const lapsed = await repo.lapse(now);
      // Requests the limits on unproven loans hold are passed over, not tried again and again ahead of the others.
      const exposure = (await deps.chain?.loanBook.getFunction("unprovenExposure")()) as [bigint, bigint] | undefined;
      const due = await repo.dueForFunding(now, new Date(now.getTime() - deps.fundingDelaySeconds * 1_000), 20, exposure?.[1]);
      let funded = 0;
      let refused = 0;
      for (const { id } of due) {
        if (!(await repo.claim(id, now))) continue;
        const outcome = await fundClaimed(id);
        // The pool short now: later, smaller requests wait their turn.
        if (outcome === "waiting") break;
        // This borrower held back (D-125): the next ones may be funded.
        if (outcome === "held") continue;
        if (outcome === "funded") funded += 1;
        else refused += 1;
      }
      return { lapsed: lapsed + refused, funded, refused, waiting: due.length - funded - refused };
    },
  };
}
