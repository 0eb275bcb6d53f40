// The one formula for a wait after a failure, used by every retry in the service (the job queue's
// tries, a runner recording an outcome, a loop's failing pass, the indexer's RPC calls and its
// reorg streaks): doubling from `baseMs`, at most `capMs`, with optional jitter so that many
// things failing together (a provider down) do not come back together.

export interface Backoff {
  /** The wait after the first failure. */
  baseMs: number;
  /** The longest wait. */
  capMs: number;
  /** ±this fraction of the wait, at random (default 0). */
  jitter?: number;
}

/** The wait (ms) after failure number `failures` (1 for the first): baseMs × 2^(failures-1), capped, jittered. */
export function backoffMs(failures: number, { baseMs, capMs, jitter = 0 }: Backoff, random: () => number = Math.random): number {
  const wait = Math.min(capMs, baseMs * 2 ** Math.max(0, failures - 1));
  return jitter === 0 ? wait : Math.round(wait * (1 + jitter * (2 * random() - 1)));
}
