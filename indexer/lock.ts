import type pg from "pg";
import type { Database } from "../core/db.js";
import type { Logger } from "../core/logger.js";
import { sleep } from "./rpc.js";

/** First key of the indexer's advisory locks (the second is the chain id). */
const LOCK_NAMESPACE = 0x7e57_1d0;

export interface WriterLock {
  /** Resolves when the lock is lost (its session died); the holder must stop writing. */
  lost: Promise<Error>;
  release(): Promise<void>;
}

/**
 * Waits until this process is the chain's single writer. On PostgreSQL that is a session
 * advisory lock on a connection of its own: it is released when the holder's session ends,
 * including by SIGKILL (the server sees the socket close), and a waiting process polling
 * `pg_try_advisory_lock` takes over within `pollMs`. PGlite lives inside one process, so that
 * process is the writer. Resolves null if `signal` aborts first.
 */
export async function acquireWriterLock(
  db: Database,
  chainId: number,
  options: { logger: Logger; signal: AbortSignal; pollMs?: number; probeMs?: number },
): Promise<WriterLock | null> {
  const pollMs = options.pollMs ?? 1_000;
  if (!db.connectionString) return acquireInProcess(db, chainId, { ...options, pollMs });
  const { default: pg } = await import("pg"); // PostgreSQL only: a PGlite process never loads the driver
  let waitingLogged = false;
  while (!options.signal.aborted) {
    const client = new pg.Client({ connectionString: db.connectionString, connectionTimeoutMillis: 5_000 });
    client.on("error", () => {});
    try {
      await client.connect();
      for (;;) {
        const { rows } = await client.query<{ locked: boolean }>("SELECT pg_try_advisory_lock($1, $2) AS locked", [
          LOCK_NAMESPACE,
          chainId,
        ]);
        if (rows[0]?.locked) {
          if (!options.signal.aborted) return holding(client, options.probeMs ?? 2_000);
          break;
        }
        if (!waitingLogged) {
          options.logger.info({ chainId }, "another indexer is the writer; standing by to take over");
          waitingLogged = true;
        }
        await sleep(pollMs, options.signal);
        if (options.signal.aborted) break;
      }
    } catch (error) {
      options.logger.warn({ error: (error as Error).message }, "indexer lock: database connection failed; retrying");
      await sleep(pollMs, options.signal);
    }
    await client.end().catch(() => {});
  }
  return null;
}

/** Watches the lock's session: a failed probe means the server may have released the lock. */
function holding(client: pg.Client, probeMs: number): WriterLock {
  let resolveLost: (error: Error) => void = () => {};
  const lost = new Promise<Error>((resolve) => {
    resolveLost = resolve;
  });
  let released = false;
  const fail = (error: Error) => {
    if (released) return;
    released = true;
    clearInterval(probe);
    void client.end().catch(() => {});
    resolveLost(error);
  };
  client.on("error", fail);
  client.on("end", () => fail(new Error("lock session ended")));
  const probe = setInterval(() => {
    client.query("SELECT 1").catch((error: Error) => fail(error));
  }, probeMs);
  probe.unref();
  return {
    lost,
    release: async () => {
      if (released) return;
      released = true;
      clearInterval(probe);
      // Ending the session releases its advisory locks.
      await client.end().catch(() => {});
    },
  };
}

/** PGlite databases whose writer lock is taken, per chain (keyed by the database's client). */
const inProcessLocks = new WeakMap<object, Set<number>>();

/** PGlite: one process owns the database, so indexers on it only exclude each other in memory. */
async function acquireInProcess(
  db: Database,
  chainId: number,
  options: { logger: Logger; signal: AbortSignal; pollMs: number },
): Promise<WriterLock | null> {
  let held = inProcessLocks.get(db.prisma);
  if (!held) {
    held = new Set();
    inProcessLocks.set(db.prisma, held);
  }
  let waitingLogged = false;
  while (held.has(chainId)) {
    if (!waitingLogged) {
      options.logger.info({ chainId }, "another indexer is the writer; standing by to take over");
      waitingLogged = true;
    }
    await sleep(options.pollMs, options.signal);
    if (options.signal.aborted) return null;
  }
  held.add(chainId);
  const locks = held;
  return {
    lost: new Promise<Error>(() => {}),
    release: async () => {
      locks.delete(chainId);
    },
  };
}
