// Work that follows the outbox as it grows, beside the queue's jobs: each process runs a loop per
// consumer that goes again at once while it finds events and polls every `idleMs` when it finds
// none. The notifications fan-out runs here: its event-to-inbox time is one poll plus one page,
// where a periodic slot would add up to its interval. Several processes may run the same loop:
// the consumer's own page lock (domain/events/consumer.ts) gives each page to one of them.

import { setTimeout as sleep } from "node:timers/promises";
import { backoffMs } from "../core/backoff.js";
import type { Clock } from "../core/clock.js";
import type { Logger } from "../core/logger.js";

export interface ContinuousJob {
  /** Stable name for logs, e.g. `notifications.fanout`. */
  name: string;
  /** Real ms between two looks when the last found nothing. */
  idleMs: number;
  /**
   * One pass from `now` (the service clock). `found()`, called when the pass finds work (before
   * it is done with it), marks the loop busy at once: a pass over a burst takes many pages, and
   * the runner should yield from the first.
   */
  run(now: Date, found: () => void): Promise<LoopPass>;
}

export interface LoopPass {
  /** How much it did (0: nothing was waiting for it). */
  did: number;
  /**
   * Work may be waiting that another process holds (a fan-out partition): a loop that was busy
   * stays busy, so the runner keeps yielding, and looks again after `CONTENDED_MS` rather than
   * `idleMs`. An idle loop stays idle (two idle processes' polls meet on empty partitions).
   */
  contended?: boolean;
}

/** The longest wait (real ms) after failed passes, which back off from `idleMs` by doubling. */
const MAX_FAILING_WAIT_MS = 5_000;
/** Real ms before a loop looks again at work another process held. */
export const CONTENDED_MS = 10;

export interface Loops {
  readonly names: readonly string[];
  /** Whether a loop's last pass found work (a backlog is being worked off). */
  busy(): boolean;
  /** Starts no further pass; resolves once the current ones are done. */
  stop(): Promise<void>;
}

export function startLoops({
  clock,
  logger,
  loops,
  onIdle,
}: {
  clock: Pick<Clock, "now">;
  logger: Pick<Logger, "info" | "warn">;
  loops: readonly ContinuousJob[];
  /** Called when the last busy loop finds nothing more (the runner claims again). */
  onIdle?: () => void;
}): Loops {
  let stopped = false;
  const working = new Set<string>();
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
      let contended = false;
      try {
        ({ did, contended = false } = await loop.run(clock.now(), () => working.add(loop.name)));
        if (failures > 0) logger.info({ loop: loop.name }, "loop running again");
        failures = 0;
      } catch (error) {
        if (failures === 0) logger.warn({ loop: loop.name, error: (error as Error).message }, "loop pass failed; retrying");
        failures += 1;
      }
      // Work held elsewhere keeps a busy loop busy (a burst shared with another process), but
      // never makes an idle one busy: idle processes meet on each other's empty polls.
      const busy = did > 0 || (contended && working.has(loop.name));
      if (busy) working.add(loop.name);
      else if (working.delete(loop.name) && working.size === 0) onIdle?.();
      if (stopped) break;
      if (failures > 0) await pause(backoffMs(failures + 1, { baseMs: loop.idleMs, capMs: MAX_FAILING_WAIT_MS }));
      else if (did === 0) await pause(busy ? Math.min(CONTENDED_MS, loop.idleMs) : loop.idleMs);
      // Work found: straight on, but let the rest of the process run between two passes.
      else await sleep(0);
    }
  });

  return {
    names: loops.map((loop) => loop.name),
    busy: () => working.size > 0,
    async stop() {
      stopped = true;
      for (const wake of wakers) wake();
      await Promise.all(running);
    },
  };
}
