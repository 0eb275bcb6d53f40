import { apiKeysModule } from "../../domain/api-keys/module.js";
import type { ApiKeysService } from "../../domain/api-keys/service.js";
import { defineRoute, type RouteSpec, routesOf } from "../http/route.js";
import { apiKey, createdKey, createKeyBody, keyIdParams, revokedKey } from "./schemas.js";

export function apiKeyRoutes({ apiKeys }: { apiKeys: ApiKeysService }): RouteSpec[] {
  return routesOf(apiKeysModule, [
    defineRoute({
      method: "post",
      path: "/v1/api-keys",
      operationId: "createApiKey",
      summary: "Create an API key (Pro and Enterprise)",
      description: "The key is in this answer only; the service keeps its SHA-256. Send it as `X-API-Key`. Needs a bearer token.",
      auth: "token",
      body: createKeyBody,
      response: createdKey,
      status: 201,
      errors: ["FORBIDDEN", "CONFLICT"],
      handler: async ({ body, principal }) => ({ data: await apiKeys.create(principal().user, body.name) }),
    }),
    defineRoute({
      method: "get",
      path: "/v1/api-keys",
      operationId: "listApiKeys",
      summary: "List your active API keys (never the keys themselves)",
      auth: "user",
      response: apiKey.array(),
      handler: async ({ principal }) => ({ data: await apiKeys.list(principal().user) }),
    }),
    defineRoute({
      method: "delete",
      path: "/v1/api-keys/{keyId}",
      operationId: "revokeApiKey",
      summary: "Revoke an API key",
      auth: "token",
      params: keyIdParams,
      response: revokedKey,
      errors: ["FORBIDDEN", "NOT_FOUND"],
      handler: async ({ params, principal }) => ({ data: await apiKeys.revoke(principal().user, params.keyId) }),
    }),
  ]);
}
