// Deliveries of domain events to webhooks, on the job queue (domain/jobs/): the outbox consumer
// `webhooks` only fans out (one `webhook.delivery` job per event and subscribed webhook, in the
// transaction that takes the event), and the job makes the attempts: at 0, 1 min, 5 min, 30 min,
// 2 h and 24 h on the service clock (part 6), a 429 or 503's Retry-After honoured where it asks
// for longer. After the sixth failed attempt the webhook is `failing`.
//
// Who receives what: an event concerning a user goes to that user's webhooks subscribed to its
// name; vault.yield_distributed (everyone's) to every webhook subscribed to it. A lock is never
// told to the vault's owner (it may be a duress lock): `social_vault.locked` goes to the webhooks
// of the vault's guardians who are users, from their silent alert (social_vault.guardian_alert),
// under the name `social_vault.locked`. While a webhook is `failing`, no new event is queued for
// it and its queued deliveries end without an attempt; PATCH status active revives it.

import type { Clock } from "../../core/clock.js";
import type { Logger } from "../../core/logger.js";
import type { Db, Tx } from "../db.js";
import { AppError } from "../errors.js";
import { type ConsumedEvent, type ConsumeResult, consumeEventPages } from "../events/consumer.js";
import { domainEvent, recordEvents } from "../events/outbox.js";
import { type ClaimedJob, type JobQueue, PermanentJobError, RetryableJobError } from "../jobs/queue.js";
import type { WebhookEvent } from "./events.js";
import { DELIVERED_AS, DELIVERED_TYPES, type DeliveredType, EVERYONES, payloadOfEvent } from "./payloads.js";
import type { WebhooksRepo } from "./repo.js";
import type { WebhooksService } from "./service.js";

export const WEBHOOK_DELIVERY_JOB = "webhook.delivery";
/** Attempts of one delivery (part 6). */
export const WEBHOOK_ATTEMPTS = 6;
/** The delay after the n-th failed attempt: 1 min, 5 min, 30 min, 2 h, 24 h (part 6). */
export const WEBHOOK_RETRY_DELAYS_MS = [60_000, 300_000, 1_800_000, 7_200_000, 86_400_000] as const;
/** The longest Retry-After honoured (a receiver asking for a week gets the schedule's last step). */
const MAX_RETRY_AFTER_MS = 86_400_000;
const PAGE_SIZE = 500;
/**
 * Deliveries to one webhook in flight at once, across processes: a slow or dead receiver holds
 * this many of the runners' slots, and the other webhooks' deliveries take the rest.
 */
export const WEBHOOK_CONCURRENCY = 4;
const concurrencyOf = (webhookId: string) => ({ key: `webhook:${webhookId}`, limit: WEBHOOK_CONCURRENCY });
/** How far back a replay may start, and how many events it may queue at most. */
export const REPLAY_MAX_DAYS = 30;
export const REPLAY_MAX_EVENTS = 10_000;

export interface DeliveryJobPayload {
  webhookId: string;
  eventId: string;
  /** The name it is delivered under. */
  event: WebhookEvent;
}

export function createWebhookDeliveries(deps: {
  db: Db;
  repo: WebhooksRepo;
  webhooks: Pick<WebhooksService, "deliver" | "own">;
  jobs: Pick<JobQueue, "enqueueMany" | "wake">;
  clock: Pick<Clock, "now">;
  logger?: Pick<Logger, "warn" | "info">;
}) {
  /** The jobs of a page of events: one per event and active webhook subscribed to its name. */
  async function fanOut(tx: Tx, events: ConsumedEvent<DeliveredType>[]): Promise<void> {
    const names = [...new Set(events.map((event) => DELIVERED_AS[event.type]))];
    const users = [...new Set(events.flatMap((event) => (event.userId ? [event.userId] : [])))];
    const hooks = await deps.repo.subscribers(tx, names, users, EVERYONES);
    const jobs = events.flatMap((event) => {
      const name = DELIVERED_AS[event.type];
      const everyone = EVERYONES.includes(name);
      return hooks
        .filter((hook) => hook.events.includes(name) && (everyone || hook.userId === event.userId) && event.seq > BigInt(hook.fromSeq))
        .map((hook) => ({
          kind: WEBHOOK_DELIVERY_JOB,
          payload: { webhookId: hook.id, eventId: event.id, event: name } satisfies DeliveryJobPayload,
          maxAttempts: WEBHOOK_ATTEMPTS,
          dedupeKey: `webhook:${hook.id}:${event.id}`,
          concurrency: concurrencyOf(hook.id),
        }));
    });
    await deps.jobs.enqueueMany(jobs, tx);
  }

  return {
    /** Fans out the events not yet taken by `webhooks`, a page per transaction. */
    async run(now: Date, hooks: { found?: () => void } = {}): Promise<ConsumeResult> {
      // Only the types some active webhook hears: the others are never read (the consumer's
      // cursor moves over them), and a webhook created later hears only what comes after it (fromSeq).
      const names = new Set(await deps.repo.subscribedNames());
      const types = DELIVERED_TYPES.filter((type) => names.has(DELIVERED_AS[type]));
      if (types.length === 0) return { applied: 0, contended: false };
      const result = await consumeEventPages(deps.db, {
        consumer: "webhooks",
        types,
        now,
        logger: deps.logger,
        batchSize: PAGE_SIZE,
        order: "insertion",
        applyBatch: async (tx, events) => {
          hooks.found?.();
          await fanOut(tx, events);
        },
      });
      if (result.applied > 0) deps.jobs.wake();
      return result;
    },

    /**
     * Queues again, for one of the user's active webhooks, every event it subscribes to that
     * happened since `since` (service clock, at most REPLAY_MAX_DAYS back), each with the usual
     * six attempts: what Svix and Stripe users reach for once a receiver is back.
     * Answers how many were queued.
     */
    async replay(userId: string, webhookId: string, since: Date): Promise<{ queued: number }> {
      const webhook = await deps.webhooks.own(userId, webhookId);
      if (webhook.status !== "active") throw new AppError("CONFLICT", "The webhook is failing: set it active first (PATCH status active)");
      const now = deps.clock.now();
      if (since.getTime() > now.getTime() || now.getTime() - since.getTime() > REPLAY_MAX_DAYS * 86_400_000) {
        throw new AppError("VALIDATION_ERROR", `since must be within the last ${REPLAY_MAX_DAYS} days`, {
          field: "since",
          reason: "out of range",
        });
      }
      const types = DELIVERED_TYPES.filter((type) => webhook.events.includes(DELIVERED_AS[type]));
      const everyones = types.filter((type) => EVERYONES.includes(DELIVERED_AS[type]));
      const events = await deps.db.prisma.$queryRaw<{ id: string; type: DeliveredType }[]>`
        SELECT "id"::text AS "id", "type" FROM "DomainEvent"
          WHERE "createdAt" >= ${since.toISOString()}::timestamp(3) AND "type" = ANY(${types}::text[]) AND "revertedAt" IS NULL
            AND "seq" > ${webhook.fromSeq}
            AND ("userId" = ${userId} OR "type" = ANY(${everyones}::text[]))
          ORDER BY "createdAt", "seq" LIMIT ${REPLAY_MAX_EVENTS + 1}`;
      if (events.length > REPLAY_MAX_EVENTS) {
        throw new AppError("VALIDATION_ERROR", `More than ${REPLAY_MAX_EVENTS} events since then: choose a later since`, {
          field: "since",
          reason: "too many events",
        });
      }
      const replay = now.getTime();
      const ids = await deps.jobs.enqueueMany(
        events.map((event) => ({
          kind: WEBHOOK_DELIVERY_JOB,
          payload: { webhookId, eventId: event.id, event: DELIVERED_AS[event.type] } satisfies DeliveryJobPayload,
          maxAttempts: WEBHOOK_ATTEMPTS,
          dedupeKey: `webhook:${webhookId}:${event.id}:replay:${replay}`,
          concurrency: concurrencyOf(webhookId),
        })),
      );
      return { queued: ids.length };
    },

    /** One attempt of a `webhook.delivery` job (its handler). */
    async attempt(payload: DeliveryJobPayload, job: Pick<ClaimedJob, "attempt">): Promise<void> {
      const { webhook, event } = await deps.repo.forAttempt(payload.webhookId, payload.eventId);
      // Deleted, or failing (revived by PATCH status active; its events since can be replayed).
      if (webhook?.status !== "active") return;
      // A reorg removed the fact before its first attempt: there is nothing to tell.
      if (!event || (event.revertedAt !== null && job.attempt === 1)) return;
      const body = payloadOfEvent(event, payload.event);
      const { result } = await deps.webhooks.deliver(webhook, body, job.attempt);
      if (result.ok) return;
      if (job.attempt >= WEBHOOK_ATTEMPTS) {
        const now = deps.clock.now();
        // The status and its owner's notification (webhook.failing, through the outbox) commit together, once.
        const turned = await deps.db.prisma.$transaction(async (tx) => {
          if (!(await deps.repo.markFailing(tx, webhook.id, now))) return false;
          await recordEvents(tx, [
            domainEvent({
              type: "webhook.failing",
              userId: webhook.userId,
              data: {
                userId: webhook.userId,
                webhookId: webhook.id,
                url: webhook.url,
                lastError: result.error ?? "failed",
                failedAt: now.toISOString(),
              },
              dedupeKey: `webhook.failing:${webhook.id}:${event.id}`,
              now,
            }),
          ]);
          return true;
        });
        if (turned) deps.logger?.warn({ webhookId: webhook.id, eventId: event.id }, "webhook failing after its sixth failed attempt");
        throw new PermanentJobError(`attempt ${job.attempt} of ${WEBHOOK_ATTEMPTS} failed: ${result.error}; the webhook is failing`);
      }
      const scheduled = WEBHOOK_RETRY_DELAYS_MS[job.attempt - 1]!;
      const asked = result.retryAfterMs === undefined ? undefined : Math.min(result.retryAfterMs, MAX_RETRY_AFTER_MS);
      throw new RetryableJobError(result.error ?? "failed", { retryAfterMs: Math.max(scheduled, asked ?? 0) });
    },
  };
}

export type WebhookDeliveries = ReturnType<typeof createWebhookDeliveries>;
