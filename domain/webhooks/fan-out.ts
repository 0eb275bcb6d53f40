// The `webhooks` outbox consumer's side of deliveries: a page of events becomes `webhook.delivery`
// jobs per subscribed webhook (or joins its batch still waiting for a slot), and a replay queues
// the events since a time again. Who receives what, and the reorg rules: deliveries.ts.
import type { RawTx } from "../db.js";
import { AppError } from "../errors.js";
import type { OutboxConsumer } from "../events/consumer.js";
import type { EnqueueInput } from "../jobs/queue.js";
import {
  concurrencyOf,
  type DeliveryJobPayload,
  deliveryOf,
  FAN_OUT_CONCURRENCY,
  MAX_ITEMS_PER_JOB,
  MIN_ITEMS_PER_JOB,
  PAGE_SIZE,
  type PendingEvent,
  REORG_FOLLOW_UP_DELAY_MS,
  REORG_TYPES,
  REPLAY_MAX_DAYS,
  REPLAY_MAX_EVENTS,
  WEBHOOK_ATTEMPTS,
  WEBHOOK_CONCURRENCY,
  type WebhookDeliveriesDeps,
} from "./delivery-items.js";
import { DELIVERED_AS, DELIVERED_TYPES, EVERYONES } from "./events.js";
import { WEBHOOK_DELIVERY_JOB } from "./module.js";

export function createWebhookFanOut(deps: WebhookDeliveriesDeps) {
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
            hook.events.includes(heardAs) && (EVERYONES.includes(heardAs) || hook.userId === event.userId) && event.seq > hook.fromSeq,
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

  return {
    /**
     * The outbox consumer `webhooks`: a page of events per job, on plain SQL (a page is a few
     * thousand ids in and out, and its jobs' items). A delivery reads its event when it is sent,
     * so only a reorg's follow-ups (which name their fact in their data) are read with their data.
     */
    consumer: {
      name: "webhooks",
      types: [...DELIVERED_TYPES, ...REORG_TYPES],
      pageSize: PAGE_SIZE,
      concurrency: FAN_OUT_CONCURRENCY,
      dataFor: REORG_TYPES,
      applySql: (tx, events) => fanOut(tx, events),
      afterCommit: () => deps.jobs.wake(),
    } satisfies OutboxConsumer<PendingEvent["type"]>,

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
      const events = await deps.repo.eventsSince(userId, { types, everyones, since, fromSeq: webhook.fromSeq }, REPLAY_MAX_EVENTS + 1);
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
  };
}
