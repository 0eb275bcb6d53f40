import { trustScoreModule } from "../../domain/trust-score/module.js";
import type { TrustScoreService } from "../../domain/trust-score/service.js";
import { defineRoute, type RouteSpec, routesOf } from "../http/route.js";
import {
  historyQuery,
  historyResponse,
  modifiersResponse,
  simulateBody,
  simulateResponse,
  tiersResponse,
  trustScore,
  trustUserParams,
} from "./schemas.js";

const PRIVACY = "The owner may always read it; other users only when the owner set `settings.publicTrustScore` (else 403 SCORE_PRIVATE).";

export function trustScoreRoutes({ trust }: { trust: TrustScoreService }): RouteSpec[] {
  return routesOf(trustScoreModule, [
    // Registered before /{userId} so "tiers" is never taken for a user id.
    defineRoute({
      method: "get",
      path: "/v1/trust-score/tiers",
      operationId: "listTrustTiers",
      summary: "The tier table: score ranges and borrowing power",
      auth: "none",
      response: tiersResponse,
      handler: async () => ({ data: trust.tiers() }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/trust-score/simulate",
      operationId: "simulateTrustScore",
      summary: "Project your score after hypothetical actions",
      description:
        "repayment: +2 per on-time repayment (and its on-time bonus); add_guardian: +5 each, at most 3 count; level_up: XP levels gained; deposit: count is the amount in whole USDC added to the volume.",
      auth: "user",
      body: simulateBody,
      response: simulateResponse,
      handler: async ({ body, principal }) => ({ data: await trust.simulate(principal().user, body.actions) }),
    }),
    defineRoute({
      method: "get",
      path: "/v1/trust-score/{userId}",
      operationId: "getTrustScore",
      summary: "A user's Trust Score, tier and borrowing power",
      description: PRIVACY,
      auth: "user",
      params: trustUserParams,
      response: trustScore,
      errors: ["USER_NOT_FOUND", "SCORE_PRIVATE"],
      handler: async ({ params, principal }) => ({ data: await trust.get(principal().user, params.userId) }),
    }),
    defineRoute({
      method: "get",
      path: "/v1/trust-score/{userId}/history",
      operationId: "getTrustScoreHistory",
      summary: "A user's score history, one entry per day with a change",
      description: `period: 7d, 30d (default), 90d, 1y or all. ${PRIVACY}`,
      auth: "user",
      params: trustUserParams,
      query: historyQuery,
      response: historyResponse,
      errors: ["USER_NOT_FOUND", "SCORE_PRIVATE"],
      handler: async ({ params, query, principal }) => ({ data: await trust.history(principal().user, params.userId, query.period) }),
    }),
    defineRoute({
      method: "get",
      path: "/v1/trust-score/{userId}/modifiers",
      operationId: "getTrustScoreModifiers",
      summary: "The modifiers applied to a user's base score",
      description: PRIVACY,
      auth: "user",
      params: trustUserParams,
      response: modifiersResponse,
      errors: ["USER_NOT_FOUND", "SCORE_PRIVATE"],
      handler: async ({ params, principal }) => ({ data: await trust.modifiers(principal().user, params.userId) }),
    }),
  ]);
}
