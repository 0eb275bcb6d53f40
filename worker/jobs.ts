import type { Clock } from "../core/clock.js";
import type { Logger } from "../core/logger.js";
import type { JobKind } from "../domain/jobs/runner.js";
import {
  type DeliveryPayload,
  EMAIL_JOB,
  PUSH_JOB,
  WEEKLY_SUMMARY_JOB,
  type WeeklySummaryPayload,
} from "../domain/notifications/deliveries.js";
import { SCHEDULED_JOB } from "../domain/notifications/fanout.js";
import type { NotificationItem } from "../domain/notifications/types.js";
import type { Services } from "../domain/services.js";
import { type DeliveryJobPayload, WEBHOOK_DELIVERY_JOB, WEBHOOK_RETRY_DELAYS_MS } from "../domain/webhooks/deliveries.js";
import type { ContinuousJob } from "./loops.js";
import { type PeriodicJob, startWorkers, type Workers } from "./scheduler.js";

export const HOUR_MS = 3_600_000;
/** Finished jobs are kept this long on the service clock (for their attempts, and their dedupe keys), then pruned. */
export const JOB_RETENTION_MS = 24 * HOUR_MS;

export interface PlatformJobDeps {
  /** The domain services of this process (domain/services.ts): in npm start the API's own, so its caches see the jobs' writes. */
  services: Pick<
    Services,
    | "rewards"
    | "trust"
    | "eraseDueAccounts"
    | "loans"
    | "fundsLoans"
    | "guardianAlerts"
    | "paymentEvents"
    | "jobs"
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
  const { rewards, trust, loans } = services;
  const lending: PeriodicJob[] = services.fundsLoans
    ? [
        {
          // The lending pool funds requests once they are LOAN_FUNDING_DELAY_S old, oldest first,
          // while its liquidity allows; requests past their expiry lapse. Only where this process
          // holds the pool's operator on a chain (npm start).
          name: "loans.fund",
          intervalMs: 5_000,
          retryMs: 10_000,
          run: async (now) => {
            const done = await loans.fundDue(now);
            return { changed: done.funded + done.lapsed, ...done };
          },
        },
        {
          // Due dates on the service clock: a reminder a day before, overdue after the due date,
          // default after the LoanBook's grace period.
          name: "loans.due-dates",
          intervalMs: 30_000,
          retryMs: 10_000,
          run: async (now) => {
            const done = await loans.runDueDates(now);
            return { changed: done.reminded + done.overdue + done.defaulted, ...done };
          },
        },
      ]
    : [];
  return [
    ...lending,
    {
      // XP and Trust Score inputs (volume, repayments, late payments, defaults, guardians) for the
      // chain facts the indexer recorded, whether the API or a wallet sent the transaction.
      name: "chain-events.rewards",
      intervalMs: 2_000,
      retryMs: 5_000,
      run: async (now) => ({ changed: await rewards.run(now) }),
    },
    {
      // The guardians' silent alert of every mirrored lock (duress PIN through the API, or a wallet's
      // call), one event per guardian: the notifications issue delivers them.
      name: "social-vault.guardian-alerts",
      intervalMs: 2_000,
      retryMs: 5_000,
      run: async (now) => ({ changed: await services.guardianAlerts.run(now) }),
    },
    {
      // The merchant's payment.success and payment.refunded of every mirrored payment and refund
      // (the API records them after its own writes; this takes what a stopped process or a wallet left).
      name: "payments.events",
      intervalMs: 2_000,
      retryMs: 5_000,
      run: async (now) => ({ changed: await services.paymentEvents.run(now) }),
    },
    {
      // The weekly summary e-mail of each user who asked for it (email.weekly_summary), once per
      // 7-day slot of the service clock: one e-mail job per user, keyed by user and week.
      name: "notifications.weekly-summary",
      intervalMs: 7 * 24 * HOUR_MS,
      retryMs: HOUR_MS,
      run: async (now) => ({ changed: await services.notificationFanout.enqueueWeeklySummaries(now) }),
    },
    {
      // Guardians become active by time (the vault's timelock after being added) and leave by
      // removal or reorg: the Trust Score's social input follows the mirror within a minute.
      name: "trust-score.guardians",
      intervalMs: 60_000,
      retryMs: 10_000,
      run: async (now) => ({ changed: await trust.syncActiveGuardians(now) }),
    },
    {
      // The monthly seniority step of the Trust Score; hourly, so a month step shows at most an hour late.
      name: "trust-score.seniority",
      intervalMs: HOUR_MS,
      run: async (now) => ({ changed: await trust.runSeniorityStep(now) }),
    },
    {
      // Erases the personal data of accounts whose deletion date has passed.
      name: "users.erase",
      intervalMs: HOUR_MS,
      run: async (now) => {
        const erased = await services.eraseDueAccounts(now);
        return { changed: erased.length, userIds: erased };
      },
    },
    {
      // The queue's finished jobs past their retention (a day of service clock): periodic runs
      // alone add tens of thousands a day. Says the queue's counts when it deleted some.
      name: "jobs.prune",
      intervalMs: HOUR_MS,
      run: async (now) => {
        const pruned = await services.jobs.prune(new Date(now.getTime() - JOB_RETENTION_MS));
        return { changed: pruned, ...(pruned > 0 ? { jobs: await services.jobs.stats() } : {}) };
      },
    },
    {
      // The webhooks' deliveries log keeps 30 days of service clock (D-77).
      name: "webhooks.prune-log",
      intervalMs: HOUR_MS,
      run: async (now) => ({ changed: await services.webhooks.pruneLog(now) }),
    },
  ];
}

/**
 * Webhook deliveries in flight at once per process, in a runner of their own: each mostly waits
 * on its receiver, and a webhook holds at most WEBHOOK_CONCURRENCY of them.
 */
export const WEBHOOK_SLOTS = 32;

/** Real ms between two looks of the fan-out for new events while there are none. */
export const FANOUT_IDLE_MS = 100;

/**
 * The platform's continuous loops (worker/loops.ts), run by every worker process: the
 * notifications consumer, which writes each domain event's in-app notifications with their push
 * and e-mail jobs in the transaction that takes the event (domain/notifications/fanout.ts), and
 * the webhooks consumer, which enqueues per subscribed webhook a delivery job of a page's events
 * (domain/webhooks/deliveries.ts).
 */
export function createPlatformLoops({ services }: PlatformJobDeps): ContinuousJob[] {
  return [
    {
      name: "notifications.fanout",
      idleMs: FANOUT_IDLE_MS,
      run: async (now, found) => {
        const { applied, contended } = await services.notificationFanout.run(now, { found });
        return { did: applied, contended };
      },
    },
    {
      name: "webhooks.fanout",
      idleMs: FANOUT_IDLE_MS,
      run: async (now, found) => {
        const { applied, contended } = await services.webhookDeliveries.run(now, { found });
        return { did: applied, contended };
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
  return {
    [PUSH_JOB]: (payload: DeliveryPayload) => deliveries.push(payload),
    [EMAIL_JOB]: (payload: DeliveryPayload) => deliveries.email(payload),
    [WEEKLY_SUMMARY_JOB]: (payload: WeeklySummaryPayload) => deliveries.weeklySummary(payload),
    [WEBHOOK_DELIVERY_JOB]: {
      handle: (payload: DeliveryJobPayload, job) => services.webhookDeliveries.attempt(payload, job),
      retryDelaysMs: WEBHOOK_RETRY_DELAYS_MS,
    },
    [SCHEDULED_JOB]: (payload: { item: NotificationItem }) => services.notificationFanout.writeScheduled(payload, clock.now()),
  };
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
    lanes: [{ kinds: [WEBHOOK_DELIVERY_JOB], concurrency: WEBHOOK_SLOTS }],
    tickMs: deps.tickMs,
  });
  deps.logger.info({ jobs: workers.jobs, kinds: workers.kinds, loops: workers.loops }, "workers started");
  return workers;
}
