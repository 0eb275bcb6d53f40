import type { Checkout } from "../../domain/payments/checkout.js";
import { paymentsModule } from "../../domain/payments/module.js";
import type { PaymentsService } from "../../domain/payments/service.js";
import { pageRequestOf } from "../http/pagination.js";
import { defineRoute, type RouteSpec, routesOf } from "../http/route.js";
import {
  createBody,
  payBody,
  payment,
  paymentDetail,
  paymentIdParams,
  paymentsQuery,
  payResponse,
  refundBody,
  refundResponse,
  refundsResponse,
  termsResponse,
} from "./schemas.js";

export function paymentRoutes({ payments, checkout }: { payments: PaymentsService; checkout: Checkout }): RouteSpec[] {
  return routesOf(paymentsModule, [
    defineRoute({
      method: "post",
      path: "/v1/payments",
      operationId: "createPayment",
      summary: "Create a payment and get its hosted checkout URL",
      description:
        "Send the payer to `checkoutUrl`. The payment is paid once, on chain: the merchant's wallet receives the amount less the method's fee in the payer's own transaction. Events: payment.success, payment.failed, payment.refunded, each with your metadata.",
      auth: "user",
      body: createBody,
      response: payment,
      status: 201,
      handler: async ({ body, principal }) => ({ data: await payments.create(principal().user, body) }),
    }),
    defineRoute({
      method: "get",
      path: "/v1/payments",
      operationId: "listPayments",
      summary: "Your payments as a merchant, newest first",
      auth: "user",
      query: paymentsQuery,
      response: payment.array(),
      paginated: true,
      handler: async ({ query, principal }) => payments.list(principal().user, query, pageRequestOf(query)),
    }),
    defineRoute({
      method: "get",
      path: "/v1/payments/{paymentId}",
      operationId: "getPayment",
      summary: "One of your payments: gross, fee, net, refunded, and every transaction",
      auth: "user",
      params: paymentIdParams,
      response: paymentDetail,
      errors: ["PAYMENT_NOT_FOUND"],
      handler: async ({ params, principal }) => ({ data: await payments.get(principal().user, params.paymentId) }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/payments/{paymentId}/cancel",
      operationId: "cancelPayment",
      summary: "Cancel an open payment: its checkout takes no payment any more (extension)",
      auth: "user",
      params: paymentIdParams,
      response: payment,
      errors: ["PAYMENT_NOT_FOUND", "ALREADY_PAID", "PAYMENT_EXPIRED", "PAYMENT_CANCELLED", "PAYMENT_IN_PROGRESS"],
      handler: async ({ params, principal }) => ({ data: await payments.cancel(principal().user, params.paymentId) }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/payments/{paymentId}/refunds",
      operationId: "refundPayment",
      summary: "Refund part or all of a paid payment from your wallet",
      description:
        "The USDC goes from your managed wallet back to the payer (you bear the fee, as card processors do). Refunds add up to the amount at most: more is 400 INVALID_AMOUNT; a wallet that cannot cover it is 400 INSUFFICIENT_BALANCE and nothing moves. Retry with the same Idempotency-Key: it is the same refund, made once.",
      auth: "user",
      params: paymentIdParams,
      body: refundBody,
      response: refundResponse,
      status: 201,
      errors: ["PAYMENT_NOT_FOUND", "PAYMENT_NOT_PAID", "INVALID_AMOUNT", "INSUFFICIENT_BALANCE", "SERVICE_UNAVAILABLE"],
      handler: async ({ params, body, principal, operation }) => ({
        data: await payments.refund(principal().user, params.paymentId, body, operation),
      }),
    }),
    defineRoute({
      method: "get",
      path: "/v1/payments/{paymentId}/refunds",
      operationId: "listPaymentRefunds",
      summary: "A payment's refunds, oldest first",
      auth: "user",
      params: paymentIdParams,
      response: refundsResponse,
      errors: ["PAYMENT_NOT_FOUND"],
      handler: async ({ params, principal }) => ({ data: await payments.refunds(principal().user, params.paymentId) }),
    }),
    defineRoute({
      method: "get",
      path: "/checkout/{paymentId}/terms",
      operationId: "getPaymentTerms",
      summary: "What each of the payment's methods costs you, the signed-in payer, now (the hosted checkout shows it)",
      description:
        "credit: one loan at your Trust Score tier's rate for the tier's longest term (or the merchant's shorter one); split: installments without interest, one per week (or the merchant's frequency), closer together when your tier's longest term is shorter. Each is a loan of yours and counts toward your open loans. Not eligible: the reason (a restriction code, AMOUNT_ABOVE_TIER, INTEREST_ABOVE_OFFER, DURATION_ABOVE_TIER, AMOUNT_BELOW_LOAN_MINIMUM, INSUFFICIENT_LIQUIDITY). A payment you cannot pay is refused as paying it would be: paid, expired or cancelled (409), or your own (403 SELF_PAYMENT).",
      auth: "user",
      params: paymentIdParams,
      response: termsResponse,
      errors: ["PAYMENT_NOT_FOUND", "ALREADY_PAID", "PAYMENT_EXPIRED", "PAYMENT_CANCELLED", "SELF_PAYMENT"],
      handler: async ({ params, principal }) => ({ data: await checkout.terms(principal().user, params.paymentId) }),
    }),
    defineRoute({
      method: "post",
      path: "/checkout/{paymentId}/pay",
      operationId: "payPayment",
      summary: "Pay a payment as the signed-in payer (the hosted checkout posts here)",
      description:
        "direct: the payer's own transaction through the router (the service pays the gas). credit and split: the lending pool pays the merchant at once and the payer owes the loans (see GET /checkout/{paymentId}/terms); 403 NOT_ELIGIBLE with the reason when the payer may not borrow it. A payment is paid at most once: a second attempt is 409 ALREADY_PAID, one while another is under way 409 PAYMENT_IN_PROGRESS. An expired or cancelled payment is 409. A merchant paying its own payment (the same account, or its wallet) is 403 SELF_PAYMENT. Outside production, a declined test address is 402 PAYMENT_DECLINED, an insufficient one 400 INSUFFICIENT_BALANCE; both tell the merchant payment.failed and leave the payment open. In production payerAddress may only be the payer's own wallet.",
      auth: "user",
      params: paymentIdParams,
      body: payBody,
      response: payResponse,
      errors: [
        "PAYMENT_NOT_FOUND",
        "ALREADY_PAID",
        "PAYMENT_EXPIRED",
        "PAYMENT_CANCELLED",
        "PAYMENT_IN_PROGRESS",
        "PAYMENT_DECLINED",
        "SELF_PAYMENT",
        "INSUFFICIENT_BALANCE",
        "NOT_ELIGIBLE",
        "INSUFFICIENT_LIQUIDITY",
        "VAULT_PAUSED",
        "SERVICE_UNAVAILABLE",
      ],
      handler: async ({ params, body, principal, operation }) => ({
        data: await checkout.pay(principal().user, params.paymentId, body, operation),
      }),
    }),
  ]);
}
