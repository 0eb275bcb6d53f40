import type { Clock } from "../core/clock.js";
import type { Logger } from "../core/logger.js";

/** What a run did; `changed` > 0 (rows written, accounts erased, ...) logs the run at info level. */
export interface JobOutcome {
  changed: number;
  [detail: string]: unknown;
}

export interface Job {
  /** Stable name for logs and the ready line, e.g. `trust-score.seniority`. */
  name: string;
  /** Time between the starts of two runs, on the service clock. */
  intervalMs: number;
  /** Time after a failed run before the next attempt, on the service clock; default min(intervalMs, 1 minute). */
  retryMs?: number;
  /** One idempotent pass; `now` is the service clock when the run started. */
  run(now: Date): Promise<JobOutcome | undefined>;
}

export interface SchedulerDeps {
  clock: Pick<Clock, "now">;
  logger: Logger;
  jobs: readonly Job[];
  /** How often (real milliseconds) the scheduler looks for due jobs; default 1 s. */
  tickMs?: number;
}

export interface Workers {
  /** The names of the scheduled jobs, in order. */
  readonly jobs: readonly string[];
  /** Starts no further run and resolves once every running job has finished. */
  stop(): Promise<void>;
}

export const DEFAULT_TICK_MS = 1_000;
const DEFAULT_MAX_RETRY_MS = 60_000;

interface JobState {
  job: Job;
  /** Service-clock time (ms) from which the job is due again; 0 = at the first tick. */
  dueAtMs: number;
  /** Service-clock time (ms) of the last start, to notice a clock that went back. */
  lastStartMs: number;
  running: Promise<void> | undefined;
}

/**
 * Runs each job once at start, then whenever its interval has passed on the service clock,
 * checked every `tickMs` of real time. Reading due times from the service clock means that
 * `/dev/time/advance` makes jobs due at once, like real time passing would (a jump of a month
 * gives one run, not one per missed interval: jobs are idempotent and catch up by themselves).
 * Runs of one job never overlap; a run that throws is logged and retried after `retryMs`;
 * nothing a job does can crash the process.
 */
export function startWorkers({ clock, logger, jobs, tickMs = DEFAULT_TICK_MS }: SchedulerDeps): Workers {
  const names = jobs.map((job) => job.name);
  if (new Set(names).size !== names.length) throw new Error(`worker: duplicate job names (${names.join(", ")})`);
  for (const job of jobs) {
    if (!(job.intervalMs > 0)) throw new Error(`worker: job ${job.name} needs a positive intervalMs`);
  }
  const states: JobState[] = jobs.map((job) => ({ job, dueAtMs: 0, lastStartMs: Number.NEGATIVE_INFINITY, running: undefined }));
  let stopped = false;

  async function runOnce(state: JobState, now: Date) {
    const { job } = state;
    const started = performance.now();
    try {
      const outcome = await job.run(now);
      const durationMs = Math.round(performance.now() - started);
      state.dueAtMs = now.getTime() + job.intervalMs;
      const line = { ...outcome, job: job.name, durationMs };
      if ((outcome?.changed ?? 0) > 0) logger.info(line, "job run changed data");
      else logger.debug(line, "job run");
    } catch (error) {
      const retryMs = job.retryMs ?? Math.min(job.intervalMs, DEFAULT_MAX_RETRY_MS);
      state.dueAtMs = now.getTime() + retryMs;
      logger.error({ job: job.name, durationMs: Math.round(performance.now() - started), err: error, retryMs }, "job run failed");
    }
  }

  function tick() {
    if (stopped) return;
    const now = clock.now();
    const nowMs = now.getTime();
    for (const state of states) {
      if (state.running) continue;
      // A clock that went back (wall-clock correction) must not postpone the job by the jump.
      if (nowMs < state.lastStartMs) state.dueAtMs = Math.min(state.dueAtMs, nowMs);
      if (nowMs < state.dueAtMs) continue;
      state.lastStartMs = nowMs;
      state.running = runOnce(state, now).finally(() => {
        state.running = undefined;
      });
    }
  }

  const timer = setInterval(tick, tickMs);
  tick();

  return {
    jobs: names,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await Promise.all(states.map((state) => state.running));
    },
  };
}
