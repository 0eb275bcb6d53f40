// The merchant's events of a payment: for each `payment.paid` and `payment.refund_made` the
// indexer recorded (chain facts, whoever sent the transaction), `payment.success` and
// `payment.refunded` with what only the service knows (the merchant's metadata, the method, the
// refund's reason), addressed to the merchant (their webhooks) and naming the payer (their
// receipt). A consumer of the outbox: each fact once, in the transaction of its event, so a crash
// between the chain and this step loses nothing (the worker's periodic run takes it up).
import { usdcNumber } from "../../core/money.js";
import type { Db } from "../db.js";
import { consumeEvents } from "../events/consumer.js";
import { domainEvent, recordEvents } from "../events/outbox.js";
import type { LoanFinancing } from "../loans/financing.js";
import type { PaymentsRepo } from "./repo.js";

export function createPaymentEvents({
  db,
  repo,
  financing,
}: {
  db: Db;
  repo: Pick<PaymentsRepo, "forEvents" | "refundReasons">;
  /** The payment's loans (credit, split), funded by its transaction: settled here too when the attempt that sent it stopped. */
  financing: Pick<LoanFinancing, "settle">;
}) {
  return {
    /** Records the events of the facts not yet taken; returns how many it took. */
    run(now: Date, onlyIds?: readonly string[]): Promise<number> {
      return consumeEvents(db, {
        consumer: "payment-events",
        types: ["payment.paid", "payment.refund_made"],
        now,
        onlyIds,
        async apply(tx, event) {
          const payment = (await repo.forEvents(tx, [event.data.paymentId])).get(event.data.paymentId);
          // Only the payment's own terms speak for it: a ref the service never issued, or paid to
          // another wallet or of another amount (which leaves the real payment unpaid), tells nobody.
          const terms = event.type === "payment.paid" ? event.data.raw.amount : event.data.raw.paymentAmount;
          if (!payment || payment.merchantWallet !== event.data.merchantAddress.toLowerCase() || terms !== payment.amount) return;
          const metadata = payment.metadata as Record<string, unknown>;
          if (event.type === "payment.paid") {
            const data = event.data as typeof event.data & { raw: { amount: bigint; fee: bigint } };
            await financing.settle(payment.id, data.txHash, tx);
            await recordEvents(tx, [
              domainEvent({
                type: "payment.success",
                userId: payment.merchantId,
                data: {
                  type: "payment.success",
                  paymentId: payment.id,
                  amount: usdcNumber(data.raw.amount),
                  fee: usdcNumber(data.raw.fee),
                  net: usdcNumber(data.raw.amount - data.raw.fee),
                  currency: "USDC",
                  method: payment.method ?? "direct",
                  description: payment.description,
                  payerId: data.payerId,
                  metadata,
                  txHash: data.txHash,
                  paidAt: event.createdAt.toISOString(),
                },
                dedupeKey: `payment-success:${event.id}`,
                now: event.createdAt,
              }),
            ]);
            return;
          }
          const data = event.data as { refundId: string; txHash: string; raw: { amount: bigint; totalRefunded: bigint } };
          const reason = (await repo.refundReasons(tx, [data.refundId])).get(data.refundId) ?? "";
          await recordEvents(tx, [
            domainEvent({
              type: "payment.refunded",
              userId: payment.merchantId,
              data: {
                type: "payment.refunded",
                paymentId: payment.id,
                refundId: data.refundId,
                amount: usdcNumber(data.raw.amount),
                refundedAmount: usdcNumber(data.raw.totalRefunded),
                fullyRefunded: data.raw.totalRefunded >= payment.amount,
                reason,
                currency: "USDC",
                metadata,
                txHash: data.txHash,
                refundedAt: event.createdAt.toISOString(),
              },
              dedupeKey: `payment-refunded:${event.id}`,
              now: event.createdAt,
            }),
          ]);
        },
      });
    },
  };
}

export type PaymentEvents = ReturnType<typeof createPaymentEvents>;
