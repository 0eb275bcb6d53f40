import type { Database } from "./db.js";

// Units of time in milliseconds, defined once (they are units, not tuning).
export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;
export const WEEK_MS = 7 * DAY_MS;

/**
 * The service clock. Everything time-dependent reads it, so that the sandbox's
 * `/dev/time/advance` moves the service and the chain together.
 */
export interface Clock {
  now(): Date;
  /** Seconds since the epoch, as the chain counts. */
  nowSeconds(): number;
  /** Moves the clock forward (development only); a shared clock resolves once the move is stored. */
  advance(seconds: number): void | Promise<void>;
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

export interface SharedClock extends Clock {
  /** Persists the move, so every process sharing the database follows it. */
  advance(seconds: number): Promise<void>;
  /** Stops following the other processes' moves. */
  stop(): void;
}

/** How often (real ms) a shared clock picks up another process's /dev/time/advance. */
export const SHARED_CLOCK_REFRESH_MS = 1_000;

/**
 * The service clock of a deployment of several processes (`npm run api`, `npm run worker`, or
 * `npm start`): its offset lives in the database's `ServiceClock` row, so `/dev/time/advance`
 * received by the API moves the worker's jobs too (within `refreshMs`). The offset only grows,
 * and each move is one atomic increment, so two processes advancing at once both count.
 */
export async function createSharedClock(
  db: Pick<Database, "plain">,
  options: { refreshMs?: number; base?: () => number; onError?: (error: unknown) => void } = {},
): Promise<SharedClock> {
  const base = options.base ?? Date.now;
  const read = async () => {
    const [row] = await db.plain.$queryRaw<{ offsetMs: bigint }[]>`SELECT "offsetMs" FROM "ServiceClock" WHERE "id" = 1`;
    return row ? Number(row.offsetMs) : 0;
  };
  let offsetMs = await read();
  const refresh = setInterval(() => {
    read().then(
      (stored) => {
        offsetMs = Math.max(offsetMs, stored);
      },
      (error) => options.onError?.(error),
    );
  }, options.refreshMs ?? SHARED_CLOCK_REFRESH_MS);
  refresh.unref();
  return {
    now: () => new Date(base() + offsetMs),
    nowSeconds: () => Math.floor((base() + offsetMs) / 1000),
    offsetSeconds: () => offsetMs / 1000,
    advance: async (seconds) => {
      const [row] = await db.plain.$queryRaw<{ offsetMs: bigint }[]>`
        INSERT INTO "ServiceClock" ("id", "offsetMs", "updatedAt") VALUES (1, ${BigInt(Math.round(seconds * 1000))}, now())
        ON CONFLICT ("id") DO UPDATE SET "offsetMs" = "ServiceClock"."offsetMs" + EXCLUDED."offsetMs", "updatedAt" = now()
        RETURNING "offsetMs"`;
      offsetMs = Math.max(offsetMs, Number(row!.offsetMs));
    },
    stop: () => clearInterval(refresh),
  };
}
