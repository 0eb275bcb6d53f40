import { z } from "zod";
import { EVENT_CATALOGUE } from "../../domain/events/catalogue.js";
import { RESPONSE_TIMEOUT_MS, URL_MAX_CHARS } from "../../domain/webhooks/egress.js";
import { WEBHOOK_EVENTS, type WebhookEvent } from "../../domain/webhooks/events.js";
import { MAX_WEBHOOKS_PER_ACCOUNT, SECRET_ADVICE_CHARS, SECRET_MAX_CHARS } from "../../domain/webhooks/service.js";
import { queryInteger } from "../http/input.js";

// One schema per route part (service-spec part 4, Webhooks). URLs and event names are checked by
// the service (INVALID_URL, INVALID_EVENTS, URL_EXISTS), the rest here (VALIDATION_ERROR); when a
// body fails here, the routes' area rules judge its URL and events first, so part 7's codes win.

const isoDate = z.string().describe("ISO 8601 UTC timestamp");
const eventNames = z
  .array(z.string().max(100))
  .min(1)
  .max(WEBHOOK_EVENTS.length)
  .describe(`event names of service-spec part 6: ${WEBHOOK_EVENTS.join(", ")}; an unknown one is 400 INVALID_EVENTS`);

export const webhookIdParams = z.object({
  webhookId: z.string().max(100).describe("the webhook's id; any other value, like another user's id, is 404 WEBHOOK_NOT_FOUND"),
});

export const createBody = z.strictObject({
  url: z
    .string()
    .max(URL_MAX_CHARS + 1)
    .describe(
      "the endpoint: https (outside production also http on 127.0.0.1, localhost or [::1]); never a private, loopback, link-local or metadata address in production. Otherwise 400 INVALID_URL; one you already registered is 409 URL_EXISTS",
    ),
  events: eventNames,
  secret: z
    .string()
    .min(1)
    .max(SECRET_MAX_CHARS)
    .describe(
      `the shared secret signing the deliveries, 1 to ${SECRET_MAX_CHARS} characters; use ${SECRET_ADVICE_CHARS} or more random characters (a shorter one is taken, and the answer's message says so). Stored encrypted, never returned. x-service-signature is keyed with its UTF-8 bytes; so is webhook-signature, unless it is a Standard Webhooks secret (whsec_ and the canonical base64 of 24 bytes or more), whose decoded bytes are the key. Any other whsec_... text is an ordinary secret`,
    ),
});

export const webhook = z
  .object({
    id: z.string(),
    url: z.string(),
    events: z.array(z.string()),
    status: z.enum(["active", "failing"]).describe("failing after the sixth failed attempt of a delivery; PATCH status active revives it"),
    createdAt: isoDate,
  })
  .meta({ id: "Webhook" });

export const webhookListItem = webhook.extend({
  lastDelivery: z
    .object({ timestamp: isoDate, status: z.enum(["success", "failed"]) })
    .nullable()
    .describe("the newest attempt; null before the first"),
});

export const updateBody = z.strictObject({
  events: eventNames.optional(),
  status: z.literal("active").optional().describe("active: revive a failing webhook"),
});

export const updateResponse = webhook.omit({ createdAt: true });

export const deliveriesQuery = z.object({
  limit: queryInteger({ min: 1, max: 100, default: 20, description: "newest first, 1 to 100 (default 20)" }),
});

export const delivery = z
  .object({
    id: z.string(),
    event: z.string(),
    status: z.enum(["success", "failed"]),
    statusCode: z.number().int().describe("the receiver's HTTP status; 0 when no answer came (refused, timed out, blocked address)"),
    timestamp: isoDate,
    duration: z.number().int().describe("milliseconds"),
    error: z.string().optional().describe("why it failed; only when failed"),
  })
  .meta({ id: "WebhookDelivery" });

export const testBody = z.strictObject({
  event: z.string().max(100).describe("an event name of part 6; the payload has `test: true` at its top and data {test: true, message}"),
});

export const testResponse = z.object({
  delivered: z.boolean().describe(`the receiver answered 2xx within ${RESPONSE_TIMEOUT_MS / 1000} s`),
  statusCode: z.number().int(),
  duration: z.number().int().describe("milliseconds"),
});

export const messageOnly = z.object({});

export const deliveryParams = webhookIdParams.extend({
  deliveryId: z.string().max(100).describe("a delivery of the webhook's log; any other value is 404 NOT_FOUND"),
});

export const rotateBody = z.strictObject({
  secret: createBody.shape.secret.describe(
    `the new shared secret, 1 to ${SECRET_MAX_CHARS} characters under the rules of POST /v1/webhooks' secret (${SECRET_ADVICE_CHARS} or more random characters advised); the current one keeps signing beside it for 24 hours`,
  ),
});
export const rotateResponse = z.object({
  id: z.string(),
  previousSecretExpiresAt: isoDate.describe("until then every delivery carries two sha256= values and two v1, signatures (new first)"),
});

export const replayBody = z.strictObject({
  since: z.iso
    .datetime({ offset: true })
    .describe("ISO 8601: every event the webhook subscribes to from then on (at most 30 days back, 10,000 events)"),
});
export const replayResponse = z.object({
  queued: z.number().int().describe("deliveries queued (they run side by side, in no promised order)"),
});

/** A test delivery's data (the test endpoint's, and such a delivery resent): no such event happened. */
const testData = z.object({ test: z.literal(true), message: z.string() });
const payloadOf = (name: WebhookEvent) =>
  z.object({
    id: z.string().describe("the event's id, the same in every attempt: de-duplicate by it"),
    event: z.literal(name),
    timestamp: isoDate,
    // Every name is delivered with its catalogue namesake's public data (a guardian's alert of a lock in social_vault.locked's shape).
    data: EVENT_CATALOGUE[name].data,
  });
const revertedOf = (name: WebhookEvent) =>
  z.object({
    id: z.string().describe("the revert's own id"),
    event: z.literal(`${name}.reverted`),
    timestamp: isoDate.describe("when the reorg removed the fact"),
    data: payloadOf(name).describe("the payload that was sent, its id among it"),
  });

/**
 * The body of a webhook delivery (part 6): {id, event, timestamp, data} by event name, and
 * `<name>.reverted` when a reorg removed a fact that was sent. In the OpenAPI document as the
 * component WebhookEvent, which the client libraries' webhook verifier returns.
 */
export const webhookEvent = z
  .discriminatedUnion("event", [payloadOf(WEBHOOK_EVENTS[0]), ...WEBHOOK_EVENTS.slice(1).map(payloadOf), ...WEBHOOK_EVENTS.map(revertedOf)])
  .describe(
    "A webhook delivery's JSON body, signed with x-service-signature (sha256=<hex HMAC-SHA256 of the exact body>) and the Standard Webhooks headers webhook-id, webhook-timestamp and webhook-signature; `data` is the named event's. A test delivery is a WebhookTestEvent.",
  );

/** What POST /v1/webhooks/{webhookId}/test delivers (and such a delivery resent): `test: true` at its top. */
export const webhookTestEvent = z
  .object({
    id: z.string(),
    event: z.enum(WEBHOOK_EVENTS).describe("the name the test was sent as"),
    timestamp: isoDate,
    test: z.literal(true),
    data: testData,
  })
  .describe("A test delivery: no such event happened. Signed as every delivery is.");

export const LIMIT_NOTE = `An account has at most ${MAX_WEBHOOKS_PER_ACCOUNT} webhooks (409 WEBHOOK_LIMIT_REACHED beyond).`;
