import type { NextFunction, Request, Response } from "express";
import { Redis } from "ioredis";
import { type IRateLimiterOptions, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import type { Clock } from "../../core/clock.js";
import type { Logger } from "../../core/logger.js";
import { errorBody } from "./envelope.js";

/** Requests per window by plan (service-spec part 8); enterprise is unlimited. */
export const PLAN_LIMITS = {
  free: { minute: 60, day: 1_000 },
  pro: { minute: 300, day: 10_000 },
} as const;

type LimitedPlan = keyof typeof PLAN_LIMITS;
type Window = "minute" | "day";
const WINDOW_SECONDS: Record<Window, number> = { minute: 60, day: 86_400 };
/** Real seconds a counter outlives its window, so it never expires before the window ends. */
const EXPIRY_MARGIN_S = 60;

export interface RateLimitDeps {
  clock: Pick<Clock, "nowSeconds">;
  /** Shared counters across API processes; in-process counters when absent. */
  redis?: Redis;
  logger: Pick<Logger, "warn">;
}

interface WindowState {
  limit: number;
  consumed: number;
  reset: number;
}

/**
 * Fixed windows aligned on the SERVICE clock: the counter key carries the window number
 * (service seconds / window length), so /dev/time/advance starts new windows like real time
 * does. rate-limiter-flexible stores and expires the counters (Redis or memory); its own
 * expiry runs on real time and only cleans up.
 */
export function createRateLimiter(deps: RateLimitDeps) {
  const limiters = new Map<string, RateLimiterMemory | RateLimiterRedis>();
  for (const plan of Object.keys(PLAN_LIMITS) as LimitedPlan[]) {
    for (const window of ["minute", "day"] as Window[]) {
      const options: IRateLimiterOptions = {
        keyPrefix: `rl:${plan}:${window}`,
        points: PLAN_LIMITS[plan][window],
        duration: WINDOW_SECONDS[window] + EXPIRY_MARGIN_S,
      };
      limiters.set(
        `${plan}:${window}`,
        deps.redis
          ? new RateLimiterRedis({
              ...options,
              storeClient: deps.redis,
              // Redis down: keep limiting per process rather than failing every request.
              insuranceLimiter: new RateLimiterMemory(options),
            })
          : new RateLimiterMemory(options),
      );
    }
  }

  async function consume(plan: LimitedPlan, window: Window, identity: string): Promise<WindowState> {
    const length = WINDOW_SECONDS[window];
    const index = Math.floor(deps.clock.nowSeconds() / length);
    const limit = PLAN_LIMITS[plan][window];
    const reset = (index + 1) * length;
    try {
      const result = await limiters.get(`${plan}:${window}`)!.consume(`${identity}:${index}`, 1);
      return { limit, consumed: result.consumedPoints, reset };
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) return { limit, consumed: rejection.consumedPoints, reset };
      throw rejection;
    }
  }

  return async function rateLimit(req: Request, res: Response, next: NextFunction) {
    // The sandbox (absent in production) is not limited: the API fetches its own JWKS from
    // /dev, where a throttled key set would turn valid tokens into 401s, and test suites
    // issue many tokens and move the clock often.
    if (req.path.startsWith("/dev/")) return next();
    try {
      const plan = req.auth?.user.plan ?? "free";
      if (plan === "enterprise") {
        // Unlimited: nothing is counted; the headers say so and Reset is the current minute's end.
        res.setHeader("X-RateLimit-Limit", "unlimited");
        res.setHeader("X-RateLimit-Remaining", "unlimited");
        res.setHeader("X-RateLimit-Reset", String((Math.floor(deps.clock.nowSeconds() / 60) + 1) * 60));
        return next();
      }
      const identity = req.auth ? (req.auth.apiKeyId ? `key:${req.auth.apiKeyId}` : `user:${req.auth.user.id}`) : `ip:${req.ip}`;
      const [minute, day] = await Promise.all([consume(plan, "minute", identity), consume(plan, "day", identity)]);
      // The headers describe the window closest to running out (the minute window unless the
      // day's remainder is smaller), i.e. the one that will refuse the next request first.
      const remaining = (w: WindowState) => Math.max(0, w.limit - w.consumed);
      const exceeded = [minute, day].find((w) => w.consumed > w.limit);
      const shown = exceeded ?? (remaining(day) < remaining(minute) ? day : minute);
      res.setHeader("X-RateLimit-Limit", String(shown.limit));
      res.setHeader("X-RateLimit-Remaining", String(remaining(shown)));
      res.setHeader("X-RateLimit-Reset", String(shown.reset));
      if (exceeded) {
        res.setHeader("Retry-After", String(Math.max(1, exceeded.reset - deps.clock.nowSeconds())));
        res.status(429).json(errorBody(req, "RATE_LIMITED", "Too many requests; retry after X-RateLimit-Reset"));
        return;
      }
      next();
    } catch (error) {
      // The limiter's store failed (and so did its insurance): serve rather than refuse.
      deps.logger.warn({ err: error }, "rate limiter unavailable; request not counted");
      next();
    }
  };
}

/** The Redis client of the shared counters: fails fast instead of queueing while Redis is away. */
export function connectRedis(url: string, logger: Pick<Logger, "warn">): Redis {
  const redis = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2_000 });
  // Without a listener ioredis prints every connection error with its stack on stderr. The
  // limiter keeps serving from its in-memory insurance while Redis is away; one line per change.
  let lastError = "";
  redis.on("error", (error: Error) => {
    if (error.message === lastError) return;
    lastError = error.message;
    logger.warn({ err: error.message }, "redis unavailable; rate limits counted in this process meanwhile");
  });
  redis.on("ready", () => {
    lastError = "";
  });
  return redis;
}
