import { loansModule } from "../../domain/loans/module.js";
import type { LoansService } from "../../domain/loans/service.js";
import { pageRequestOf } from "../http/pagination.js";
import { defineRoute, type RouteSpec, routesOf } from "../http/route.js";
import {
  cancelResponse,
  createdLoan,
  eligibilityResponse,
  extensionBody,
  extensionResponse,
  loanDetail,
  loanIdParams,
  loanListItem,
  loansQuery,
  payoffResponse,
  repayBody,
  repayResponse,
  requestBody,
} from "./schemas.js";

export function loanRoutes({ loans }: { loans: LoansService }): RouteSpec[] {
  return routesOf(loansModule, [
    defineRoute({
      method: "get",
      path: "/v1/loans/eligibility",
      operationId: "getLoanEligibility",
      summary: "Whether you may borrow now, and your tier's limits",
      auth: "user",
      response: eligibilityResponse,
      handler: async ({ principal }) => ({ data: await loans.eligibility(principal().user) }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/loans",
      operationId: "requestLoan",
      summary: "Ask for a loan at your tier's terms; the pool funds it by itself",
      description:
        "The request is pending until the lending pool funds it (LOAN_FUNDING_DELAY_S after the request, when its liquidity allows); your managed wallet then receives netAmount. A request not funded by expiresAt lapses. Checked in this order: 403 NOT_ELIGIBLE (the restrictions of GET /v1/loans/eligibility), 400 INVALID_AMOUNT (outside 1 to your tier's maxAmount), 400 INVALID_DURATION (outside 7 to your tier's maxDuration).",
      auth: "user",
      body: requestBody,
      response: createdLoan,
      errors: ["INVALID_AMOUNT", "INVALID_DURATION", "NOT_ELIGIBLE"],
      handler: async ({ body, principal }) => ({ data: await loans.request(principal().user, body) }),
    }),
    defineRoute({
      method: "get",
      path: "/v1/loans",
      operationId: "listLoans",
      summary: "Your loans, newest first",
      auth: "user",
      query: loansQuery,
      response: loanListItem.array(),
      paginated: true,
      handler: async ({ query, principal }) => loans.list(principal().user, query, pageRequestOf(query)),
    }),
    defineRoute({
      method: "get",
      path: "/v1/loans/{loanId}",
      operationId: "getLoan",
      summary: "One of your loans",
      auth: "user",
      params: loanIdParams,
      response: loanDetail,
      errors: ["LOAN_NOT_FOUND"],
      handler: async ({ params, principal }) => ({ data: await loans.detail(principal().user, params.loanId) }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/loans/{loanId}/repay",
      operationId: "repayLoan",
      summary: "Repay part or all of a loan from your managed wallet",
      description:
        "Sent as your own transaction (your managed wallet signs a forward request, and once a permit that lets the contract take its USDC from then on; the service pays the gas). Answers after the receipt, once the mirror shows the payment. An amount that is not positive, or below 0.01 USDC without paying the whole remaining balance, is 400 INVALID_AMOUNT and nothing is sent.",
      auth: "user",
      signable: true,
      params: loanIdParams,
      body: repayBody,
      response: repayResponse,
      errors: ["INVALID_AMOUNT", "LOAN_NOT_FOUND", "ALREADY_REPAID", "CONFLICT", "INSUFFICIENT_BALANCE", "SERVICE_UNAVAILABLE"],
      handler: async ({ params, body, principal, operation }) => ({
        data: await loans.repay(principal().user, params.loanId, body.amount, operation),
      }),
    }),
    defineRoute({
      method: "get",
      path: "/v1/loans/{loanId}/payoff",
      operationId: "getLoanPayoff",
      summary: "What closing the loan takes now (an early payoff costs less)",
      auth: "user",
      params: loanIdParams,
      response: payoffResponse,
      errors: ["LOAN_NOT_FOUND", "ALREADY_REPAID", "CONFLICT"],
      handler: async ({ params, principal }) => ({ data: await loans.payoff(principal().user, params.loanId) }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/loans/{loanId}/extension",
      operationId: "extendLoan",
      summary: "Extend an active loan's term (once, before its due date, within your tier's longest term)",
      description:
        "Adds the interest of the added days at the loan's own daily rate (its interest over its days, rounded up). Refused with 409 EXTENSION_NOT_ALLOWED past the due date, after a first extension, or beyond your tier's maxDuration.",
      auth: "user",
      params: loanIdParams,
      body: extensionBody,
      response: extensionResponse,
      errors: ["LOAN_NOT_FOUND", "ALREADY_REPAID", "CONFLICT", "EXTENSION_NOT_ALLOWED"],
      handler: async ({ params, body, principal, operation }) => ({
        data: await loans.extend(principal().user, params.loanId, body.days, operation),
      }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/loans/{loanId}/cancel",
      operationId: "cancelLoan",
      summary: "Cancel a pending request (a funded loan is repaid instead)",
      auth: "user",
      params: loanIdParams,
      response: cancelResponse,
      errors: ["LOAN_NOT_FOUND", "ALREADY_REPAID", "CONFLICT"],
      handler: async ({ params, principal }) => ({ data: await loans.cancel(principal().user, params.loanId) }),
    }),
  ]);
}
