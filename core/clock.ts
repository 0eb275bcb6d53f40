/**
 * The service clock. Everything time-dependent reads it, so that the sandbox's
 * `/dev/time/advance` moves the service and the chain together.
 */
export interface Clock {
  now(): Date;
  /** Seconds since the epoch, as the chain counts. */
  nowSeconds(): number;
  /** Moves the clock forward (development only). */
  advance(seconds: number): void;
  offsetSeconds(): number;
}

export function createClock(base: () => number = Date.now): Clock {
  let offsetMs = 0;
  return {
    now: () => new Date(base() + offsetMs),
    nowSeconds: () => Math.floor((base() + offsetMs) / 1000),
    advance: (seconds) => {
      offsetMs += seconds * 1000;
    },
    offsetSeconds: () => offsetMs / 1000,
  };
}
