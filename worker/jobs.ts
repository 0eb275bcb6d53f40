import type { DomainServices } from "../api/app.js";
import { createTrustScoreService } from "../api/trust-score/service.js";
import { eraseDueAccounts } from "../api/users/erase-job.js";
import { createUsersRepo } from "../api/users/repo.js";
import { createXpService } from "../api/xp/service.js";
import type { Clock } from "../core/clock.js";
import type { Database } from "../core/db.js";
import type { Logger } from "../core/logger.js";
import { rewardChainEvents } from "./chain-rewards.js";
import { type Job, startWorkers, type Workers } from "./scheduler.js";

export const HOUR_MS = 3_600_000;

/** The domain operations the platform jobs call. */
export type JobServices = Pick<DomainServices, "trust" | "eraseDueAccounts" | "xp" | "invalidateUser">;

export interface PlatformJobDeps {
  db: Pick<Database, "prisma">;
  /** The service clock: in one process with the API, the same object, so /dev/time/advance reaches the jobs. */
  clock: Pick<Clock, "now">;
  logger: Logger;
  /**
   * The API's services (`app.locals.services`) when the jobs run in the API's process (npm start):
   * the API's user cache then drops the rows the jobs change at once. Without them (npm run worker)
   * the jobs build their own from the same constructors as api/app.ts.
   */
  services?: JobServices;
}

/** The services of a process that has no API: no user cache (the worker only writes, and must never read a stale row). */
function createJobServices(db: Pick<Database, "prisma">, clock: Pick<Clock, "now">): JobServices {
  const users = createUsersRepo({ db });
  const trust = createTrustScoreService({ db, clock, users });
  const invalidateUser = () => {};
  return {
    trust,
    eraseDueAccounts: (now) => eraseDueAccounts(db, now),
    xp: createXpService({
      db,
      clock,
      invalidateUser,
      onLevelChange: (tx, userId, reason) => trust.recomputeTrustScore(tx, userId, reason),
    }),
    invalidateUser,
  };
}

/**
 * The platform's periodic jobs. Every job is idempotent and catches up by itself (it works
 * from the state of the database at `now`), so a missed, repeated or concurrent run is harmless.
 * Later jobs (loan funding, overdue checks, webhook deliveries) are added to this list.
 */
export function createPlatformJobs({ db, clock, services }: PlatformJobDeps): Job[] {
  const jobServices = services ?? createJobServices(db, clock);
  const { trust, eraseDueAccounts } = jobServices;
  return [
    {
      // XP and Trust Score inputs (volume, repayments, late payments, defaults, guardians) for the
      // chain facts the indexer recorded, whether the API or a wallet sent the transaction.
      name: "chain-events.rewards",
      intervalMs: 2_000,
      retryMs: 5_000,
      run: async (now) => ({ changed: await rewardChainEvents(db, jobServices, now) }),
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
        const erased = await eraseDueAccounts(now);
        return { changed: erased.length, userIds: erased };
      },
    },
  ];
}

export interface PlatformWorkerDeps extends PlatformJobDeps {
  /** How often (real ms) the scheduler looks for due jobs; default 1 s. */
  tickMs?: number;
}

/** Starts the platform's jobs (npm run worker, and npm start beside the API); `stop()` waits for running jobs. */
export function startPlatformWorkers(deps: PlatformWorkerDeps): Workers {
  const workers = startWorkers({ clock: deps.clock, logger: deps.logger, jobs: createPlatformJobs(deps), tickMs: deps.tickMs });
  deps.logger.info({ jobs: workers.jobs }, "workers started");
  return workers;
}
