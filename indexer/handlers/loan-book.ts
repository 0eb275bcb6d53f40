import { usdcNumber } from "../../core/money.js";
import { loanIdFromRef } from "../../domain/loans/ids.js";
import { entity, type LoanState } from "../state.js";
import { event, handlersOf, iso, touched } from "./context.js";

/** A loan's events carry the API's loan id, read from the row's ref (the on-chain id when the row is unknown). */
const loanEventBase = (row: LoanState | undefined, loanId: bigint) => ({ loanId: row ? loanIdFromRef(row.ref) : loanId.toString() });

const loanKey = ({ loanId }: { loanId: bigint }) => [entity.loan(loanId)];

/** The loan book: funding, repayments, extensions, overdue and default. */
export const loanBookHandlers = handlersOf("loanBook", {
  LoanFunded: {
    entities: loanKey,
    apply(ctx, { loanId, ref, borrower, recipient, principal, netAmount, interest, insuranceFee, durationDays, dueDate }, log) {
      const key = entity.loan(loanId);
      if (ctx.state.inScope(key)) {
        const row: LoanState = {
          loanId,
          ref,
          borrower,
          principal,
          netAmount,
          interest,
          insuranceFee,
          durationDays: Number(durationDays),
          dueDate: Number(dueDate),
          fundedAt: log.timestamp,
          fundTxHash: log.txHash,
          status: "active",
          totalPaid: 0n,
          remainingBalance: principal + interest,
          extensions: 0,
          lastPaymentAt: null,
          closedAt: null,
          paidByOthers: 0n,
          updatedBlock: log.blockNumber,
        };
        ctx.state.loans.set(key, row);
        ctx.state.touch(key);
      }
      event(ctx, log, "loan.funded", borrower, () => ({
        loanId: loanIdFromRef(ref),
        amount: usdcNumber(principal),
        netAmount: usdcNumber(netAmount),
        dueDate: iso(Number(dueDate)),
        txHash: log.txHash,
        raw: { chainLoanId: loanId, principal, netAmount, interest, insuranceFee, recipient },
      }));
    },
  },
  LoanRepaymentMade: {
    entities: loanKey,
    apply(ctx, { loanId, borrower, payer, amount, remainingBalance, totalPaid, closed }, log) {
      const row = touched(ctx, ctx.state.loans, entity.loan(loanId), log.blockNumber);
      if (row) {
        if (payer.toLowerCase() !== borrower.toLowerCase()) row.paidByOthers += amount;
        row.totalPaid = totalPaid;
        row.remainingBalance = remainingBalance;
        row.lastPaymentAt = log.timestamp;
        if (closed) {
          row.status = "repaid";
          row.closedAt = log.timestamp;
        }
      }
      const base = loanEventBase(row ?? ctx.state.loans.get(entity.loan(loanId)), loanId);
      if (closed) {
        event(ctx, log, "loan.repaid", borrower, () => ({
          ...base,
          totalPaid: usdcNumber(totalPaid),
          txHash: log.txHash,
          raw: { chainLoanId: loanId, totalPaid },
        }));
      } else {
        event(ctx, log, "loan.partial_payment", borrower, () => ({
          ...base,
          amount: usdcNumber(amount),
          remainingBalance: usdcNumber(remainingBalance),
          txHash: log.txHash,
          raw: { chainLoanId: loanId, amount, remainingBalance },
        }));
      }
    },
  },
  LoanRefunded: {
    entities: loanKey,
    apply(
      ctx,
      { loanId, borrower, principalRefunded, interestForgiven, toPool, principalReturned, interestReturned, remainingBalance, closed },
      log,
    ) {
      const row = touched(ctx, ctx.state.loans, entity.loan(loanId), log.blockNumber);
      if (row) {
        // The loan shrinks (D-89); what came back to the borrower is no longer paid; a refund is not their repayment.
        row.principal -= principalRefunded;
        row.interest -= interestForgiven;
        row.totalPaid -= principalReturned + interestReturned;
        row.paidByOthers += principalRefunded;
        if (closed) {
          row.status = "repaid";
          row.closedAt = log.timestamp;
        }
        // A written-off loan owes what its smaller terms leave unpaid (the chain's balance of a closed loan is 0).
        const unpaid = row.principal + row.interest - row.totalPaid;
        row.remainingBalance = row.status === "defaulted" ? (unpaid > 0n ? unpaid : 0n) : remainingBalance;
      }
      const base = loanEventBase(row ?? ctx.state.loans.get(entity.loan(loanId)), loanId);
      event(ctx, log, "loan.refunded", borrower, () => ({
        ...base,
        amount: usdcNumber(principalRefunded),
        interestForgiven: usdcNumber(interestForgiven),
        returned: usdcNumber(principalReturned + interestReturned),
        remainingBalance: usdcNumber(remainingBalance),
        closed,
        txHash: log.txHash,
        raw: { chainLoanId: loanId, principalRefunded, interestForgiven, toPool, principalReturned, interestReturned, remainingBalance },
      }));
    },
  },
  LoanExtended: {
    entities: loanKey,
    apply(ctx, { loanId, extraDays, additionalInterest, newDueDate }, log) {
      const row = touched(ctx, ctx.state.loans, entity.loan(loanId), log.blockNumber);
      if (row) {
        row.durationDays += Number(extraDays);
        row.interest += additionalInterest;
        row.remainingBalance += additionalInterest;
        row.dueDate = Number(newDueDate);
        row.extensions += 1;
        if (row.status === "overdue") row.status = "active";
      }
    },
  },
  LoanMarkedOverdue: {
    entities: loanKey,
    apply(ctx, { loanId, borrower, dueDate }, log) {
      const row = touched(ctx, ctx.state.loans, entity.loan(loanId), log.blockNumber);
      if (row) row.status = "overdue";
      const base = loanEventBase(row ?? ctx.state.loans.get(entity.loan(loanId)), loanId);
      event(ctx, log, "loan.overdue", borrower, () => ({
        ...base,
        daysOverdue: Math.max(0, Math.floor((log.timestamp - Number(dueDate)) / 86_400)),
        raw: { chainLoanId: loanId, dueDate: iso(Number(dueDate)) },
      }));
    },
  },
  LoanDefaulted: {
    entities: loanKey,
    apply(ctx, { loanId, borrower, loss, covered, uncovered }, log) {
      const row = touched(ctx, ctx.state.loans, entity.loan(loanId), log.blockNumber);
      if (row) {
        row.status = "defaulted";
        row.closedAt = log.timestamp;
      }
      const base = loanEventBase(row ?? ctx.state.loans.get(entity.loan(loanId)), loanId);
      event(ctx, log, "loan.defaulted", borrower, () => ({
        ...base,
        loss: usdcNumber(loss),
        coveredByInsurance: usdcNumber(covered),
        uncovered: usdcNumber(uncovered),
        txHash: log.txHash,
        raw: { chainLoanId: loanId, loss, coveredByInsurance: covered, uncovered },
      }));
    },
  },
});
