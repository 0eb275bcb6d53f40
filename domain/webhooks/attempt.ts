// The `webhook.delivery` job's side: each item's attempt, the schedule of retries (part 6, a
// longer Retry-After honoured), the reorg rules of what is still sent, and the webhook turning
// failing after the sixth failed attempt. Who receives what: deliveries.ts.
import { domainEvent, recordEvents } from "../events/outbox.js";
import { type ClaimedJob, PermanentJobError, RetryableJobError } from "../jobs/queue.js";
import {
  concurrencyOf,
  type DeliveryItem,
  type DeliveryJobPayload,
  type FlatPayload,
  factOf,
  itemsOf,
  MAX_RETRY_AFTER_MS,
  toldOf,
  WEBHOOK_ATTEMPTS,
  WEBHOOK_RETRY_DELAYS_MS,
  type WebhookDeliveriesDeps,
} from "./delivery-items.js";
import { DELIVERED_AS, type DeliveredType } from "./events.js";
import { WEBHOOK_DELIVERY_JOB } from "./module.js";
import { payloadOfEvent, revertedPayload, type WebhookPayload } from "./payloads.js";
import type { ItemRead, WebhookRow } from "./repo.js";

export function createWebhookAttempts(deps: WebhookDeliveriesDeps) {
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
