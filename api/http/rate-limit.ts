import { isIP } from "node:net";
import type { NextFunction, Request, Response } from "express";
import type { Redis } from "ioredis";
import type { RateLimiterRedis } from "rate-limiter-flexible";
import type { Clock } from "../../core/clock.js";
import type { Logger } from "../../core/logger.js";
import { AppError } from "./errors.js";

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
/**
 * Counters one process keeps in memory at most (about 100 bytes each). Past it the least
 * recently used are forgotten: a flood of new client addresses costs bounded memory and can
 * only make the limiter forget (serve more), never refuse a client that did nothing.
 */
export const MEMORY_COUNTERS_MAX = 100_000;

/** Adds to a window's counter and returns its new value. */
type Counters = (key: string, by: number, ttlSeconds: number) => Promise<number>;

/** Fixed-window counters in this process, bounded in number (LRU). */
export function memoryCounters(max = MEMORY_COUNTERS_MAX): Counters & { size(): number } {
  const entries = new Map<string, { count: number; expiresAt: number }>();
  const add = async (key: string, by: number, ttlSeconds: number) => {
    const now = Date.now();
    let entry = entries.get(key);
    if (entry && entry.expiresAt <= now) entry = undefined;
    entries.delete(key);
    entry ??= { count: 0, expiresAt: now + ttlSeconds * 1000 };
    entry.count += by;
    entries.set(key, entry);
    // A Map iterates in insertion order and every use re-inserts: the first key is the least recently used.
    while (entries.size > max) entries.delete(entries.keys().next().value!);
    return entry.count;
  };
  return Object.assign(add, { size: () => entries.size });
}

/**
 * Counters shared by every API process in Redis (atomic increments with expiry, by
 * rate-limiter-flexible, loaded with the first count: a process without Redis never loads it).
 */
function redisCounters(redis: Redis): Counters {
  let flexible: Promise<typeof import("rate-limiter-flexible")> | undefined;
  const stores = new Map<number, RateLimiterRedis>();
  const store = ({ RateLimiterRedis }: typeof import("rate-limiter-flexible"), ttlSeconds: number) => {
    let limiter = stores.get(ttlSeconds);
    if (!limiter) {
      // Counting only: the limit is applied by the caller, so the store's own never refuses.
      limiter = new RateLimiterRedis({ storeClient: redis, keyPrefix: "rl", points: Number.MAX_SAFE_INTEGER, duration: ttlSeconds });
      stores.set(ttlSeconds, limiter);
    }
    return limiter;
  };
  return async (key, by, ttlSeconds) => {
    flexible ??= import("rate-limiter-flexible");
    const module = await flexible;
    try {
      const result = by >= 0 ? await store(module, ttlSeconds).consume(key, by) : await store(module, ttlSeconds).reward(key, -by);
      return result.consumedPoints;
    } catch (rejection) {
      if (rejection instanceof module.RateLimiterRes) return rejection.consumedPoints;
      throw rejection;
    }
  };
}

/**
 * The client address an anonymous caller is counted by: Express's `req.ip` (which follows
 * X-Forwarded-For only through the proxies TRUST_PROXY names) when it is a well-formed IP,
 * else the socket's peer. IPv6 clients are counted per /64, the block one subscriber gets.
 */
export function clientAddress(req: Pick<Request, "ip" | "socket">): string {
  const candidate = req.ip && isIP(req.ip) ? req.ip : (req.socket.remoteAddress ?? "unknown");
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(candidate);
  if (mapped) return mapped[1]!;
  if (isIP(candidate) !== 6) return candidate;
  return `${expandIpv6(candidate).slice(0, 4).join(":")}::/64`;
}

function expandIpv6(address: string): string[] {
  const [head = "", tail = ""] = address.split("::");
  const left = head ? head.split(":") : [];
  const right = address.includes("::") && tail ? tail.split(":") : [];
  const groups = address.includes("::") ? [...left, ...Array(8 - left.length - right.length).fill("0"), ...right] : left;
  return groups.map((group) => group.toLowerCase().replace(/^0+(?=.)/, ""));
}

export interface RateLimitDeps {
  clock: Pick<Clock, "nowSeconds">;
  /** Shared counters across API processes; in-process counters when absent. */
  redis?: Redis;
  logger: Pick<Logger, "warn">;
  /** Route paths (OpenAPI form, `/dev/users/{userId}/plan`) whose requests are never counted. */
  unlimitedPaths?: string[];
}

declare global {
  namespace Express {
    interface Request {
      /** Over its limit; refused by `refuseOverLimit` (at once, or by the route when the credential was unusable). */
      rateLimitExceeded?: { retryAfter: number };
    }
  }
}

/** The 429 of a request over its limit (with its Retry-After), or undefined for one within it. */
export function refuseOverLimit(req: Request): AppError | undefined {
  if (!req.rateLimitExceeded) return undefined;
  return new AppError("RATE_LIMITED", "Too many requests; retry after X-RateLimit-Reset", undefined, req.rateLimitExceeded.retryAfter);
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** A route path in OpenAPI form as a pattern of request paths, matched as Express routes them: any case, optional trailing slash. */
function routePattern(path: string): RegExp {
  const source = path
    .split(/\{[^}]+\}/)
    .map(escapeRegExp)
    .join("[^/]+");
  return new RegExp(`^${source}/?$`, "i");
}

interface WindowState {
  limit: number;
  count: number;
  reset: number;
}

/**
 * Fixed windows aligned on the SERVICE clock: the counter key carries the window number
 * (service seconds / window length), so /dev/time/advance starts new windows like real time
 * does. A plan's limits are the user's, whatever the credential (token or any of their API
 * keys); anonymous callers are counted by client address. Only served requests count: the
 * minute is checked first and a refused request leaves the day untouched; a request the day
 * refuses gives its minute point back. When Redis fails, counting goes on in memory.
 */
export function createRateLimiter(deps: RateLimitDeps) {
  const unlimitedPaths = (deps.unlimitedPaths ?? []).map(routePattern);
  const memory = memoryCounters();
  const shared = deps.redis ? redisCounters(deps.redis) : undefined;
  let redisFailing = false;
  const add: Counters = async (key, by, ttlSeconds) => {
    if (!shared) return memory(key, by, ttlSeconds);
    try {
      const count = await shared(key, by, ttlSeconds);
      redisFailing = false;
      return count;
    } catch (error) {
      if (!redisFailing)
        deps.logger.warn({ err: (error as Error).message }, "rate limits: redis unavailable; counting in this process meanwhile");
      redisFailing = true;
      return memory(key, by, ttlSeconds);
    }
  };

  const windowOf = (plan: LimitedPlan, window: Window, identity: string) => {
    const length = WINDOW_SECONDS[window];
    const index = Math.floor(deps.clock.nowSeconds() / length);
    return {
      key: `${plan}:${window}:${identity}:${index}`,
      ttl: length + EXPIRY_MARGIN_S,
      limit: PLAN_LIMITS[plan][window],
      reset: (index + 1) * length,
    };
  };

  return async function rateLimit(req: Request, res: Response, next: NextFunction) {
    const plan = req.auth?.user.plan ?? "free";
    if (plan === "enterprise" || unlimitedPaths.some((pattern) => pattern.test(req.path))) {
      // Unlimited (Enterprise, and the paths the app exempts): nothing is counted; the headers
      // say so and Reset is the current minute's end.
      res.setHeader("X-RateLimit-Limit", "unlimited");
      res.setHeader("X-RateLimit-Remaining", "unlimited");
      res.setHeader("X-RateLimit-Reset", String((Math.floor(deps.clock.nowSeconds() / 60) + 1) * 60));
      return next();
    }
    const identity = req.auth ? `user:${req.auth.user.id}` : `ip:${clientAddress(req)}`;
    const minuteWindow = windowOf(plan, "minute", identity);
    const dayWindow = windowOf(plan, "day", identity);
    const minute: WindowState = { ...minuteWindow, count: await add(minuteWindow.key, 1, minuteWindow.ttl) };
    let day: WindowState | undefined;
    if (minute.count <= minute.limit) {
      day = { ...dayWindow, count: await add(dayWindow.key, 1, dayWindow.ttl) };
      if (day.count > day.limit) await add(minuteWindow.key, -1, minuteWindow.ttl);
    }
    // The headers describe the window closest to running out (the minute window unless the
    // day's remainder is smaller), i.e. the one that will refuse the next request first.
    const remaining = (w: WindowState) => Math.max(0, w.limit - w.count);
    const exceeded = minute.count > minute.limit ? minute : day && day.count > day.limit ? day : undefined;
    const shown = exceeded ?? (day && remaining(day) < remaining(minute) ? day : minute);
    res.setHeader("X-RateLimit-Limit", String(shown.limit));
    res.setHeader("X-RateLimit-Remaining", String(remaining(shown)));
    res.setHeader("X-RateLimit-Reset", String(shown.reset));
    if (exceeded) req.rateLimitExceeded = { retryAfter: Math.max(1, exceeded.reset - deps.clock.nowSeconds()) };
    // An unusable credential (a bad or expired token) counts by address like no credential,
    // but a route that needs authentication must answer 401 so that the client refreshes its
    // token: the route refuses instead (authGate), once it is known which kind it is.
    if (req.authError) return next();
    next(refuseOverLimit(req));
  };
}

/** The Redis client of the shared counters: fails fast instead of queueing while Redis is away. */
export async function connectRedis(url: string, logger: Pick<Logger, "warn">): Promise<Redis> {
  // Loaded only when REDIS_URL is set (about 60 ms and 2 MB at start otherwise; D-87).
  const { Redis } = await import("ioredis");
  const redis = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2_000 });
  // Without a listener ioredis prints every connection error with its stack on stderr. The
  // limiter keeps counting in memory while Redis is away; one line per change.
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
