import type { Logger } from "../core/logger.js";

type Stopper = () => Promise<void> | void;

/**
 * Runs `start`, then waits for SIGINT/SIGTERM and runs the registered stoppers
 * in reverse order. A start failure prints one line (expected errors) or the
 * error (unexpected ones), stops what had started, and exits 1.
 */
export async function runUntilSignal(
  name: string,
  start: (onStop: (stopper: Stopper) => void) => Promise<void>,
  isExpected: (error: unknown) => boolean,
): Promise<void> {
  const stoppers: Stopper[] = [];
  let stopping = false;

  async function stopAll(exitCode: number) {
    if (stopping) return;
    stopping = true;
    for (const stopper of stoppers.reverse()) {
      try {
        await stopper();
      } catch (error) {
        console.error(`${name}: error while stopping: ${(error as Error).message}`);
      }
    }
    process.exit(exitCode);
  }

  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      console.log(`${name}: ${signal} received, stopping`);
      void stopAll(0);
    });
  }

  try {
    await start((stopper) => stoppers.push(stopper));
  } catch (error) {
    if (isExpected(error)) console.error((error as Error).message);
    else console.error(`${name}: failed to start: ${(error as Error)?.stack ?? String(error)}`);
    await stopAll(1);
  }
}

/**
 * The start's steps still running, said every `everyMs` until done: a slow or stuck start names
 * what it waits for (a start under load takes several times its usual 2 s, and prints nothing else).
 */
export function startSteps(logger: Pick<Logger, "warn">, everyMs: number) {
  const running = new Set<string>();
  const timer = setInterval(
    () => logger.warn({ waitingFor: [...running], seconds: Math.round(performance.now() / 1000) }, "start: still starting"),
    everyMs,
  );
  timer.unref();
  return {
    /** `work`, named among the running steps until it settles. */
    track<T>(step: string, work: Promise<T>): Promise<T> {
      running.add(step);
      return work.finally(() => running.delete(step));
    },
    done: () => clearInterval(timer),
  };
}
