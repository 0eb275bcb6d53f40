// Waiting in tests for what happens in the background (a job run, a log line, a row), and the
// logger whose lines a test reads back.
import { pino } from "pino";
import type { Logger } from "../../core/logger.js";

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `condition` every `everyMs` until it holds; throws naming `what` after `timeoutMs`. */
export async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000, everyMs = 5): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** A log line as pino writes it, parsed. */
export type LogLine = { level: number; msg: string; [field: string]: unknown };

/** A debug-level logger whose lines land, parsed, in `lines`. */
export function capturingLogger<L extends LogLine = LogLine>(): { logger: Logger; lines: L[] } {
  const lines: L[] = [];
  const logger = pino({ level: "debug" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}
