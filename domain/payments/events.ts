// The merchant's events of a payment: for each `payment.paid` and `payment.refund_made` the
// indexer recorded (chain facts, whoever sent the transaction), `payment.success` and
// `payment.refunded` with what only the service knows (the merchant's metadata, the method, the
// refund's reason), addressed to the merchant (their webhooks) and naming the payer (their
// receipt). A consumer of the outbox: each fact once, in the transaction of its event, so a crash
// between the chain and this step loses nothing (the worker's periodic run takes it up).
import { usdcNumber } from "../../core/money.js";
import type { Tx } from "../db.js";
import type { ConsumedEvent, Outbox, OutboxConsumer } from "../events/consumer.js";
import { domainEvent, recordEvents } from "../events/outbox.js";
import type { LoanFinancing } from "../loans/financing.js";
import type { PaymentsRepo } from "./repo.js";

type PaymentFact = ConsumedEvent<"payment.paid" | "payment.refund_made">;

export function createPaymentEvents({
  outbox,
  repo,
  financing,
}: {
  outbox: Pick<Outbox, "take" | "drain">;
  repo: Pick<PaymentsRepo, "forEvents" | "refundReasons">;
  /** The payment's loans (credit, split), funded by its transaction: settled here too when the attempt that sent it stopped. */
  financing: Pick<LoanFinancing, "settle">;
}) {
  async function apply(tx: Tx, event: PaymentFact) {
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
          payerId: payment.payerId,
          currency: "USDC",
          metadata,
          txHash: data.txHash,
          refundedAt: event.createdAt.toISOString(),
        },
        dedupeKey: `payment-refunded:${event.id}`,
        now: event.createdAt,
      }),
    ]);
  }

  const consumer: OutboxConsumer<PaymentFact["type"]> = {
    name: "payment-events",
    types: ["payment.paid", "payment.refund_made"],
    async apply(tx, events) {
      for (const event of events) await apply(tx, event);
    },
  };
  return {
    /** The outbox consumer (the worker's producer and runners take its pages). */
    consumer,
    /** Records the events of these facts at once (a payment's or a refund's answer); returns how many it took. */
    async take(now: Date, eventIds: readonly string[]): Promise<number> {
      return (await outbox.take(consumer, eventIds, now)).applied;
    },
    /** What is pending, taken now rather than by the worker's page jobs (a process without workers: tests). */
    drain: (now: Date): Promise<number> => outbox.drain(consumer, now),
  };
}

export type PaymentEvents = ReturnType<typeof createPaymentEvents>;
