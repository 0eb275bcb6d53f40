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
//
// Reorgs: a chain fact reaches the outbox once its block has CONFIRMATIONS (the indexer follows
// head - CONFIRMATIONS), so it is never sent earlier. When a deeper reorg removes a fact, the
// indexer writes chain.fact_reverted; each webhook to which an attempt of the fact was made (the
// receiver may have acted on it, even on an attempt whose answer was lost) receives
// `<event>.reverted`, whose data is the original payload (its id among it). A fact that comes back
// in the new branch (chain.fact_restored) is sent again, with its original id, to each webhook
// that was told `.reverted`. Both wait REORG_FOLLOW_UP_DELAY_MS, so an attempt in flight at the
// revert is logged first; an attempt of a fact that is reverted by then is not made.

import type { Clock } from "../../core/clock.js";
import type { Logger } from "../../core/logger.js";
import type { Db, Tx } from "../db.js";
import { AppError } from "../errors.js";
import { type ConsumedEvent, type ConsumeResult, consumeEventPages } from "../events/consumer.js";
import { domainEvent, recordEvents } from "../events/outbox.js";
import { type ClaimedJob, type JobQueue, PermanentJobError, RetryableJobError } from "../jobs/queue.js";
import type { WebhookEvent } from "./events.js";
import {
  DELIVERED_AS,
  DELIVERED_TYPES,
  type DeliveredType,
  EVERYONES,
  isDeliveredType,
  payloadOfEvent,
  revertedPayload,
  type WebhookPayload,
} from "./payloads.js";
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

/** The outbox events that follow a chain fact through a reorg (written by the indexer). */
const REORG_TYPES = ["chain.fact_reverted", "chain.fact_restored"] as const;
type ReorgType = (typeof REORG_TYPES)[number];
/** A reorg's follow-up waits this long: an attempt in flight at the revert (5 s at most) is logged by then. */
export const REORG_FOLLOW_UP_DELAY_MS = 10_000;

export type DeliveryJobPayload =
  | {
      webhookId: string;
      /** The payload's id: the event's. */
      eventId: string;
      /** The name it is delivered under. */
      event: WebhookEvent;
    }
  | {
      webhookId: string;
      /** The chain.fact_reverted event: the payload's id. */
      eventId: string;
      /** `<name>.reverted` */
      event: string;
      reorg: "reverted";
      /** The reverted fact's event. */
      factId: string;
      /** When the reorg was seen (the payload's timestamp). */
      revertedAt: string;
    }
  | {
      webhookId: string;
      /** The fact's own event, sent again with its id. */
      eventId: string;
      event: WebhookEvent;
      reorg: "restored";
      /** The chain.fact_reverted this undoes: sent again only where that revert was told. */
      revertEventId: string;
    };

type PendingEvent = ConsumedEvent<DeliveredType | ReorgType>;

/** The name a webhook subscribes to for this event, and the job that delivers it to one webhook. */
function deliveryOf(event: PendingEvent): { heardAs: WebhookEvent; job: (webhookId: string) => DeliveryJobPayload } | undefined {
  if (event.type === "chain.fact_reverted" || event.type === "chain.fact_restored") {
    const fact = event.data.type;
    if (!isDeliveredType(fact)) return undefined;
    const heardAs = DELIVERED_AS[fact];
    if (event.type === "chain.fact_reverted") {
      return {
        heardAs,
        job: (webhookId) => ({
          webhookId,
          eventId: event.id,
          event: `${heardAs}.reverted`,
          reorg: "reverted",
          factId: event.data.eventId,
          revertedAt: event.createdAt.toISOString(),
        }),
      };
    }
    const { revertEventId, eventId } = event.data;
    return { heardAs, job: (webhookId) => ({ webhookId, eventId, event: heardAs, reorg: "restored", revertEventId }) };
  }
  const heardAs = DELIVERED_AS[event.type];
  return { heardAs, job: (webhookId) => ({ webhookId, eventId: event.id, event: heardAs }) };
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
  async function fanOut(tx: Tx, events: PendingEvent[]): Promise<void> {
    const now = deps.clock.now();
    const followUpAt = new Date(now.getTime() + REORG_FOLLOW_UP_DELAY_MS);
    const pending = events.flatMap((event) => {
      const delivery = deliveryOf(event);
      return delivery ? [{ event, ...delivery }] : [];
    });
    const names = [...new Set(pending.map((item) => item.heardAs))];
    const users = [...new Set(pending.flatMap(({ event }) => (event.userId ? [event.userId] : [])))];
    const hooks = names.length === 0 ? [] : await deps.repo.subscribers(tx, names, users, EVERYONES);
    const jobs = pending.flatMap(({ event, heardAs, job }) => {
      const everyone = EVERYONES.includes(heardAs);
      return hooks
        .filter((hook) => hook.events.includes(heardAs) && (everyone || hook.userId === event.userId) && event.seq > BigInt(hook.fromSeq))
        .map((hook) => ({
          kind: WEBHOOK_DELIVERY_JOB,
          payload: job(hook.id),
          maxAttempts: WEBHOOK_ATTEMPTS,
          dedupeKey: `webhook:${hook.id}:${event.id}`,
          concurrency: concurrencyOf(hook.id),
          ...(event.type === "chain.fact_reverted" || event.type === "chain.fact_restored" ? { runAt: followUpAt } : {}),
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
      const heard = DELIVERED_TYPES.filter((type) => names.has(DELIVERED_AS[type]));
      if (heard.length === 0) return { applied: 0, contended: false };
      const types = [...heard, ...REORG_TYPES];
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
      const factId = "reorg" in payload && payload.reorg === "reverted" ? payload.factId : payload.eventId;
      const told = "reorg" in payload ? (payload.reorg === "reverted" ? payload.factId : payload.revertEventId) : undefined;
      const { webhook, event, attempted } = await deps.repo.forAttempt(payload.webhookId, factId, told);
      // Deleted, or failing (revived by PATCH status active; its events since can be replayed).
      if (webhook?.status !== "active" || !event) return;
      let body: WebhookPayload;
      if (!("reorg" in payload)) {
        // A reorg removed the fact before this attempt: its follow-up tells what earlier attempts sent.
        if (event.revertedAt !== null) return;
        body = payloadOfEvent(event, payload.event);
      } else if (payload.reorg === "reverted") {
        // Back already, or never sent to this webhook: nothing to take back.
        if (event.revertedAt === null || !attempted) return;
        body = revertedPayload({ id: payload.eventId, revertedAt: payload.revertedAt }, event, DELIVERED_AS[event.type as DeliveredType]);
      } else {
        // Reverted again, or its revert was never told here (the receiver still holds it).
        if (event.revertedAt !== null || !attempted) return;
        body = payloadOfEvent(event, payload.event);
      }
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
              dedupeKey: `webhook.failing:${webhook.id}:${body.id}`,
              now,
            }),
          ]);
          return true;
        });
        if (turned) deps.logger?.warn({ webhookId: webhook.id, eventId: body.id }, "webhook failing after its sixth failed attempt");
        throw new PermanentJobError(`attempt ${job.attempt} of ${WEBHOOK_ATTEMPTS} failed: ${result.error}; the webhook is failing`);
      }
      const scheduled = WEBHOOK_RETRY_DELAYS_MS[job.attempt - 1]!;
      const asked = result.retryAfterMs === undefined ? undefined : Math.min(result.retryAfterMs, MAX_RETRY_AFTER_MS);
      throw new RetryableJobError(result.error ?? "failed", { retryAfterMs: Math.max(scheduled, asked ?? 0) });
    },
  };
}

export type WebhookDeliveries = ReturnType<typeof createWebhookDeliveries>;
