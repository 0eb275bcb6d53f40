/**
 * A bounded in-process cache: least recently used entries go first once `max` is reached,
 * and every entry has a deadline on the given time source (the service clock, so
 * `/dev/time/advance` ages entries like real time does). `load` is single-flight: a hundred
 * concurrent misses of one key run one query. A `delete` during a load wins: the loaded
 * value (possibly read before the write that caused the delete) is returned to its callers
 * but not stored.
 */
export interface TtlCache<K, V> {
  get(key: K): V | undefined;
  set(key: K, value: V, expiresAtMs?: number): void;
  delete(key: K): void;
  clear(): void;
  /** The cached value, or `loader()` stored with its own deadline (`expiresAt`) or the default TTL; `undefined` results are not stored. */
  load(key: K, loader: () => Promise<V | undefined>, expiresAt?: (value: V) => number): Promise<V | undefined>;
  readonly size: number;
}

export interface TtlCacheOptions {
  max: number;
  ttlMs: number;
  nowMs: () => number;
}

export function createTtlCache<K, V>({ max, ttlMs, nowMs }: TtlCacheOptions): TtlCache<K, V> {
  const entries = new Map<K, { value: V; expiresAtMs: number }>();
  const inflight = new Map<K, Promise<V | undefined>>();

  function get(key: K): V | undefined {
    const entry = entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAtMs <= nowMs()) {
      entries.delete(key);
      return undefined;
    }
    // Map keeps insertion order: re-inserting marks the entry most recently used.
    entries.delete(key);
    entries.set(key, entry);
    return entry.value;
  }

  function set(key: K, value: V, expiresAtMs?: number): void {
    const deadline = Math.min(expiresAtMs ?? Number.POSITIVE_INFINITY, nowMs() + ttlMs);
    entries.delete(key);
    if (deadline <= nowMs()) return;
    entries.set(key, { value, expiresAtMs: deadline });
    if (entries.size > max) entries.delete(entries.keys().next().value as K);
  }

  return {
    get,
    set,
    delete(key) {
      entries.delete(key);
      inflight.delete(key);
    },
    clear() {
      entries.clear();
      inflight.clear();
    },
    load(key, loader, expiresAt) {
      const hit = get(key);
      if (hit !== undefined) return Promise.resolve(hit);
      const pending = inflight.get(key);
      if (pending) return pending;
      const promise = loader().then(
        (value) => {
          if (inflight.get(key) === promise) {
            inflight.delete(key);
            if (value !== undefined) set(key, value, expiresAt?.(value));
          }
          return value;
        },
        (error: unknown) => {
          if (inflight.get(key) === promise) inflight.delete(key);
          throw error;
        },
      );
      inflight.set(key, promise);
      return promise;
    },
    get size() {
      return entries.size;
    },
  };
}
