/**
 * A condition that can recur on every request (an identity provider that does not answer)
 * is worth one line to an operator, not one per request: `due()` says whether to log now, at
 * most once per `intervalMs`, and `suppressed` how many occurrences went unlogged since the
 * last line. Measured on the monotonic clock: the service clock can be moved in the sandbox.
 */
export function logThrottle(intervalMs: number, nowMs: () => number = () => performance.now()) {
  let lastMs = Number.NEGATIVE_INFINITY;
  let unlogged = 0;
  return {
    /** Counts one occurrence; true when it should be logged, with `suppressed` = the ones skipped before it. */
    due(): { log: boolean; suppressed: number } {
      const now = nowMs();
      if (now - lastMs < intervalMs) {
        unlogged += 1;
        return { log: false, suppressed: unlogged };
      }
      const suppressed = unlogged;
      lastMs = now;
      unlogged = 0;
      return { log: true, suppressed };
    },
  };
}
