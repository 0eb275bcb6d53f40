// What the code around the job queue sees of it: the queue's interface, a job as it is enqueued
// and as its handler gets it, the errors a handler throws to say whether a retry can help, and the
// default retry schedule. Kept apart from the queue's SQL (queue.ts), which re-exports all of it:
// callers import from queue.ts.

import { type Backoff, backoffMs } from "../../core/backoff.js";
import type { Job as JobRow } from "../../generated/prisma/client.js";
import type { RawTx } from "../db.js";

export type { JobRow };
export type JobStatus = "queued" | "running" | "succeeded" | "dead";

/** Tries of a job unless its enqueuer says otherwise: 10 s × 2^(n-1) apart, about 1.4 h in all. */
export const DEFAULT_MAX_ATTEMPTS = 10;
/** The dedupe keys of periodic runs (`periodic:<name>:<slot>`): pruned once old, even dead. */
export const PERIODIC_KEY_PREFIX = "periodic:";
/** A failed job's next try: 10 s × 2^(n-1), at most 1 h, ±20 % so that jobs failing together (a provider down) do not come back together. */
const JOB_BACKOFF: Backoff = { baseMs: 10_000, capMs: 3_600_000, jitter: 0.2 };

/** The delay before try `attempt + 1` after try `attempt` failed (JOB_BACKOFF). */
export const jobRetryDelayMs = (attempt: number, random?: () => number): number => backoffMs(attempt, JOB_BACKOFF, random);

/** A failure worth another try (a timeout, a 5xx, a 429): the job is queued again after a delay. */
export class RetryableJobError extends Error {
  override name = "RetryableJobError";
  /** The handler's own delay before the next try (a `Retry-After`), instead of the kind's schedule. */
  readonly retryAfterMs: number | undefined;
  constructor(message: string, options: { retryAfterMs?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** A failure no retry can fix (a 4xx, a payload that cannot be delivered): the job is dead at once. */
export class PermanentJobError extends Error {
  override name = "PermanentJobError";
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause });
  }
}

export interface EnqueueInput<P = unknown> {
  /** The handler that runs it, e.g. `notification.push`. */
  kind: string;
  /** Plain JSON (no bigint, no Date object): what the handler gets. */
  payload: P;
  /** Not before this time of the service clock; default now. */
  runAt?: Date;
  /** At most one job per key, ever (while its row is kept): a second enqueue is a no-op. */
  dedupeKey?: string;
  /** Tries before the job is dead; default DEFAULT_MAX_ATTEMPTS. */
  maxAttempts?: number;
  /**
   * Skipped while a job of the same kind is queued or running, so that runs of the kind never
   * overlap (the periodic jobs). Two enqueues in the same instant may both pass: pair it with a
   * dedupe key.
   */
  exclusive?: boolean;
  /**
   * Jobs with the same key run at most `limit` at once, across processes (one webhook's
   * deliveries): claims pass over the key's jobs while that many run. A soft cap: two claims at
   * the same instant may each take the last slot.
   */
  concurrency?: { key: string; limit: number };
}

/** A job as its handler gets it, once claimed. */
export interface ClaimedJob<P = unknown> {
  id: string;
  kind: string;
  payload: P;
  /** This try's number, from 1. */
  attempt: number;
  maxAttempts: number;
  runAt: Date;
  dedupeKey: string | null;
  createdAt: Date;
}

// biome-ignore lint/suspicious/noExplicitAny: each kind's handler declares its own payload type
export type JobHandler<P = any> = (payload: P, job: ClaimedJob<P>) => Promise<void>;

/** What a failed try led to: queued again, dead, or nothing (another process had taken the job over). */
export type FailOutcome = "retry" | "dead" | "lost";

export interface JobQueue {
  /**
   * Adds a job; inside the caller's transaction `tx` when given (an outbox consumer inserts its
   * jobs with the mark that it took the event). Returns its id, or null when the dedupe key
   * exists already (or an `exclusive` kind is busy). Without `tx` the runners of this process
   * are woken; with `tx`, call `wake()` after the commit.
   */
  enqueue<P>(input: EnqueueInput<P>, tx?: RawTx): Promise<string | null>;
  /** Several jobs in one statement; returns the ids of those created. */
  enqueueMany(inputs: readonly EnqueueInput[], tx?: RawTx): Promise<string[]>;
  /**
   * Adds items to a waiting batch: per input, to a queued job of its kind and concurrency key
   * not tried yet, due, whose payload is a batch (`batch: true`, `items: [...]`) with room for
   * `maxItems`; answers per input how many of its items were added (the rest are the caller's to
   * enqueue). Under load, deliveries gather in the job that waits for a slot instead of each
   * making a job of its own; when idle, none waits and nothing is added. Inside the caller's
   * transaction `tx` when given; a job being claimed is passed over (SKIP LOCKED).
   */
  joinWaiting(
    inputs: readonly { kind: string; concurrencyKey: string; items: readonly unknown[] }[],
    maxItems: number,
    tx?: RawTx,
  ): Promise<number[]>;
  /** Wakes the runners of this process (after a commit that enqueued jobs). */
  wake(): void;
  /** Called on `wake()` (a runner cuts its poll short); returns the unsubscribe function. */
  onWake(listener: () => void): () => void;

  /** Takes up to `limit` due jobs of these kinds for this process (running, one more attempt recorded). */
  claim(options: { kinds: readonly string[]; limit: number }): Promise<ClaimedJob[]>;
  /** Records a try's success; false when the job was no longer this process's (taken over). */
  succeed(job: ClaimedJob, options: { durationMs: number }): Promise<boolean>;
  /**
   * Records a try's failure: dead for a PermanentJobError or the last allowed try, else queued
   * again `retryDelayMs` later on the service clock (default `jobRetryDelayMs(attempt)`).
   */
  fail(job: ClaimedJob, error: unknown, options: { durationMs: number; retryDelayMs?: number }): Promise<FailOutcome>;
  /**
   * Queues again the running jobs of processes that stopped beating (dead once out of tries),
   * closing their open attempt as `crashed`. Returns them.
   */
  recoverCrashed(): Promise<{ id: string; kind: string; attempt: number; processId: string | null; status: JobStatus }[]>;

  /** A job by id or dedupe key. */
  get(where: { id: string } | { dedupeKey: string }): Promise<JobRow | null>;
  /** The dead jobs, last failed first. */
  listDead(options?: { kind?: string; limit?: number; offset?: number }): Promise<JobRow[]>;
  /** Queues a dead job again, due now, for one more try; false when it is not dead. */
  retryDead(jobId: string): Promise<boolean>;
  /** Jobs by kind and status, for logs. */
  stats(): Promise<Record<string, Partial<Record<JobStatus, number>>>>;
  /** Deletes, with their attempts, the succeeded jobs and dead periodic runs finished before `before`. */
  prune(before: Date): Promise<number>;
}
