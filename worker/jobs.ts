import { type Clock, HOUR_MS, WEEK_MS } from "../core/clock.js";
import type { Logger } from "../core/logger.js";
import { pageJobKind } from "../domain/events/consumer.js";
import type { JobKind } from "../domain/jobs/runner.js";
import type { JobName, QueueKind } from "../domain/modules.js";
import type { DeliveryPayload, WeeklySummaryPayload } from "../domain/notifications/deliveries.js";
import { EMAIL_JOB, PUSH_JOB, SCHEDULED_JOB, WEEKLY_SUMMARY_JOB } from "../domain/notifications/module.js";
import type { NotificationItem } from "../domain/notifications/types.js";
import type { Services } from "../domain/services.js";
import { type DeliveryJobPayload, WEBHOOK_RETRY_DELAYS_MS } from "../domain/webhooks/deliveries.js";
import { WEBHOOK_DELIVERY_JOB } from "../domain/webhooks/module.js";
import type { ContinuousJob } from "./loops.js";
import { type PeriodicJob, startWorkers, type Workers } from "./scheduler.js";

/** Finished jobs are kept this long on the service clock (for their attempts, and their dedupe keys), then pruned. */
export const JOB_RETENTION_MS = 24 * HOUR_MS;

export interface PlatformJobDeps {
  /** The domain services of this process (domain/services.ts): in npm start the API's own, so its caches see the jobs' writes. */
  services: Pick<
    Services,
    | "outbox"
    | "outboxConsumers"
    | "trust"
    | "eraseDueAccounts"
    | "loans"
    | "fundsLoans"
    | "paymentAttempts"
    | "relay"
    | "jobs"
    | "presence"
    | "notificationFanout"
    | "notificationDeliveries"
    | "webhookDeliveries"
    | "webhooks"
  >;
}

/**
 * The platform's periodic jobs, each run once per slot of its interval by one process (the job
 * queue). Every job is idempotent and catches up by itself (it works from the state of the
 * database at `now`), so a missed or repeated run is harmless.
 */
export function createPlatformJobs({ services }: PlatformJobDeps): PeriodicJob[] {
  const { trust, loans } = services;
  // Where this process holds the pool's operator on a chain (npm start).
  const lending = services.fundsLoans;
  const jobs: Record<JobName, Omit<PeriodicJob, "name"> | undefined> = {
    // The lending pool funds requests once they are LOAN_FUNDING_DELAY_S old, oldest first, while
    // its liquidity allows; requests past their expiry lapse.
    "loans.fund": lending
      ? {
          intervalMs: 5_000,
          retryMs: 10_000,
          run: async (now) => {
            const done = await loans.fundDue(now);
            return { changed: done.funded + done.lapsed, ...done };
          },
        }
      : undefined,
    // What a reorganisation removed of the service's transactions is broadcast again and settled
    // anew (D-90): one count read and one query when there is nothing to do.
    "relay.restore": lending
      ? { intervalMs: 5_000, retryMs: 5_000, run: async () => ({ changed: (await services.relay?.restore()) ?? 0 }) }
      : undefined,
    // Every payment ends (D-89): attempts on credit whose hold lapsed (their process stopped, or
    // their answer never came) fail with payment.failed and their loans cancelled, unless their
    // transaction was mined (the mirror pays them) or may still be.
    "payments.attempts": lending
      ? { intervalMs: 10_000, retryMs: 10_000, run: async () => ({ changed: (await services.paymentAttempts?.settleStale()) ?? 0 }) }
      : undefined,
    // Due dates on the service clock: a reminder a day before, overdue after the due date, default
    // after the LoanBook's grace period.
    "loans.due-dates": lending
      ? {
          intervalMs: 30_000,
          retryMs: 10_000,
          run: async (now) => {
            const done = await loans.runDueDates(now);
            return { changed: done.reminded + done.overdue + done.defaulted, ...done };
          },
        }
      : undefined,
    // The weekly summary e-mail of each user who asked for it (email.weekly_summary), once per
    // 7-day slot of the service clock: one e-mail job per user, keyed by user and week.
    "notifications.weekly-summary": {
      intervalMs: WEEK_MS,
      retryMs: HOUR_MS,
      run: async (now) => ({ changed: await services.notificationFanout.enqueueWeeklySummaries(now) }),
    },
    // Guardians become active by time (the vault's timelock after being added) and leave by
    // removal or reorg: the Trust Score's social input follows the mirror within a minute.
    "trust-score.guardians": {
      intervalMs: 60_000,
      retryMs: 10_000,
      run: async (now) => ({ changed: await trust.syncActiveGuardians(now) }),
    },
    // The monthly seniority step of the Trust Score; hourly, so a month step shows at most an hour late.
    "trust-score.seniority": { intervalMs: HOUR_MS, run: async (now) => ({ changed: await trust.runSeniorityStep(now) }) },
    // Erases the personal data of accounts whose deletion date has passed.
    "users.erase": {
      intervalMs: HOUR_MS,
      run: async (now) => {
        const erased = await services.eraseDueAccounts(now);
        return { changed: erased.length, userIds: erased };
      },
    },
    // The queue's finished jobs past their retention (a day of service clock): periodic runs alone
    // add tens of thousands a day. Says the queue's counts when it deleted some. And the rows of
    // processes killed an hour ago or more (a clean stop removes its own).
    "jobs.prune": {
      intervalMs: HOUR_MS,
      run: async (now) => {
        const pruned = await services.jobs.prune(new Date(now.getTime() - JOB_RETENTION_MS));
        const processes = await services.presence.pruneDead();
        return { changed: pruned + processes, processes, ...(pruned > 0 ? { jobs: await services.jobs.stats() } : {}) };
      },
    },
    // The webhooks' deliveries log keeps 30 days of service clock (D-77).
    "webhooks.prune-log": { intervalMs: HOUR_MS, run: async (now) => ({ changed: await services.webhooks.pruneLog(now) }) },
  };
  return Object.entries(jobs).flatMap(([name, job]) => (job ? [{ name, ...job }] : []));
}

/**
 * Webhook deliveries in flight at once per process, in a runner of their own: each mostly waits
 * on its receiver, and a webhook holds at most WEBHOOK_CONCURRENCY of them.
 */
export const WEBHOOK_SLOTS = 32;

/**
 * The outbox's page jobs in flight at once per process, in a runner of their own: a page is one
 * transaction of a few statements, and never waits behind deliveries for a slot.
 */
export const OUTBOX_SLOTS = 4;

/** Real ms between two looks of the outbox's producer for new events while there are none. */
export const OUTBOX_IDLE_MS = 100;

/**
 * The platform's continuous loop (worker/loops.ts), run by every worker process: the outbox's
 * producer, which turns each consumer's new events into page jobs (domain/events/consumer.ts):
 * XP and Trust Score inputs, the guardians' alerts, the merchants' payment events, the
 * notifications and the webhooks fan-outs. One statement per idle poll, whatever the consumers.
 */
export function createPlatformLoops({ services }: PlatformJobDeps): ContinuousJob[] {
  return [
    {
      name: "outbox.produce",
      idleMs: OUTBOX_IDLE_MS,
      run: async (now) => {
        let queued = 0;
        for (const consumer of await services.outbox.pending(services.outboxConsumers)) {
          queued += (await services.outbox.produce(consumer, now)).length;
        }
        return queued;
      },
    },
  ];
}

/**
 * The queued jobs' handlers by kind, beside the periodic jobs: deliveries fanned out from the
 * outbox (notifications, webhooks) are added here. A kind runs only in processes that list it.
 */
export function createPlatformHandlers({ services, clock }: PlatformJobDeps & { clock: Pick<Clock, "now"> }): Record<string, JobKind> {
  const deliveries = services.notificationDeliveries;
  const kinds: Record<QueueKind, JobKind> = {
    [PUSH_JOB]: (payload: DeliveryPayload) => deliveries.push(payload),
    [EMAIL_JOB]: (payload: DeliveryPayload) => deliveries.email(payload),
    [WEEKLY_SUMMARY_JOB]: (payload: WeeklySummaryPayload) => deliveries.weeklySummary(payload),
    [WEBHOOK_DELIVERY_JOB]: {
      handle: (payload: DeliveryJobPayload, job) => services.webhookDeliveries.attempt(payload, job),
      retryDelaysMs: WEBHOOK_RETRY_DELAYS_MS,
    },
    [SCHEDULED_JOB]: (payload: { item: NotificationItem }) => services.notificationFanout.writeScheduled(payload, clock.now()),
  };
  return { ...kinds, ...services.outbox.handlers(services.outboxConsumers, clock) };
}

export interface PlatformWorkerDeps extends PlatformJobDeps {
  /** The service clock: the jobs' `now`, so /dev/time/advance reaches them. */
  clock: Pick<Clock, "now">;
  logger: Logger;
  /** How often (real ms) the scheduler looks for due jobs; default 1 s. */
  tickMs?: number;
}

/**
 * Starts the platform's background work on the services' job queue (npm run worker, and npm
 * start beside the API): the periodic slots enqueued, a runner for every kind this process can
 * run, and the continuous loops. `stop()` waits for running jobs and passes.
 */
export function startPlatformWorkers(deps: PlatformWorkerDeps): Workers {
  const workers = startWorkers({
    queue: deps.services.jobs,
    clock: deps.clock,
    logger: deps.logger,
    jobs: createPlatformJobs(deps),
    handlers: createPlatformHandlers(deps),
    loops: createPlatformLoops(deps),
    lanes: [
      { kinds: [WEBHOOK_DELIVERY_JOB], concurrency: WEBHOOK_SLOTS },
      // The fan-out goes first: while this process takes outbox pages, its main runner starts no delivery.
      { kinds: deps.services.outboxConsumers.map((consumer) => pageJobKind(consumer.name)), concurrency: OUTBOX_SLOTS, goesFirst: true },
    ],
    tickMs: deps.tickMs,
  });
  deps.logger.info({ jobs: workers.jobs, kinds: workers.kinds, loops: workers.loops }, "workers started");
  return workers;
}
