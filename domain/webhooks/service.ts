// Users' webhooks (service-spec part 4 "Webhooks"): subscriptions of an endpoint to event names,
// their shared secret sealed at rest, the deliveries log, and the test delivery. A delivery is
// signed (signing.ts) and sent through the SSRF-safe egress (egress.ts) by `deliver`, the one
// path of every attempt, which records it in the log.

import { randomUUID } from "node:crypto";
import type { Clock } from "../../core/clock.js";
import { isUuid } from "../../core/text.js";
import { AppError } from "../errors.js";
import type { WebhookEgress } from "./egress.js";
import { urlRefusal } from "./egress.js";
import { type DeliveryEvent, isDeliveryEvent, isWebhookEvent, revertedEventOf, type WebhookEvent } from "./events.js";
import { payloadOfEvent, revertedPayload, type WebhookPayload } from "./payloads.js";
import type { DeliveryRow, WebhookRow, WebhooksRepo } from "./repo.js";
import type { SecretBox } from "./secrets.js";
import { isStandardSecret, signDelivery } from "./signing.js";

/** Webhooks one account may have (service-spec part 8: "not shown"; D-77). */
export const MAX_WEBHOOKS_PER_ACCOUNT = 10;
/** The longest shared secret. Any non-empty one is taken (as GitHub's webhooks take any); SECRET_ADVICE_CHARS is advised. */
export const SECRET_MAX_CHARS = 256;
/** A secret shorter than this (and not a Standard Webhooks secret) is taken with advice in the answer's message. */
export const SECRET_ADVICE_CHARS = 24;
/** How long a rotated-out secret still signs beside the new one (service clock). */
export const ROTATION_OVERLAP_MS = 24 * 3_600_000;
/** How long the deliveries log keeps an attempt (service clock): the webhooks.prune-log job deletes older ones. */
export const DELIVERY_LOG_RETENTION_MS = 30 * 24 * 3_600_000;

export type WebhookStatus = "active" | "failing";
export type DeliveryStatus = "success" | "failed";

export interface WebhookView {
  id: string;
  url: string;
  events: WebhookEvent[];
  status: WebhookStatus;
  createdAt: string;
}

export interface DeliveryView {
  id: string;
  /** The name as delivered (a name a later release took off the list stays in the log as it was). */
  event: string;
  status: DeliveryStatus;
  statusCode: number;
  timestamp: string;
  duration: number;
  error?: string;
}

const viewOf = (row: WebhookRow): WebhookView => ({
  id: row.id,
  url: row.url,
  events: row.events,
  status: row.status as WebhookStatus,
  createdAt: row.createdAt.toISOString(),
});

export const deliveryViewOf = (row: DeliveryRow): DeliveryView => ({
  id: row.id,
  event: row.event,
  status: row.status as DeliveryStatus,
  statusCode: row.statusCode,
  timestamp: row.createdAt.toISOString(),
  duration: row.durationMs,
  ...(row.error === null ? {} : { error: row.error }),
});

const TEST_DATA = { test: true, message: "A test delivery: no such event happened." };
/** A test delivery says so at its top too (D-114): a receiver tells it from a real event before reading `data`. */
const testPayload = (id: string, event: DeliveryEvent, timestamp: string): WebhookPayload => ({
  id,
  event,
  timestamp,
  test: true,
  data: TEST_DATA,
});

/**
 * What an answer that took `secret` says about it, or undefined for a strong one: a short secret
 * can be guessed, and a `whsec_` text that is not a Standard Webhooks secret signs with its own bytes.
 */
export function secretAdvice(secret: string): string | undefined {
  if (isStandardSecret(secret)) return undefined;
  if (secret.startsWith("whsec_")) {
    return "This secret is not a Standard Webhooks secret (whsec_ and the base64 of 24 bytes or more), so webhook-signature is keyed with its own UTF-8 bytes: verify with whsec_ followed by their base64";
  }
  if (secret.length < SECRET_ADVICE_CHARS) {
    return `This secret is ${secret.length} characters long: anyone who guesses it can forge deliveries. Use ${SECRET_ADVICE_CHARS} or more random characters (rotate-secret replaces it without losing a delivery)`;
  }
  return undefined;
}

const unknownEvents = (unknown: readonly string[]) =>
  new AppError("INVALID_EVENTS", `Unknown event types: ${unknown.join(", ")}`, {
    field: "events",
    reason: `unknown: ${unknown.join(", ")}`,
  });

const urlExists = () => new AppError("URL_EXISTS", "You already have a webhook for this URL", { field: "url", reason: "registered" });

export function createWebhooksService({
  repo,
  secrets,
  egress,
  clock,
  production,
}: {
  repo: WebhooksRepo;
  secrets: SecretBox;
  egress: WebhookEgress;
  clock: Pick<Clock, "now">;
  production: boolean;
}) {
  /** The user's webhook, or WEBHOOK_NOT_FOUND (also for another user's id and for a malformed one). */
  async function own(userId: string, id: string): Promise<WebhookRow> {
    const row = isUuid(id) ? await repo.find(userId, id) : null;
    if (!row) throw new AppError("WEBHOOK_NOT_FOUND", "Webhook not found");
    return row;
  }

  function checkedUrl(url: string): string {
    const refused = urlRefusal(url, { production });
    if (refused) throw new AppError("INVALID_URL", `The webhook URL ${refused}`, { field: "url", reason: refused });
    return new URL(url).href;
  }

  /** The event names sent, typed once checked (INVALID_EVENTS for an unknown one), without repeats. */
  function checkedEvents(events: readonly string[]): WebhookEvent[] {
    const known = events.filter(isWebhookEvent);
    if (known.length < events.length) throw unknownEvents(events.filter((name) => !isWebhookEvent(name)));
    return [...new Set(known)];
  }

  function checkedEvent(name: string): WebhookEvent {
    if (!isWebhookEvent(name)) throw unknownEvents([name]);
    return name;
  }

  /**
   * One attempt: the payload signed with the webhook's secret (real time in webhook-timestamp),
   * POSTed through the egress, recorded in the deliveries log. Never throws for the receiver's
   * failures: the answer says what happened. `logged` is the log row's write, which the caller
   * awaits (a delivery job sends its next item meanwhile and awaits all before its outcome).
   */
  async function deliver(webhook: WebhookRow, payload: WebhookPayload, attempt: number) {
    const body = JSON.stringify(payload);
    // A rotated-out secret signs beside the new one for a day (ROTATION_OVERLAP_MS), on real time.
    const previous =
      webhook.previousSecret !== null &&
      webhook.previousSecretUntil !== null &&
      webhook.previousSecretUntil.getTime() > clock.now().getTime()
        ? [await secrets.open(webhook.previousSecret)]
        : [];
    const headers = signDelivery({
      secrets: [await secrets.open(webhook.secret), ...previous],
      messageId: payload.id,
      timestampSeconds: Math.floor(Date.now() / 1000),
      body,
    });
    const result = await egress.post(webhook.url, body, { ...headers });
    const logged = repo.recordDelivery({
      webhookId: webhook.id,
      eventId: payload.id,
      event: payload.event,
      attempt,
      status: result.ok ? "success" : "failed",
      statusCode: result.statusCode,
      durationMs: result.durationMs,
      error: result.ok ? null : (result.error ?? "failed"),
      createdAt: clock.now(),
    });
    // Handled here too: a failed write while the caller is still sending is not an unhandled rejection.
    logged.catch(() => {});
    return { result, logged };
  }

  /** The payload of a logged delivery, built again: the event's (a test delivery's again, with its id). */
  async function payloadOf(delivery: DeliveryRow): Promise<WebhookPayload> {
    // A delivery of a name no longer delivered stays in the log but is not sent again.
    if (!isDeliveryEvent(delivery.event)) throw unknownEvents([delivery.event]);
    const event = isUuid(delivery.eventId) ? await repo.event(delivery.eventId) : null;
    if (event?.type === "chain.fact_reverted") {
      // A `.reverted` is built from the fact it takes back.
      const fact = await repo.event((event.data as { eventId: string }).eventId);
      const name = revertedEventOf(delivery.event);
      if (fact && name) return revertedPayload({ id: event.id, revertedAt: event.createdAt.toISOString() }, fact, name);
    }
    if (event) return payloadOfEvent(event, delivery.event);
    return testPayload(delivery.eventId, delivery.event, delivery.createdAt.toISOString());
  }

  return {
    deliver,
    own,

    /**
     * Part 7's webhook conditions on a request that failed its schema (a route's `areaRules`), on
     * what was sent: the webhook (WEBHOOK_NOT_FOUND), the URL (INVALID_URL), the event names
     * (INVALID_EVENTS), then the URL's uniqueness (URL_EXISTS), the order create and update follow.
     */
    async areaRules(userId: string, sent: { webhookId?: unknown; url?: unknown; events?: unknown }): Promise<void> {
      if (typeof sent.webhookId === "string") await own(userId, sent.webhookId);
      const url = typeof sent.url === "string" ? checkedUrl(sent.url) : undefined;
      if (Array.isArray(sent.events)) checkedEvents(sent.events.filter((name): name is string => typeof name === "string"));
      if (url !== undefined && (await repo.hasUrl(userId, url))) throw urlExists();
    },

    /** Deletes the logged attempts older than DELIVERY_LOG_RETENTION_MS; answers how many. */
    pruneLog: (now: Date) => repo.pruneDeliveries(new Date(now.getTime() - DELIVERY_LOG_RETENTION_MS)),

    /**
     * A new secret: it signs from now on, and the current one beside it for 24 hours (two
     * `sha256=` values and two `v1,` signatures), so receivers switch without losing a delivery.
     */
    async rotateSecret(userId: string, id: string, secret: string): Promise<{ id: string; previousSecretExpiresAt: string }> {
      await own(userId, id);
      const now = clock.now();
      const until = new Date(now.getTime() + ROTATION_OVERLAP_MS);
      if (!(await repo.rotate(userId, id, await secrets.seal(secret), until, now)))
        throw new AppError("WEBHOOK_NOT_FOUND", "Webhook not found");
      return { id, previousSecretExpiresAt: until.toISOString() };
    },

    /** One logged delivery sent again now (its event's payload, the same id), as its next attempt, whatever the webhook's status. */
    async resend(userId: string, id: string, deliveryId: string): Promise<{ delivered: boolean; statusCode: number; duration: number }> {
      const webhook = await own(userId, id);
      const earlier = isUuid(deliveryId) ? await repo.delivery(webhook.id, deliveryId) : null;
      if (!earlier)
        throw new AppError("NOT_FOUND", "Delivery not found", { field: "deliveryId", reason: "not a delivery of this webhook" });
      const payload = await payloadOf(earlier);
      const { result, logged } = await deliver(webhook, payload, (await repo.lastAttempt(webhook.id, payload.id)) + 1);
      await logged;
      return { delivered: result.ok, statusCode: result.statusCode, duration: result.durationMs };
    },

    async create(userId: string, input: { url: string; events: string[]; secret: string }): Promise<WebhookView> {
      const url = checkedUrl(input.url);
      const events = checkedEvents(input.events);
      const now = clock.now();
      const created = await repo.create(
        {
          userId,
          url,
          events,
          secret: await secrets.seal(input.secret),
          previousSecret: null,
          previousSecretUntil: null,
          status: "active",
          createdAt: now,
          updatedAt: now,
        },
        MAX_WEBHOOKS_PER_ACCOUNT,
      );
      if (created === "exists") throw urlExists();
      if (created === "limit") {
        throw new AppError("WEBHOOK_LIMIT_REACHED", `An account has at most ${MAX_WEBHOOKS_PER_ACCOUNT} webhooks; delete one first`);
      }
      return viewOf(created);
    },

    async list(userId: string): Promise<(WebhookView & { lastDelivery: { timestamp: string; status: DeliveryStatus } | null })[]> {
      const rows = await repo.list(userId);
      const last = await repo.lastDeliveries(rows.map((row) => row.id));
      return rows.map((row) => {
        const delivery = last.get(row.id);
        return {
          ...viewOf(row),
          lastDelivery: delivery ? { timestamp: delivery.createdAt.toISOString(), status: delivery.status as DeliveryStatus } : null,
        };
      });
    },

    async update(userId: string, id: string, patch: { events?: string[]; status?: "active" }): Promise<Omit<WebhookView, "createdAt">> {
      await own(userId, id);
      const events = patch.events === undefined ? undefined : checkedEvents(patch.events);
      const row = await repo.update(
        userId,
        id,
        { ...(events ? { events } : {}), ...(patch.status ? { status: patch.status } : {}) },
        clock.now(),
      );
      if (!row) throw new AppError("WEBHOOK_NOT_FOUND", "Webhook not found");
      const { createdAt: _createdAt, ...view } = viewOf(row);
      return view;
    },

    async remove(userId: string, id: string): Promise<void> {
      if (!isUuid(id) || !(await repo.remove(userId, id))) throw new AppError("WEBHOOK_NOT_FOUND", "Webhook not found");
    },

    async deliveries(userId: string, id: string, limit: number): Promise<DeliveryView[]> {
      await own(userId, id);
      return (await repo.deliveries(id, limit)).map(deliveryViewOf);
    },

    /**
     * A test delivery of an event name, now: a payload of that name whose data says it is a test
     * (`test` true at its top and in `data`), signed and sent like every delivery, and recorded in the log. `event` is
     * the name as sent (INVALID_EVENTS when it is not one of part 6's).
     */
    async test(userId: string, id: string, event: string): Promise<{ delivered: boolean; statusCode: number; duration: number }> {
      const webhook = await own(userId, id);
      const payload: WebhookPayload = testPayload(randomUUID(), checkedEvent(event), clock.now().toISOString());
      const { result, logged } = await deliver(webhook, payload, 1);
      await logged;
      return { delivered: result.ok, statusCode: result.statusCode, duration: result.durationMs };
    },
  };
}

export type WebhooksService = ReturnType<typeof createWebhooksService>;
