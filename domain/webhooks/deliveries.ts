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
import { publicData } from "../events/catalogue.js";
import { type ConsumedEvent, type ConsumeResult, consumeEventPages } from "../events/consumer.js";
import { domainEvent, recordEvents } from "../events/outbox.js";
import { type ClaimedJob, type JobQueue, PermanentJobError, RetryableJobError } from "../jobs/queue.js";
import type { WebhookEvent } from "./events.js";
import type { WebhooksRepo } from "./repo.js";
import type { WebhookPayload, WebhooksService } from "./service.js";

export const WEBHOOK_DELIVERY_JOB = "webhook.delivery";
/** Attempts of one delivery (part 6). */
export const WEBHOOK_ATTEMPTS = 6;
/** The delay after the n-th failed attempt: 1 min, 5 min, 30 min, 2 h, 24 h (part 6). */
export const WEBHOOK_RETRY_DELAYS_MS = [60_000, 300_000, 1_800_000, 7_200_000, 86_400_000] as const;
/** The longest Retry-After honoured (a receiver asking for a week gets the schedule's last step). */
const MAX_RETRY_AFTER_MS = 86_400_000;
const PAGE_SIZE = 500;

/** The outbox's event types a webhook hears, and the name each is delivered under. */
const DELIVERED_AS = {
  "loan.created": "loan.created",
  "loan.funded": "loan.funded",
  "loan.repaid": "loan.repaid",
  "loan.partial_payment": "loan.partial_payment",
  "loan.overdue": "loan.overdue",
  "loan.defaulted": "loan.defaulted",
  "vault.deposit": "vault.deposit",
  "vault.withdraw": "vault.withdraw",
  "vault.yield_distributed": "vault.yield_distributed",
  "social_vault.withdrawal_requested": "social_vault.withdrawal_requested",
  "social_vault.withdrawal_approved": "social_vault.withdrawal_approved",
  "social_vault.withdrawal_executed": "social_vault.withdrawal_executed",
  "social_vault.guardian_alert": "social_vault.locked",
  "user.trust_score_updated": "user.trust_score_updated",
  "user.level_up": "user.level_up",
  "user.guardian_added": "user.guardian_added",
  "trust_score.updated": "trust_score.updated",
} as const satisfies Record<string, WebhookEvent>;
type DeliveredType = keyof typeof DELIVERED_AS;
const DELIVERED_TYPES = Object.keys(DELIVERED_AS) as DeliveredType[];
/** Events of no user: every subscriber hears them. */
const EVERYONES: WebhookEvent[] = ["vault.yield_distributed"];

export interface DeliveryJobPayload {
  webhookId: string;
  eventId: string;
  /** The name it is delivered under. */
  event: WebhookEvent;
}

/** The payload's data: the catalogue's public fields (a guardian's alert as part 6's social_vault.locked). */
function dataOf(type: DeliveredType, stored: unknown): Record<string, unknown> {
  const data = publicData(type, stored);
  if (type !== "social_vault.guardian_alert") return data;
  return { vaultOwner: data.vaultOwner, vaultAddress: data.vaultAddress, lockedAt: data.lockedAt };
}

export function createWebhookDeliveries(deps: {
  db: Db;
  repo: WebhooksRepo;
  webhooks: Pick<WebhooksService, "deliver">;
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
        .filter((hook) => hook.events.includes(name) && (everyone || hook.userId === event.userId))
        .map((hook) => ({
          kind: WEBHOOK_DELIVERY_JOB,
          payload: { webhookId: hook.id, eventId: event.id, event: name } satisfies DeliveryJobPayload,
          maxAttempts: WEBHOOK_ATTEMPTS,
          dedupeKey: `webhook:${hook.id}:${event.id}`,
        }));
    });
    await deps.jobs.enqueueMany(jobs, tx);
  }

  return {
    /** Fans out the events not yet taken by `webhooks`, a page per transaction. */
    async run(now: Date, hooks: { found?: () => void } = {}): Promise<ConsumeResult> {
      const result = await consumeEventPages(deps.db, {
        consumer: "webhooks",
        types: DELIVERED_TYPES,
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

    /** One attempt of a `webhook.delivery` job (its handler). */
    async attempt(payload: DeliveryJobPayload, job: Pick<ClaimedJob, "attempt">): Promise<void> {
      const webhook = await deps.repo.byId(payload.webhookId);
      // Deleted, or failing (revived by PATCH status active; its events since can be replayed).
      if (!webhook || webhook.status !== "active") return;
      const event = await deps.db.prisma.domainEvent.findUnique({ where: { id: payload.eventId } });
      // A reorg removed the fact before its first attempt: there is nothing to tell.
      if (!event || (event.revertedAt !== null && job.attempt === 1)) return;
      const body: WebhookPayload = {
        id: event.id,
        event: payload.event,
        timestamp: event.createdAt.toISOString(),
        data: dataOf(event.type as DeliveredType, event.data),
      };
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
