// Deliveries of domain events to webhooks, on the job queue (domain/jobs/): the outbox consumer
// `webhooks` only fans out (in the transaction that takes the events, `webhook.delivery` jobs of up
// to MAX_ITEMS_PER_JOB events for one subscribed webhook, or the events join its batch still
// waiting for a slot), and the job makes each event's attempts: at 0, 1 min, 5 min, 30 min,
// 2 h and 24 h on the service clock (part 6), a 429 or 503's Retry-After honoured where it asks
// for longer. After the sixth failed attempt the webhook is `failing`.
//
// Who receives what: an event concerning a user goes to that user's webhooks subscribed to its
// name; vault.yield_distributed (everyone's) to every webhook subscribed to it. A lock
// (`social_vault.locked`) goes to the owner's webhooks, the owner's own server-side integrations
// (the lock's answer already told the caller; the owner's feed, devices and e-mail hear nothing of
// it, as it may be a duress lock), and, under the same name, to the webhooks of the vault's
// guardians who are users, from their silent alert (social_vault.guardian_alert). While a webhook is `failing`, no new event is queued for
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
import type { Db, RawTx } from "../db.js";
import { AppError } from "../errors.js";
import { type ConsumedEvent, type ConsumeResult, consumeEventPages } from "../events/consumer.js";
import { domainEvent, recordEvents } from "../events/outbox.js";
import { type ClaimedJob, type EnqueueInput, type JobQueue, PermanentJobError, RetryableJobError } from "../jobs/queue.js";
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
import type { ItemRead, WebhookRow, WebhooksRepo } from "./repo.js";
import type { WebhooksService } from "./service.js";

export const WEBHOOK_DELIVERY_JOB = "webhook.delivery";
/** Attempts of one delivery (part 6). */
export const WEBHOOK_ATTEMPTS = 6;
/** The delay after the n-th failed attempt: 1 min, 5 min, 30 min, 2 h, 24 h (part 6). */
export const WEBHOOK_RETRY_DELAYS_MS = [60_000, 300_000, 1_800_000, 7_200_000, 86_400_000] as const;
/** The longest Retry-After honoured (a receiver asking for a week gets the schedule's last step). */
const MAX_RETRY_AFTER_MS = 86_400_000;
const PAGE_SIZE = 2000;
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

/** One delivery a job makes: an event, or a reorg's follow-up, under the name it is delivered as. */
export type DeliveryItem =
  | {
      /** The payload's id: the event's. */
      eventId: string;
      /** The name it is delivered under. */
      event: WebhookEvent;
    }
  | {
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
      /** The fact's own event, sent again with its id. */
      eventId: string;
      event: WebhookEvent;
      reorg: "restored";
      /** The chain.fact_reverted this undoes: sent again only where that revert was told. */
      revertEventId: string;
    };

/**
 * A `webhook.delivery` job: deliveries to one webhook, made one after the other (each its own
 * signed request and log row), so a webhook's WEBHOOK_CONCURRENCY jobs are that many requests in
 * flight. A fan-out page gives one job per webhook (MAX_ITEMS_PER_JOB at most); retries,
 * replays and reorg follow-ups carry one item.
 */
export interface DeliveryJobPayload {
  webhookId: string;
  items: DeliveryItem[];
  /** A fan-out's batch: while it waits for a slot, later events for its webhook join it (JobQueue.joinWaiting). */
  batch?: true;
  /** Attempts of its item made before this job's first try (a retry split out of a batch). */
  attemptOffset?: number;
}
/** A job queued before batches: one item, flat. */
type FlatPayload = { webhookId: string } & DeliveryItem;
const itemsOf = (payload: DeliveryJobPayload | FlatPayload): DeliveryItem[] => {
  if ("items" in payload) return payload.items;
  const { webhookId: _webhookId, ...item } = payload;
  return [item as DeliveryItem];
};
/** Items per fan-out job: a page's events for one webhook, sent one after the other. */
export const MAX_ITEMS_PER_JOB = 50;
/** A page's events for one webhook are spread over its concurrency in jobs of at least this many (a job costs a claim and an outcome). */
export const MIN_ITEMS_PER_JOB = 10;

type PendingEvent = ConsumedEvent<DeliveredType | ReorgType>;

/** The name a webhook subscribes to for this event, and what a job delivers of it. */
function deliveryOf(event: PendingEvent): { heardAs: WebhookEvent; item: DeliveryItem; followUp: boolean } | undefined {
  if (event.type === "chain.fact_reverted" || event.type === "chain.fact_restored") {
    const fact = event.data.type;
    if (!isDeliveredType(fact)) return undefined;
    const heardAs = DELIVERED_AS[fact];
    if (event.type === "chain.fact_reverted") {
      return {
        heardAs,
        followUp: true,
        item: {
          eventId: event.id,
          event: `${heardAs}.reverted`,
          reorg: "reverted",
          factId: event.data.eventId,
          revertedAt: event.createdAt.toISOString(),
        },
      };
    }
    const { revertEventId, eventId } = event.data;
    return { heardAs, followUp: true, item: { eventId, event: heardAs, reorg: "restored", revertEventId } };
  }
  const heardAs = DELIVERED_AS[event.type];
  return { heardAs, followUp: false, item: { eventId: event.id, event: heardAs } };
}

/** The event an item's attempt reads, and the payload id whose earlier attempt decides whether a follow-up is sent. */
const factOf = (item: DeliveryItem) => ("reorg" in item && item.reorg === "reverted" ? item.factId : item.eventId);
const toldOf = (item: DeliveryItem) => ("reorg" in item ? (item.reorg === "reverted" ? item.factId : item.revertEventId) : undefined);

export function createWebhookDeliveries(deps: {
  db: Db;
  repo: WebhooksRepo;
  webhooks: Pick<WebhooksService, "deliver" | "own">;
  jobs: Pick<JobQueue, "enqueueMany" | "joinWaiting" | "wake">;
  clock: Pick<Clock, "now">;
  logger?: Pick<Logger, "warn" | "info">;
}) {
  /**
   * The jobs of a page of events: per active webhook subscribed to their names, its events in
   * order, spread over its concurrency in jobs of MIN_ITEMS_PER_JOB to MAX_ITEMS_PER_JOB; a
   * reorg's follow-ups in jobs of their own, due later.
   */
  async function fanOut(tx: RawTx, events: PendingEvent[]): Promise<void> {
    const now = deps.clock.now();
    const followUpAt = new Date(now.getTime() + REORG_FOLLOW_UP_DELAY_MS);
    const pending = events.flatMap((event) => {
      const delivery = deliveryOf(event);
      return delivery ? [{ event, ...delivery }] : [];
    });
    const names = [...new Set(pending.map((entry) => entry.heardAs))];
    const users = [...new Set(pending.flatMap(({ event }) => (event.userId ? [event.userId] : [])))];
    const hooks = names.length === 0 ? [] : await deps.repo.subscribers(tx, names, users, EVERYONES);
    const perHook = hooks
      .map((hook) => ({
        hook,
        mine: pending.filter(
          ({ event, heardAs }) =>
            hook.events.includes(heardAs) &&
            (EVERYONES.includes(heardAs) || hook.userId === event.userId) &&
            event.seq > BigInt(hook.fromSeq),
        ),
      }))
      .filter(({ mine }) => mine.length > 0);
    // What is due now first joins the webhook's batch still waiting for a slot, if any.
    const dueOf = (mine: typeof pending) => mine.filter((entry) => !entry.followUp);
    const joined = await deps.jobs.joinWaiting(
      perHook.map(({ hook, mine }) => ({
        kind: WEBHOOK_DELIVERY_JOB,
        concurrencyKey: concurrencyOf(hook.id).key,
        items: dueOf(mine).map((entry) => entry.item),
      })),
      MAX_ITEMS_PER_JOB,
      tx,
    );
    const jobs: EnqueueInput<DeliveryJobPayload>[] = [];
    for (const [h, { hook, mine }] of perHook.entries()) {
      // Keyed by the first outbox event it carries: a fan-out that ran twice would enqueue nothing new.
      const job = (entries: typeof mine, runAt?: Date) => ({
        kind: WEBHOOK_DELIVERY_JOB,
        payload: { webhookId: hook.id, items: entries.map((entry) => entry.item), ...(runAt ? {} : { batch: true as const }) },
        maxAttempts: WEBHOOK_ATTEMPTS,
        dedupeKey: `webhook:${hook.id}:${entries[0]!.event.id}`,
        concurrency: concurrencyOf(hook.id),
        ...(runAt ? { runAt } : {}),
      });
      const due = dueOf(mine).slice(joined[h] ?? 0);
      // Spread over the webhook's concurrency: a page's few events for it go out side by side, not
      // one after the other in one job (a steady stream's latency); a burst's fill jobs of the most.
      const size = Math.min(MAX_ITEMS_PER_JOB, Math.max(MIN_ITEMS_PER_JOB, Math.ceil(due.length / WEBHOOK_CONCURRENCY)));
      for (let first = 0; first < due.length; first += size) jobs.push(job(due.slice(first, first + size)));
      for (const entry of mine.filter((candidate) => candidate.followUp)) jobs.push(job([entry], followUpAt));
    }
    await deps.jobs.enqueueMany(jobs, tx);
  }

  /** The webhook turns failing after an item's sixth failed attempt, with its owner's notification (through the outbox), once. */
  async function turnFailing(webhook: WebhookRow, payloadId: string, error: string): Promise<void> {
    const now = deps.clock.now();
    const turned = await deps.db.prisma.$transaction(async (tx) => {
      if (!(await deps.repo.markFailing(tx, webhook.id, now))) return false;
      await recordEvents(tx, [
        domainEvent({
          type: "webhook.failing",
          userId: webhook.userId,
          data: { userId: webhook.userId, webhookId: webhook.id, url: webhook.url, lastError: error, failedAt: now.toISOString() },
          dedupeKey: `webhook.failing:${webhook.id}:${payloadId}`,
          now,
        }),
      ]);
      return true;
    });
    if (turned) deps.logger?.warn({ webhookId: webhook.id, eventId: payloadId }, "webhook failing after its sixth failed attempt");
  }

  /** The payload an item sends now, or null when there is nothing to send (see the reorg rules above). */
  function bodyOf(item: DeliveryItem, read: ItemRead): WebhookPayload | null {
    const { event, attempted } = read;
    if (!event) return null;
    if (!("reorg" in item)) {
      // A reorg removed the fact before this attempt: its follow-up tells what earlier attempts sent.
      return event.revertedAt === null ? payloadOfEvent(event, item.event) : null;
    }
    if (item.reorg === "reverted") {
      // Back already, or never sent to this webhook: nothing to take back.
      if (event.revertedAt === null || !attempted) return null;
      return revertedPayload({ id: item.eventId, revertedAt: item.revertedAt }, event, DELIVERED_AS[event.type as DeliveredType]);
    }
    // Reverted again, or its revert was never told here (the receiver still holds it).
    return event.revertedAt !== null || !attempted ? null : payloadOfEvent(event, item.event);
  }

  /** bodyOf, where an event whose stored data no longer matches the catalogue is said and skipped: it never holds the batch. */
  function sendable(item: DeliveryItem, read: ItemRead): WebhookPayload | null {
    try {
      return bodyOf(item, read);
    } catch (error) {
      deps.logger?.warn(
        { eventId: item.eventId, event: item.event, error: (error as Error).message },
        "webhook event not sendable; skipped",
      );
      return null;
    }
  }

  /** The delay before the attempt after `attempt`: the schedule's, or a longer Retry-After. */
  function retryDelay(attempt: number, retryAfterMs: number | undefined): number {
    const scheduled = WEBHOOK_RETRY_DELAYS_MS[attempt - 1]!;
    return Math.max(scheduled, retryAfterMs === undefined ? 0 : Math.min(retryAfterMs, MAX_RETRY_AFTER_MS));
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
        // A delivery reads its event when it is sent; a reorg's follow-up names its fact in its data.
        dataFor: REORG_TYPES,
        // On plain SQL: a page is a few thousand ids in and out, and its jobs' items.
        applyBatchSql: async (tx, events) => {
          hooks.found?.();
          await fanOut(tx, events);
        },
        afterCommit: () => deps.jobs.wake(),
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
          payload: { webhookId, items: [{ eventId: event.id, event: DELIVERED_AS[event.type] }] } satisfies DeliveryJobPayload,
          maxAttempts: WEBHOOK_ATTEMPTS,
          dedupeKey: `webhook:${webhookId}:${event.id}:replay:${replay}`,
          concurrency: concurrencyOf(webhookId),
        })),
      );
      return { queued: ids.length };
    },

    /**
     * One try of a `webhook.delivery` job (its handler): each item's attempt, one after the other.
     * One item failing is retried by the queue on the schedule. In a batch, the failed item goes
     * on as a job of its own on the schedule, and the items after it as jobs of their own, due
     * now (a receiver that times out holds the rest no longer). A try after one whose worker died
     * first logs that attempt for each item it left unlogged: it may have reached the receiver.
     */
    async attempt(payload: DeliveryJobPayload | FlatPayload, job: Pick<ClaimedJob, "attempt" | "createdAt">): Promise<void> {
      const { webhookId } = payload;
      const items = itemsOf(payload);
      const offset = "attemptOffset" in payload ? (payload.attemptOffset ?? 0) : 0;
      const attempt = job.attempt + offset;
      // A first try has no attempts of its own before it: the log is read for later tries only.
      const { webhook, items: reads } = await deps.repo.forJob(
        webhookId,
        items.map((item) => ({ eventId: factOf(item), attemptedId: toldOf(item), payloadId: item.eventId })),
        job.createdAt,
        { history: attempt > 1 },
      );
      // Each attempt's log row is written while the next request goes out (one coalesced INSERT
      // for many), and all of them before the job's outcome.
      const logs: Promise<unknown>[] = [];
      try {
        for (const [i, item] of items.entries()) {
          const read = reads[i]!;
          // Deleted, or failing (revived by PATCH status active; its events since can be replayed).
          if (webhook?.status !== "active") return;
          // Delivered by the try before, whose worker died before the job's outcome was written.
          if (read.delivered) continue;
          if (read.lastAttempt < attempt - 1) {
            await deps.repo.recordDelivery({
              webhookId,
              eventId: item.eventId,
              event: item.event,
              attempt: attempt - 1,
              status: "failed",
              statusCode: 0,
              durationMs: 0,
              error: "its worker stopped during this attempt: the request may have reached the receiver",
              createdAt: deps.clock.now(),
            });
          }
          const body = sendable(item, read);
          if (!body) continue;
          const { result, logged } = await deps.webhooks.deliver(webhook, body, attempt);
          logs.push(logged);
          if (result.ok) continue;
          const error = result.error ?? "failed";
          if (attempt >= WEBHOOK_ATTEMPTS) {
            await turnFailing(webhook, body.id, error);
            if (items.length === 1)
              throw new PermanentJobError(`attempt ${attempt} of ${WEBHOOK_ATTEMPTS} failed: ${error}; the webhook is failing`);
            return;
          }
          const delayMs = retryDelay(attempt, result.retryAfterMs);
          if (items.length === 1) throw new RetryableJobError(error, { retryAfterMs: delayMs });
          const now = deps.clock.now().getTime();
          const single = (entry: DeliveryItem, offset: number, runAt: number) => ({
            kind: WEBHOOK_DELIVERY_JOB,
            payload: { webhookId, items: [entry], ...(offset > 0 ? { attemptOffset: offset } : {}) } satisfies DeliveryJobPayload,
            maxAttempts: WEBHOOK_ATTEMPTS - offset,
            runAt: new Date(runAt),
            dedupeKey: `webhook:${webhookId}:${entry.eventId}:from-attempt:${offset + 1}`,
            concurrency: concurrencyOf(webhookId),
          });
          // The attempts' rows first: if they cannot be written, this job fails and tries its items again, alone.
          await Promise.all(logs);
          await deps.jobs.enqueueMany([
            single(item, attempt, now + delayMs),
            ...items.slice(i + 1).map((rest) => single(rest, attempt - 1, now)),
          ]);
          return;
        }
      } finally {
        await Promise.all(logs);
      }
    },
  };
}

export type WebhookDeliveries = ReturnType<typeof createWebhookDeliveries>;
