import { usdcNumber } from "../../core/money.js";
import { uuidFromRef } from "../../core/refs.js";
import { event, handlersOf, iso } from "./context.js";

/** The payment router: payments paid and refunded (append-only rows of PaymentChainEvent, and their chain facts). */
export const paymentRouterHandlers = handlersOf("paymentRouter", {
  PaymentPaid: {
    entities: () => [],
    apply(ctx, { ref, payer, merchant, amount, fee }, log) {
      if (!ctx.emit) return;
      ctx.out.paymentEvents.push([
        log.blockNumber,
        log.logIndex,
        log.txHash,
        "paid",
        ref,
        null,
        payer,
        merchant,
        amount.toString(),
        amount.toString(),
        fee.toString(),
        "0",
        iso(log.timestamp),
      ]);
      event(
        ctx,
        log,
        "payment.paid",
        merchant,
        (userOf) => ({
          paymentId: uuidFromRef(ref),
          payerId: userOf(payer),
          payerAddress: payer,
          merchantId: userOf(merchant),
          merchantAddress: merchant,
          amount: usdcNumber(amount),
          fee: usdcNumber(fee),
          net: usdcNumber(amount - fee),
          txHash: log.txHash,
          raw: { amount, fee },
        }),
        [payer],
      );
    },
  },
  PaymentRefunded: {
    entities: () => [],
    apply(ctx, { ref, refundRef, merchant, payer, paymentAmount, amount, totalRefunded }, log) {
      if (!ctx.emit) return;
      ctx.out.paymentEvents.push([
        log.blockNumber,
        log.logIndex,
        log.txHash,
        "refunded",
        ref,
        refundRef,
        payer,
        merchant,
        amount.toString(),
        paymentAmount.toString(),
        "0",
        totalRefunded.toString(),
        iso(log.timestamp),
      ]);
      event(
        ctx,
        log,
        "payment.refund_made",
        merchant,
        (userOf) => ({
          paymentId: uuidFromRef(ref),
          refundId: uuidFromRef(refundRef),
          payerId: userOf(payer),
          merchantId: userOf(merchant),
          merchantAddress: merchant,
          amount: usdcNumber(amount),
          totalRefunded: usdcNumber(totalRefunded),
          txHash: log.txHash,
          raw: { paymentAmount, amount, totalRefunded },
        }),
        [payer],
      );
    },
  },
});
