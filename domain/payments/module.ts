// The payments' manifest (domain/module.ts).
import { z } from "zod";
import { address, defineEvent, integerAmount, isoTime, txHash, userRef } from "../events/define.js";
import { defineModule } from "../module.js";

export const paymentsModule = defineModule({
  name: "payments",
  errors: {
    PAYMENT_NOT_FOUND: 404,
    ALREADY_PAID: 409,
    PAYMENT_EXPIRED: 409,
    PAYMENT_CANCELLED: 409,
    PAYMENT_IN_PROGRESS: 409,
    PAYMENT_NOT_PAID: 409,
    PAYMENT_DECLINED: 402,
    SELF_PAYMENT: 403,
  },
  tables: { Payment: "chain", PaymentRefund: "chain", CheckoutSignIn: "own", PaymentChainEvent: "log" },
  consumers: ["payment-events"],
  jobs: ["payments.attempts"],
  contracts: { paymentRouter: { relay: ["payWithPermit", "pay", "refundWithPermit", "refund"] } },
  routeTag: "Payments",
  events: {
    "payment.paid": defineEvent({
      source: "chain",
      description:
        "A payment was paid on the payment router: the merchant received amount - fee, the treasury fee (the payments consumer turns it into payment.success).",
      data: z.object({
        paymentId: z.string(),
        payerId: userRef,
        payerAddress: address,
        merchantId: userRef,
        merchantAddress: address,
        amount: z.number(),
        fee: z.number(),
        net: z.number(),
        txHash,
      }),
      raw: z.object({ amount: integerAmount, fee: integerAmount }),
    }),
    "payment.refund_made": defineEvent({
      source: "chain",
      description: "A merchant refunded part or all of a payment to its payer (the payments consumer turns it into payment.refunded).",
      data: z.object({
        paymentId: z.string(),
        refundId: z.string(),
        payerId: userRef,
        merchantId: userRef,
        merchantAddress: address,
        amount: z.number(),
        totalRefunded: z.number(),
        txHash,
      }),
      raw: z.object({ paymentAmount: integerAmount, amount: integerAmount, totalRefunded: integerAmount }),
    }),
    "payment.success": defineEvent({
      source: "service",
      webhook: true,
      description: "A merchant's payment was paid: to the merchant's webhooks, and a receipt to the payer.",
      data: z.object({
        type: z.literal("payment.success"),
        paymentId: z.string(),
        amount: z.number(),
        fee: z.number(),
        net: z.number(),
        currency: z.literal("USDC"),
        method: z.string(),
        description: z.string(),
        payerId: userRef,
        metadata: z.record(z.string(), z.unknown()),
        txHash,
        paidAt: isoTime,
      }),
    }),
    "payment.failed": defineEvent({
      source: "service",
      webhook: true,
      description:
        "An attempt to pay a merchant's payment failed: declined or insufficient_funds (the sandbox's test addresses, an empty wallet), not_eligible (the payer may not borrow it), insufficient_liquidity (the pool), refused (the chain refused its transaction) or interrupted (it stopped before its transaction went out); its reserved loans are cancelled, and the payment stays open for another attempt.",
      data: z.object({
        type: z.literal("payment.failed"),
        paymentId: z.string(),
        amount: z.number(),
        currency: z.literal("USDC"),
        method: z.string(),
        reason: z.enum(["declined", "insufficient_funds", "not_eligible", "insufficient_liquidity", "refused", "interrupted"]),
        metadata: z.record(z.string(), z.unknown()),
        failedAt: isoTime,
      }),
    }),
    "payment.refunded": defineEvent({
      source: "service",
      webhook: true,
      description: "A merchant refunded part or all of a payment (refundedAmount so far; fullyRefunded once nothing is left).",
      data: z.object({
        type: z.literal("payment.refunded"),
        paymentId: z.string(),
        refundId: z.string(),
        amount: z.number(),
        refundedAmount: z.number(),
        fullyRefunded: z.boolean(),
        reason: z.string(),
        /** Who paid (told of the refund); absent in events recorded before D-89. */
        payerId: z.string().nullable().optional(),
        currency: z.literal("USDC"),
        metadata: z.record(z.string(), z.unknown()),
        txHash,
        refundedAt: isoTime,
      }),
    }),
  },
});
