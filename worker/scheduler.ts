// Periodic jobs on the job queue (domain/jobs/). Each run of a periodic job is a queued job whose
// dedupe key names its slot, `periodic:<name>:<slot>` with slot = floor(service now / interval):
// every process enqueues the current slot, the key keeps one job per slot, and the queue gives
// that job to one runner. So several `npm run worker` share the periodic jobs without running one
// slot twice. What remains of a scheduler here is enqueueing the slots as the service clock
// moves; the runs, their retries and their crash recovery are the queue's.
import type { Clock } from "../core/clock.js";
import type { Logger } from "../core/logger.js";
import { type JobQueue, PERIODIC_KEY_PREFIX } from "../domain/jobs/queue.js";
import { type JobKind, type JobRunner, startJobRunner } from "../domain/jobs/runner.js";
import { type ContinuousJob, startLoops } from "./loops.js";

/** What a run did; `changed` > 0 (rows written, accounts erased, ...) logs the run at info level. */
export interface JobOutcome {
  changed: number;
  [detail: string]: unknown;
}

export interface PeriodicJob {
  /** Stable name for logs, the job kind and the dedupe key, e.g. `trust-score.seniority`. */
  name: string;
  /** Length of a slot on the service clock: at most one run per slot. */
  intervalMs: number;
  /** Time after a failed run before the next try, on the service clock; default min(intervalMs, 1 minute). */
  retryMs?: number;
  /** One idempotent pass; `now` is the service clock when the run started. */
  run(now: Date): Promise<JobOutcome | undefined>;
}

/** The name PeriodicJob had before the queue (the job queue's own jobs are `ClaimedJob`). */
export type Job = PeriodicJob;

/** Real ms between the scheduler's looks for new slots: a slot starts this late at most (the shortest interval is 5 s). */
export const DEFAULT_TICK_MS = 1_000;
/** Real ms between the runner's looks for due jobs when idle. */
const DEFAULT_POLL_MS = 200;
/** A failed periodic run is tried again after its interval or this, whichever is shorter: an hourly job retries within a minute. */
const DEFAULT_MAX_RETRY_MS = 60_000;

/** The queue kind of a periodic job's runs. */
export const periodicKind = (name: string) => `periodic.${name}`;
/** The slot of a service-clock time: runs of one slot are one job. */
export const slotOf = (intervalMs: number, now: Date) => Math.floor(now.getTime() / intervalMs);
export const periodicKey = (name: string, slot: number) => `${PERIODIC_KEY_PREFIX}${name}:${slot}`;

const retryMsOf = (job: PeriodicJob) => job.retryMs ?? Math.min(job.intervalMs, DEFAULT_MAX_RETRY_MS);

function checkJobs(jobs: readonly PeriodicJob[]) {
  const names = jobs.map((job) => job.name);
  if (new Set(names).size !== names.length) throw new Error(`worker: duplicate job names (${names.join(", ")})`);
  for (const job of jobs) {
    if (!(job.intervalMs > 0)) throw new Error(`worker: job ${job.name} needs a positive intervalMs`);
  }
  return names;
}

/**
 * The queue handlers of the periodic jobs: a run calls `run(now)` and logs at debug (at info
 * when it changed something); a failed run is tried again `retryMs` later while its slot lasts,
 * then the next slot's run takes over.
 */
export function periodicHandlers({ clock, logger, jobs }: { clock: Pick<Clock, "now">; logger: Logger; jobs: readonly PeriodicJob[] }) {
  const handlers: Record<string, JobKind> = {};
  for (const job of jobs) {
    handlers[periodicKind(job.name)] = {
      retryDelaysMs: [retryMsOf(job)],
      handle: async () => {
        const started = performance.now();
        const outcome = await job.run(clock.now());
        const line = { ...outcome, job: job.name, durationMs: Math.round(performance.now() - started) };
        if ((outcome?.changed ?? 0) > 0) logger.info(line, "job run changed data");
        else logger.debug(line, "job run");
      },
    };
  }
  return handlers;
}

export interface Scheduler {
  /** The names of the periodic jobs, in order. */
  readonly jobs: readonly string[];
  /** Enqueues no further slot; resolves once the current look is done. */
  stop(): Promise<void>;
}

/**
 * Enqueues each job's current slot, looking every `tickMs` of real time: at start, and whenever
 * the service clock enters a new slot (/dev/time/advance makes it at once; a jump of a month
 * gives one run, not one per missed slot: jobs catch up by themselves). A slot is `exclusive`:
 * while the previous run of the job is queued or running it is not enqueued yet, and is tried
 * again at the next look, so runs of one job never overlap (a run longer than its interval
 * delays the next), on one process or several.
 */
export function startScheduler({
  queue,
  clock,
  logger,
  jobs,
  tickMs = DEFAULT_TICK_MS,
}: {
  queue: Pick<JobQueue, "enqueue" | "get">;
  clock: Pick<Clock, "now">;
  logger: Logger;
  jobs: readonly PeriodicJob[];
  tickMs?: number;
}): Scheduler {
  const names = checkJobs(jobs);
  // The last slot known enqueued (by this process or another) per job: one insert per slot.
  const enqueued = new Map<string, number>();
  let stopped = false;
  let failing = false;
  let looking: Promise<void> | undefined;

  async function enqueueSlot(job: PeriodicJob, now: Date) {
    const slot = slotOf(job.intervalMs, now);
    if (enqueued.get(job.name) === slot) return;
    const dedupeKey = periodicKey(job.name, slot);
    const id = await queue.enqueue({
      kind: periodicKind(job.name),
      payload: { name: job.name, slot },
      dedupeKey,
      exclusive: true,
      // Tries while the slot lasts; after that the next slot's run is the retry.
      maxAttempts: Math.max(1, Math.ceil(job.intervalMs / retryMsOf(job))),
    });
    // Not created: the slot exists (another process was first), or the previous run still holds the job.
    if (id !== null || (await queue.get({ dedupeKey })) !== null) enqueued.set(job.name, slot);
  }

  async function look() {
    const now = clock.now();
    try {
      for (const job of jobs) await enqueueSlot(job, now);
      if (failing) logger.info("periodic jobs: enqueueing again");
      failing = false;
    } catch (error) {
      if (!failing) logger.warn({ error: (error as Error).message }, "periodic jobs: cannot enqueue; retrying");
      failing = true;
    }
  }

  const tick = () => {
    if (stopped || looking) return;
    looking = look().finally(() => {
      looking = undefined;
    });
  };
  const timer = setInterval(tick, tickMs);
  tick();

  return {
    jobs: names,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await looking;
    },
  };
}

export interface WorkersDeps {
  queue: JobQueue;
  clock: Pick<Clock, "now">;
  logger: Logger;
  jobs: readonly PeriodicJob[];
  /** The other kinds this process runs (deliveries, ...), beside the periodic jobs. */
  handlers?: Record<string, JobKind>;
  /** Real ms between the scheduler's looks for new slots; default 1 s (the runner polls at most every 200 ms). */
  tickMs?: number;
  /** Jobs run at once by this process; default 8. */
  concurrency?: number;
  /** Loops that follow the outbox (worker/loops.ts), beside the queue. */
  loops?: readonly ContinuousJob[];
  /**
   * Kinds run by a runner of their own with this many slots, beside the main one: I/O-bound
   * deliveries that mostly wait on a receiver (webhooks) take many slots without starving the
   * periodic jobs and e-mails of theirs, and the outbox's pages never wait behind deliveries. While
   * a lane that `goesFirst` runs jobs, the main runner claims none (the outbox's fan-out pages: on
   * shared cores the deliveries slowed a burst's fan-out by half, `npm run bench:notifications`).
   */
  lanes?: readonly { kinds: readonly string[]; concurrency: number; goesFirst?: boolean }[];
}

export interface Workers {
  /** The names of the periodic jobs, in order. */
  readonly jobs: readonly string[];
  /** Every kind this process runs. */
  readonly kinds: readonly string[];
  /** The continuous loops this process runs. */
  readonly loops: readonly string[];
  /** Enqueues and claims nothing more; resolves once every running job has finished. */
  stop(): Promise<void>;
}

/** A process's share of the background work: the periodic slots enqueued, and a runner for them and `handlers`. */
export function startWorkers({
  queue,
  clock,
  logger,
  jobs,
  handlers = {},
  tickMs = DEFAULT_TICK_MS,
  concurrency = 8,
  loops = [],
  lanes = [],
}: WorkersDeps): Workers {
  checkJobs(jobs);
  const inLane = new Set(lanes.flatMap((lane) => lane.kinds));
  const all = { ...handlers, ...periodicHandlers({ clock, logger, jobs }) };
  const first: JobRunner[] = [];
  /** The main runner (every kind not in a lane) looks for dead processes' jobs, and yields to the lanes that go first. */
  const main = startJobRunner({
    queue,
    handlers: Object.fromEntries(
      Object.keys(all)
        .filter((kind) => !inLane.has(kind))
        .map((kind) => [kind, all[kind]!]),
    ),
    concurrency,
    pollMs: Math.min(tickMs, DEFAULT_POLL_MS),
    logger,
    holdWhile: () => first.some((runner) => runner.busy()),
  });
  const runners: JobRunner[] = [main];
  for (const lane of lanes) {
    const kinds = lane.kinds.filter((kind) => kind in all);
    if (kinds.length === 0) continue;
    const runner = startJobRunner({
      queue,
      handlers: Object.fromEntries(kinds.map((kind) => [kind, all[kind]!])),
      concurrency: lane.concurrency,
      pollMs: Math.min(tickMs, DEFAULT_POLL_MS),
      recoverEveryMs: Number.POSITIVE_INFINITY,
      logger,
      ...(lane.goesFirst ? { onIdle: () => main.wake() } : {}),
    });
    if (lane.goesFirst) first.push(runner);
    runners.push(runner);
  }
  const scheduler = startScheduler({ queue, clock, logger, jobs, tickMs });
  const following = startLoops({ clock, logger, loops });
  return {
    jobs: scheduler.jobs,
    kinds: runners.flatMap((runner) => runner.kinds),
    loops: following.names,
    async stop() {
      await following.stop();
      await scheduler.stop();
      await Promise.all(runners.map((runner) => runner.stop()));
    },
  };
}
