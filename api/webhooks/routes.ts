import type { WebhookDeliveries } from "../../domain/webhooks/deliveries.js";
import { webhooksModule } from "../../domain/webhooks/module.js";
import { secretAdvice, type WebhooksService } from "../../domain/webhooks/service.js";
import { defineRoute, type RouteSpec, routesOf } from "../http/route.js";
import {
  createBody,
  deliveriesQuery,
  delivery,
  deliveryParams,
  LIMIT_NOTE,
  messageOnly,
  replayBody,
  replayResponse,
  rotateBody,
  rotateResponse,
  testBody,
  testResponse,
  updateBody,
  updateResponse,
  webhook,
  webhookIdParams,
  webhookListItem,
} from "./schemas.js";

/** What a webhook route's area rules read of a request: its webhook id, URL and event names. */
const sentOf = ({ params, body }: { params: unknown; body: unknown }) => {
  const sent = (body ?? {}) as { url?: unknown; events?: unknown; event?: unknown };
  return {
    webhookId: (params as { webhookId?: unknown }).webhookId,
    url: sent.url,
    events: sent.event === undefined ? sent.events : [sent.event],
  };
};

export function webhookRoutes({
  webhooks,
  deliveries,
}: {
  webhooks: WebhooksService;
  deliveries: Pick<WebhookDeliveries, "replay">;
}): RouteSpec[] {
  return routesOf(webhooksModule, [
    defineRoute({
      method: "post",
      path: "/v1/webhooks",
      operationId: "createWebhook",
      summary: "Subscribe an endpoint to events",
      description: `Deliveries are POSTs of {id, event, timestamp, data} signed with your secret: x-service-signature (sha256=<hex HMAC-SHA256 of the body>) and the Standard Webhooks headers webhook-id, webhook-timestamp and webhook-signature. ${LIMIT_NOTE}`,
      auth: "user",
      body: createBody,
      response: webhook,
      status: 201,
      errors: ["INVALID_URL", "INVALID_EVENTS", "URL_EXISTS", "WEBHOOK_LIMIT_REACHED"],
      areaRules: async (request) => webhooks.areaRules(request.principal().user.id, sentOf(request)),
      handler: async ({ body, principal }) => ({
        data: await webhooks.create(principal().user.id, body),
        message: secretAdvice(body.secret),
      }),
    }),
    defineRoute({
      method: "get",
      path: "/v1/webhooks",
      operationId: "listWebhooks",
      summary: "Your webhooks, oldest first, each with its last delivery",
      auth: "user",
      response: webhookListItem.array(),
      handler: async ({ principal }) => ({ data: await webhooks.list(principal().user.id) }),
    }),
    defineRoute({
      method: "patch",
      path: "/v1/webhooks/{webhookId}",
      operationId: "updateWebhook",
      summary: "Change a webhook's events, or revive it (status active)",
      auth: "user",
      params: webhookIdParams,
      body: updateBody,
      response: updateResponse,
      errors: ["WEBHOOK_NOT_FOUND", "INVALID_EVENTS"],
      areaRules: async (request) => webhooks.areaRules(request.principal().user.id, sentOf(request)),
      handler: async ({ params, body, principal }) => ({ data: await webhooks.update(principal().user.id, params.webhookId, body) }),
    }),
    defineRoute({
      method: "delete",
      path: "/v1/webhooks/{webhookId}",
      operationId: "deleteWebhook",
      summary: "Delete a webhook and its deliveries log",
      auth: "user",
      params: webhookIdParams,
      envelopeExtra: messageOnly,
      errors: ["WEBHOOK_NOT_FOUND"],
      areaRules: async (request) => webhooks.areaRules(request.principal().user.id, sentOf(request)),
      handler: async ({ params, principal }) => {
        await webhooks.remove(principal().user.id, params.webhookId);
        return { message: "Webhook deleted", extra: {} };
      },
    }),
    defineRoute({
      method: "get",
      path: "/v1/webhooks/{webhookId}/deliveries",
      operationId: "listWebhookDeliveries",
      summary: "A webhook's delivery attempts, newest first",
      auth: "user",
      params: webhookIdParams,
      query: deliveriesQuery,
      response: delivery.array(),
      errors: ["WEBHOOK_NOT_FOUND"],
      areaRules: async (request) => webhooks.areaRules(request.principal().user.id, sentOf(request)),
      handler: async ({ params, query, principal }) => ({
        data: await webhooks.deliveries(principal().user.id, params.webhookId, query.limit),
      }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/webhooks/{webhookId}/test",
      operationId: "testWebhook",
      summary: "Send a signed test delivery now and say how it went",
      description: "Answers once the receiver answered (at most 5 s). The attempt is in the deliveries log.",
      auth: "user",
      params: webhookIdParams,
      body: testBody,
      response: testResponse,
      errors: ["WEBHOOK_NOT_FOUND", "INVALID_EVENTS"],
      areaRules: async (request) => webhooks.areaRules(request.principal().user.id, sentOf(request)),
      handler: async ({ params, body, principal }) => ({ data: await webhooks.test(principal().user.id, params.webhookId, body.event) }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/webhooks/{webhookId}/deliveries/{deliveryId}/resend",
      operationId: "resendWebhookDelivery",
      summary: "Send one logged delivery again now (extension)",
      description:
        "The same event (the same payload id, so a receiver that got it drops it), signed anew, as its next attempt; whatever the webhook's status. Answers like the test endpoint; the attempt is in the log.",
      auth: "user",
      params: deliveryParams,
      response: testResponse,
      errors: ["WEBHOOK_NOT_FOUND", "NOT_FOUND"],
      areaRules: async (request) => webhooks.areaRules(request.principal().user.id, sentOf(request)),
      handler: async ({ params, principal }) => ({
        data: await webhooks.resend(principal().user.id, params.webhookId, params.deliveryId),
      }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/webhooks/{webhookId}/replay",
      operationId: "replayWebhookEvents",
      summary: "Queue again every event since a time (extension)",
      description:
        "For an active webhook (a failing one is 409 CONFLICT: revive it first), every event it subscribes to since `since`, each with the usual six attempts (side by side: receivers order by the payload's timestamp).",
      auth: "user",
      params: webhookIdParams,
      body: replayBody,
      response: replayResponse,
      status: 202,
      errors: ["WEBHOOK_NOT_FOUND", "CONFLICT"],
      areaRules: async (request) => webhooks.areaRules(request.principal().user.id, sentOf(request)),
      handler: async ({ params, body, principal }) => ({
        data: await deliveries.replay(principal().user.id, params.webhookId, new Date(body.since)),
      }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/webhooks/{webhookId}/rotate-secret",
      operationId: "rotateWebhookSecret",
      summary: "Replace the shared secret, the old one signing beside it for 24 hours (extension)",
      auth: "user",
      params: webhookIdParams,
      body: rotateBody,
      response: rotateResponse,
      errors: ["WEBHOOK_NOT_FOUND"],
      areaRules: async (request) => webhooks.areaRules(request.principal().user.id, sentOf(request)),
      handler: async ({ params, body, principal }) => ({
        data: await webhooks.rotateSecret(principal().user.id, params.webhookId, body.secret),
        message: secretAdvice(body.secret),
      }),
    }),
  ]);
}
