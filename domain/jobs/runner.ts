// Runs the jobs of the queue (queue.ts) in this process: claims up to `concurrency` due jobs of
// the kinds it has handlers for, runs them concurrently (their I/O outside any transaction),
// records each outcome, and polls when idle. Several runners, in one process or in many, share
// one queue: the claim gives each job to one of them.

import { setTimeout as sleep } from "node:timers/promises";
import { type Backoff, backoffMs } from "../../core/backoff.js";
import type { Logger } from "../../core/logger.js";
import { type ClaimedJob, type JobHandler, type JobQueue, jobRetryDelayMs, PermanentJobError, RetryableJobError } from "./queue.js";

/**
 * A kind's handler, or the handler with its own retry schedule: `retryDelaysMs[n-1]` is the
 * delay after the n-th failed try (the last entry repeats), exactly, with no jitter. Without a
 * schedule: `jobRetryDelayMs` (exponential with jitter). A RetryableJobError's `retryAfterMs` wins.
 */
// biome-ignore lint/suspicious/noExplicitAny: each kind's handler declares its own payload type
export type JobKind<P = any> = JobHandler<P> | { handle: JobHandler<P>; retryDelaysMs?: readonly number[] };

export interface JobRunnerOptions {
  queue: JobQueue;
  handlers: Record<string, JobKind>;
  /** Jobs run at once; default 4. */
  concurrency?: number;
  /** Real ms between two looks for due jobs when idle (a `wake()` cuts it short); default 200. */
  pollMs?: number;
  /** Real ms between two looks for the jobs of dead processes; default 5 s. */
  recoverEveryMs?: number;
  logger: Pick<Logger, "debug" | "info" | "warn" | "error">;
  /** While it answers true, no job is claimed (running ones go on); `wake()` when it turns false. */
  holdWhile?: () => boolean;
  /** Called when it turns idle: a look found no due job and none runs (a runner held while this one works can claim again). */
  onIdle?: () => void;
}

export interface JobRunner {
  readonly kinds: readonly string[];
  /** Whether it works off a backlog: a job runs, or its last look found some. */
  busy(): boolean;
  /** Looks for due jobs now (an enqueuer of this process just committed some). */
  wake(): void;
  /** Claims no further job and resolves once the running ones have finished and been recorded. */
  stop(): Promise<void>;
}

/** Real ms between two tries at recording an outcome while the database is unreachable. */
const RECORD_RETRY: Backoff = { baseMs: 200, capMs: 5_000 };

export function retryDelayOf(kind: JobKind, job: ClaimedJob, error: unknown): number {
  if (error instanceof RetryableJobError && error.retryAfterMs !== undefined) return error.retryAfterMs;
  const schedule = typeof kind === "function" ? undefined : kind.retryDelaysMs;
  if (schedule && schedule.length > 0) return schedule[Math.min(job.attempt, schedule.length) - 1]!;
  return jobRetryDelayMs(job.attempt);
}

export function startJobRunner({
  queue,
  handlers,
  concurrency = 4,
  pollMs = 200,
  recoverEveryMs = 5_000,
  logger,
  holdWhile,
  onIdle,
}: JobRunnerOptions): JobRunner {
  const kinds = Object.keys(handlers);
  const running = new Set<Promise<void>>();
  /** Its last look found jobs. */
  let finding = false;
  let stopped = false;
  // A wake that comes while the loop is busy is kept, so the next wait returns at once.
  let woken = false;
  let nudge: (() => void) | undefined;
  const wake = () => {
    woken = true;
    nudge?.();
  };
  const unsubscribe = queue.onWake(wake);

  function wait(ms: number): Promise<void> {
    if (woken || stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        nudge = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      nudge = done;
    });
  }

  /** Retries a write of an outcome until the database answers (after stop: three tries). */
  async function record<T>(write: () => Promise<T>, job: ClaimedJob): Promise<T | undefined> {
    for (let tries = 1; ; tries += 1) {
      try {
        return await write();
      } catch (error) {
        if (stopped && tries >= 3) {
          // It stays running under this process's id: queued again once this process stops beating.
          logger.error({ kind: job.kind, jobId: job.id, error: (error as Error).message }, "job outcome not recorded");
          return undefined;
        }
        await sleep(backoffMs(tries, RECORD_RETRY));
      }
    }
  }

  async function run(job: ClaimedJob) {
    const kind = handlers[job.kind]!;
    const handle = typeof kind === "function" ? kind : kind.handle;
    const started = performance.now();
    let failure: { error: unknown } | undefined;
    try {
      await handle(job.payload, job);
    } catch (error) {
      failure = { error };
    }
    const durationMs = Math.round(performance.now() - started);
    const line = { kind: job.kind, jobId: job.id, attempt: job.attempt, durationMs };
    if (!failure) {
      const recorded = await record(() => queue.succeed(job, { durationMs }), job);
      if (recorded === undefined) return;
      if (!recorded) logger.warn(line, "job finished after another process took it over");
      else logger.debug(line, "job succeeded");
      return;
    }
    const { error } = failure;
    const permanent = error instanceof PermanentJobError;
    const retryDelayMs = permanent ? undefined : retryDelayOf(kind, job, error);
    const outcome = await record(() => queue.fail(job, error, { durationMs, retryDelayMs }), job);
    // Expected failures are one line with their message; anything else carries its stack (a bug).
    const cause = error instanceof RetryableJobError || permanent ? { error: (error as Error).message } : { err: error };
    if (outcome === "retry") logger.warn({ ...line, ...cause, retryInMs: retryDelayMs }, "job failed; retrying");
    else if (outcome === "dead") logger.error({ ...line, ...cause, maxAttempts: job.maxAttempts }, "job failed for good (dead)");
    else if (outcome === "lost") logger.warn({ ...line, ...cause }, "job failed after another process took it over");
  }

  async function loop() {
    let lastRecovery = Number.NEGATIVE_INFINITY;
    let failing = false;
    while (!stopped) {
      woken = false;
      try {
        if (performance.now() - lastRecovery >= recoverEveryMs) {
          lastRecovery = performance.now();
          for (const job of await queue.recoverCrashed()) {
            logger.warn(
              { kind: job.kind, jobId: job.id, attempt: job.attempt, processId: job.processId, status: job.status },
              job.status === "dead" ? "job of a dead process was its last try (dead)" : "job of a dead process queued again",
            );
          }
        }
        const free = holdWhile?.() ? 0 : concurrency - running.size;
        // Claims once half the slots are free (or all, idle): one claim statement serves several
        // jobs, where claiming at each finish would cost one per job under load.
        const looked = free > 0 && (free * 2 >= concurrency || running.size === 0);
        const claimed = looked ? await queue.claim({ kinds, limit: free }) : [];
        // Busy from the look that finds jobs to the first that finds none with none running: the
        // gap between two pages of a burst is not idleness.
        if (looked) {
          const wasFinding = finding;
          finding = claimed.length > 0;
          if (wasFinding && !finding && running.size === 0) onIdle?.();
        }
        if (failing) logger.info("job queue reachable again");
        failing = false;
        for (const job of claimed) {
          const task: Promise<void> = run(job).finally(() => {
            running.delete(task);
            wake();
          });
          running.add(task);
        }
        // Claimed all it could take: maybe more are due (or too few slots are free: a finish wakes it).
        if (claimed.length > 0 && claimed.length === free) continue;
        await wait(pollMs);
      } catch (error) {
        // The database is unreachable: said once, then retried at the poll's pace.
        if (!failing) logger.warn({ error: (error as Error).message }, "job queue unreachable; retrying");
        failing = true;
        await wait(Math.max(pollMs, 1_000));
      }
    }
  }

  const looping = loop();
  return {
    kinds,
    busy: () => finding || running.size > 0,
    wake,
    async stop() {
      stopped = true;
      unsubscribe();
      nudge?.();
      await looping;
      await Promise.all([...running]);
    },
  };
}
