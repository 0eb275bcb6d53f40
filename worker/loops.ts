// Work that follows the outbox as it grows, beside the queue's jobs: each process runs a loop that
// goes again at once while a pass finds work and polls every `idleMs` when it finds none. The
// outbox's producer runs here (`createPlatformLoops`, worker/jobs.ts): an event's way to its page
// job is one poll, where a periodic slot would add up to its interval. Several processes may run
// the same loop: the consumer's cursor row lock gives each page to one of them.

import { setTimeout as sleep } from "node:timers/promises";
import { backoffMs } from "../core/backoff.js";
import type { Clock } from "../core/clock.js";
import type { Logger } from "../core/logger.js";

export interface ContinuousJob {
  /** Stable name for logs, e.g. `outbox.produce`. */
  name: string;
  /** Real ms between two looks when the last found nothing. */
  idleMs: number;
  /** One pass from `now` (the service clock); answers how much it did (0: nothing was waiting for it). */
  run(now: Date): Promise<number>;
}

/** The longest wait (real ms) after failed passes, which back off from `idleMs` by doubling. */
const MAX_FAILING_WAIT_MS = 5_000;

export interface Loops {
  readonly names: readonly string[];
  /** Starts no further pass; resolves once the current ones are done. */
  stop(): Promise<void>;
}

export function startLoops({
  clock,
  logger,
  loops,
}: {
  clock: Pick<Clock, "now">;
  logger: Pick<Logger, "info" | "warn">;
  loops: readonly ContinuousJob[];
}): Loops {
  let stopped = false;
  const wakers = new Set<() => void>();
  /** A wait that stop() cuts short. */
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      wakers.add(done);
    });

  const running = loops.map(async (loop) => {
    let failures = 0;
    while (!stopped) {
      let did = 0;
      try {
        did = await loop.run(clock.now());
        if (failures > 0) logger.info({ loop: loop.name }, "loop running again");
        failures = 0;
      } catch (error) {
        if (failures === 0) logger.warn({ loop: loop.name, error: (error as Error).message }, "loop pass failed; retrying");
        failures += 1;
      }
      if (stopped) break;
      if (failures > 0) await pause(backoffMs(failures + 1, { baseMs: loop.idleMs, capMs: MAX_FAILING_WAIT_MS }));
      else if (did === 0) await pause(loop.idleMs);
      // Work found: straight on, but let the rest of the process run between two passes.
      else await sleep(0);
    }
  });

  return {
    names: loops.map((loop) => loop.name),
    async stop() {
      stopped = true;
      for (const wake of wakers) wake();
      await Promise.all(running);
    },
  };
}
