import type { LoansService } from "../../domain/loans/service.js";
import { defineRoute, type RouteSpec } from "../http/route.js";
import {
  cancelResponse,
  createdLoan,
  eligibilityResponse,
  listQuery,
  loanDetail,
  loanIdParams,
  loanListItem,
  requestBody,
} from "./schemas.js";

const TAG = "Loans";

export function loanRoutes({ loans }: { loans: LoansService }): RouteSpec[] {
  return [
    defineRoute({
      method: "get",
      path: "/v1/loans/eligibility",
      operationId: "getLoanEligibility",
      tag: TAG,
      summary: "Whether you may borrow now, and your tier's limits",
      auth: "user",
      response: eligibilityResponse,
      handler: async ({ principal }) => ({ data: await loans.eligibility(principal().user) }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/loans",
      operationId: "requestLoan",
      tag: TAG,
      summary: "Ask for a loan at your tier's terms; the pool funds it by itself",
      description:
        "The request is pending until the lending pool funds it (LOAN_FUNDING_DELAY_S after the request, when its liquidity allows); your managed wallet then receives netAmount. A request not funded by expiresAt lapses.",
      auth: "user",
      idempotent: true,
      body: requestBody,
      response: createdLoan,
      errors: ["INVALID_AMOUNT", "INVALID_DURATION", "NOT_ELIGIBLE"],
      handler: async ({ body, principal }) => ({ data: await loans.request(principal().user, body) }),
    }),
    defineRoute({
      method: "get",
      path: "/v1/loans",
      operationId: "listLoans",
      tag: TAG,
      summary: "Your loans, newest first",
      auth: "user",
      query: listQuery,
      response: loanListItem.array(),
      paginated: true,
      handler: async ({ query, principal }) => loans.list(principal().user, query),
    }),
    defineRoute({
      method: "get",
      path: "/v1/loans/{loanId}",
      operationId: "getLoan",
      tag: TAG,
      summary: "One of your loans",
      auth: "user",
      params: loanIdParams,
      response: loanDetail,
      errors: ["LOAN_NOT_FOUND"],
      handler: async ({ params, principal }) => ({ data: await loans.detail(principal().user, params.loanId) }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/loans/{loanId}/cancel",
      operationId: "cancelLoan",
      tag: TAG,
      summary: "Cancel a pending request (a funded loan is repaid instead)",
      auth: "user",
      params: loanIdParams,
      response: cancelResponse,
      errors: ["LOAN_NOT_FOUND", "ALREADY_REPAID", "CONFLICT"],
      handler: async ({ params, principal }) => ({ data: await loans.cancel(principal().user, params.loanId) }),
    }),
  ];
}
