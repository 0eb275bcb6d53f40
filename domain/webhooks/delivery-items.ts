// What a webhook delivery is, shared by the fan-out (fan-out.ts) and the attempts (attempt.ts): its
// job and items, the schedule and limits, and the dependencies both take.
import type { Clock } from "../../core/clock.js";
import type { Logger } from "../../core/logger.js";
import type { Db } from "../db.js";
import type { ConsumedEvent } from "../events/consumer.js";
import type { JobQueue } from "../jobs/queue.js";
import type { RevertedWebhookEvent, WebhookEvent } from "./events.js";
import { DELIVERED_AS, type DeliveredType, isDeliveredType } from "./events.js";
import type { WebhooksRepo } from "./repo.js";
import type { WebhooksService } from "./service.js";

export interface WebhookDeliveriesDeps {
  db: Db;
  repo: WebhooksRepo;
  webhooks: Pick<WebhooksService, "deliver" | "own">;
  jobs: Pick<JobQueue, "enqueueMany" | "joinWaiting" | "wake">;
  clock: Pick<Clock, "now">;
  logger?: Pick<Logger, "warn" | "info">;
}

/** Attempts of one delivery (part 6). */
export const WEBHOOK_ATTEMPTS = 6;
/** The delay after the n-th failed attempt: 1 min, 5 min, 30 min, 2 h, 24 h (part 6). */
export const WEBHOOK_RETRY_DELAYS_MS = [60_000, 300_000, 1_800_000, 7_200_000, 86_400_000] as const;
/** The longest Retry-After honoured (a receiver asking for a week gets the schedule's last step). */
export const MAX_RETRY_AFTER_MS = 86_400_000;
/** Events per fan-out page job. */
export const PAGE_SIZE = 2000;
/** Fan-out pages running at once, across processes: one, so that each webhook's jobs are queued in the outbox's order. */
export const FAN_OUT_CONCURRENCY = 1;
/**
 * Deliveries to one webhook in flight at once, across processes: a slow or dead receiver holds
 * this many of the runners' slots, and the other webhooks' deliveries take the rest.
 */
export const WEBHOOK_CONCURRENCY = 4;
export const concurrencyOf = (webhookId: string) => ({ key: `webhook:${webhookId}`, limit: WEBHOOK_CONCURRENCY });
/** How far back a replay may start, and how many events it may queue at most. */
export const REPLAY_MAX_DAYS = 30;
export const REPLAY_MAX_EVENTS = 10_000;

/** The outbox events that follow a chain fact through a reorg (written by the indexer). */
export const REORG_TYPES = ["chain.fact_reverted", "chain.fact_restored"] as const;
export type ReorgType = (typeof REORG_TYPES)[number];
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
      event: RevertedWebhookEvent;
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
export type FlatPayload = { webhookId: string } & DeliveryItem;
export const itemsOf = (payload: DeliveryJobPayload | FlatPayload): DeliveryItem[] => {
  if ("items" in payload) return payload.items;
  const { webhookId: _webhookId, ...item } = payload;
  return [item as DeliveryItem];
};
/** Items per fan-out job: a page's events for one webhook, sent one after the other. */
export const MAX_ITEMS_PER_JOB = 50;
/** A page's events for one webhook are spread over its concurrency in jobs of at least this many (a job costs a claim and an outcome). */
export const MIN_ITEMS_PER_JOB = 10;

export type PendingEvent = ConsumedEvent<DeliveredType | ReorgType>;

/** The name a webhook subscribes to for this event, and what a job delivers of it. */
export function deliveryOf(event: PendingEvent): { heardAs: WebhookEvent; item: DeliveryItem; followUp: boolean } | undefined {
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
export const factOf = (item: DeliveryItem) => ("reorg" in item && item.reorg === "reverted" ? item.factId : item.eventId);
export const toldOf = (item: DeliveryItem) =>
  "reorg" in item ? (item.reorg === "reverted" ? item.factId : item.revertEventId) : undefined;
