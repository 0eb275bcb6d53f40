import { createHash, randomBytes } from "node:crypto";
import type { Clock } from "../../core/clock.js";
import { createTtlCache } from "../../core/ttl-cache.js";
import { AppError } from "../errors.js";
import type { UserRecord, UsersRepo } from "../users/repo.js";
import type { ApiKeysRepo } from "./repo.js";

/** Keys per user at a time: enough for rotation across a few integrations. */
export const MAX_ACTIVE_KEYS = 10;
const KEY_PREFIX = "tmk_";
/** `lastUsedAt` is written at most this often per key, so key traffic does not write on every call. */
const TOUCH_INTERVAL_MS = 60_000;

/**
 * A key is 32 random bytes (256 bits): guessing one is hopeless, so a fast SHA-256 of it is
 * as good as a slow password hash, and lets the key be found by an indexed lookup.
 */
export function hashApiKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/** How long this process trusts an active key without a query; revocations here clear it at once. */
export const API_KEY_CACHE_TTL_MS = 2_000;

export interface ApiKeysServiceDeps {
  repo: ApiKeysRepo;
  /** The key's owner is read through the users repository (and its per-process cache). */
  users: Pick<UsersRepo, "findById">;
  clock: Pick<Clock, "now">;
}

function view(key: { id: string; name: string; prefix: string; createdAt: Date; lastUsedAt: Date | null }) {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    createdAt: key.createdAt.toISOString(),
    lastUsedAt: key.lastUsedAt?.toISOString() ?? null,
  };
}

export function createApiKeysService({ repo, users, clock }: ApiKeysServiceDeps) {
  // Active keys by hash. Only found keys are cached (a miss queries again), so a new key
  // works at once; a revocation in this process clears the cache, one in another process
  // takes effect within API_KEY_CACHE_TTL_MS.
  const active = createTtlCache<string, { id: string; userId: string; lastUsedAt: Date | null }>({
    max: 10_000,
    ttlMs: API_KEY_CACHE_TTL_MS,
    nowMs: () => clock.now().getTime(),
  });
  return {
    async create(user: UserRecord, name: string) {
      if (user.plan === "free") throw new AppError("FORBIDDEN", "API keys are available on the Pro and Enterprise plans only");
      const key = `${KEY_PREFIX}${randomBytes(32).toString("base64url")}`;
      const row = await repo.createWithinCap(
        { userId: user.id, name, prefix: key.slice(0, 12), hash: hashApiKey(key), now: clock.now() },
        MAX_ACTIVE_KEYS,
      );
      if (!row) throw new AppError("CONFLICT", `At most ${MAX_ACTIVE_KEYS} active API keys; revoke one first`);
      return { ...view(row), key };
    },

    async list(user: UserRecord) {
      return (await repo.listActive(user.id)).map(view);
    },

    async revoke(user: UserRecord, keyId: string) {
      const now = clock.now();
      // Another user's key id is answered exactly like an unknown one.
      const revoked = await repo.revoke(user.id, keyId, now);
      active.clear();
      if (!revoked) throw new AppError("NOT_FOUND", "API key not found");
      return { id: keyId, revokedAt: now.toISOString() };
    },

    /** The owner of an active key (for X-API-Key authentication), or null. */
    async userForApiKey(key: string): Promise<{ user: UserRecord; apiKeyId: string } | null> {
      if (!key.startsWith(KEY_PREFIX) || key.length > 100) return null;
      const row = await active.load(hashApiKey(key), async () => {
        const found = await repo.findActiveByHash(hashApiKey(key));
        return found ? { id: found.id, userId: found.userId, lastUsedAt: found.lastUsedAt } : undefined;
      });
      if (!row) return null;
      const user = await users.findById(row.userId);
      if (!user) return null;
      const now = clock.now();
      if (!row.lastUsedAt || now.getTime() - row.lastUsedAt.getTime() > TOUCH_INTERVAL_MS) {
        row.lastUsedAt = now;
        await repo.touch(row.id, now);
      }
      return { user, apiKeyId: row.id };
    },
  };
}

export type ApiKeysService = ReturnType<typeof createApiKeysService>;
