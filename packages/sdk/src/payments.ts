// The payments library (`@trustmint/sdk/payments`): what a merchant's server needs. Create a
// payment (part 2's request shape, with the credit and split options), send the payer to the
// hosted checkout, refund part or all of it with the spec's call `refund({ paymentId, amount,
// reason })`, and verify the payment events that arrive at your webhook.
import { type ClientOptions, createClient, type WriteOptions } from "./client.js";
import type { CreatePaymentRequest, Payment } from "./types.js";
import { verifyWebhook } from "./webhooks.js";

export { ApiError, type ErrorCode } from "./errors.js";
export { fromMicro, toAmount, toMicro } from "./money.js";
export type { CreatePaymentRequest, Payment, PaymentRefund } from "./types.js";
export { isTestEvent, signWebhook, verifyWebhook, type WebhookEvent, type WebhookTestEvent, WebhookVerificationError } from "./webhooks.js";

/** A merchant's credentials: an API key (Pro and Enterprise plans) or the merchant's access token. */
export type PaymentsOptions = ClientOptions;

/**
 * A 303 See Other to the payment's hosted checkout page, for a server that answers with Web
 * Responses (Next.js route handlers, Hono, Deno, Workers). With Express:
 * `res.redirect(303, payment.checkoutUrl)`; in a browser: `location.assign(payment.checkoutUrl)`.
 */
export function checkoutRedirect(payment: Pick<Payment, "checkoutUrl">): Response {
  return new Response(null, { status: 303, headers: { location: payment.checkoutUrl } });
}

export function createPayments(options: PaymentsOptions) {
  const { payments } = createClient(options);
  return {
    /** Creates a payment; send the payer to its `checkoutUrl` (or answer `checkoutRedirect(payment)`). */
    createPayment: (request: CreatePaymentRequest, write?: WriteOptions) => payments.create(request, write),
    getPayment: payments.get,
    listPayments: payments.list,
    /** Cancels a payment nobody has paid yet. */
    cancelPayment: payments.cancel,
    /** Refunds `amount` (USDC; all that is left when it equals it) of a paid payment, with the reason the payer sees. */
    refund: payments.refund,
    /** A payment's refunds, the newest first. */
    refunds: payments.refunds,
    checkoutRedirect,
    verifyWebhook,
  };
}

export type TrustMintPayments = ReturnType<typeof createPayments>;
