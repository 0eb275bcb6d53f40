import type { JsonRpcProvider } from "ethers";
import { Router } from "express";
import type { Database } from "../../core/db.js";
import type { PayerWatch } from "../../domain/transactions/payer.js";
import { indexerCursorOf } from "../../domain/transactions/repo.js";
import type { ReorgLoop } from "../../indexer/store.js";
import { allowMethods } from "../http/error-handler.js";

export interface HealthDeps {
  db: Pick<Database, "kind" | "ping" | "prisma">;
  chain: { provider: Pick<JsonRpcProvider, "getBlockNumber">; chainId: number };
  /** The account that pays users' gas; absent where the process sends nothing. */
  payer?: Pick<PayerWatch, "status">;
}

/** A dependency that does not answer a probe within this is reported down: /health itself answers quickly. */
const PROBE_TIMEOUT_MS = 2_000;
/** An indexer whose heartbeat is older than this is reported down (it beats every 2 s). */
const INDEXER_STALE_MS = 30_000;

/** The stored loop as /health shows it: each field as the indexer wrote it, null where it is missing. */
function reorgLoopOf(value: unknown): { [K in keyof ReorgLoop]: ReorgLoop[K] | null } | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const v = value as Record<string, unknown>;
  const num = (x: unknown) => (typeof x === "number" ? x : null);
  const str = (x: unknown) => (typeof x === "string" ? x : null);
  return {
    forkBlock: num(v.forkBlock),
    fromBlock: num(v.fromBlock),
    count: num(v.count),
    since: str(v.since),
    reason: str(v.reason),
    chainUnchanged: typeof v.chainUnchanged === "boolean" ? v.chainUnchanged : null,
    backoffMs: num(v.backoffMs),
  };
}

function withTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} timed out`)), PROBE_TIMEOUT_MS).unref()),
  ]);
}

/** What `GET /health` answers: bare JSON (no envelope) as the run contract fixes it; unhealthy names the failing parts. */
export async function healthReport({ db, chain, payer }: HealthDeps): Promise<{ healthy: boolean; body: Record<string, unknown> }> {
  const failing: string[] = [];
  const [blockNumber, probe, payerStatus] = await Promise.all([
    withTimeout(chain.provider.getBlockNumber(), "chain").catch(() => {
      failing.push("chain");
      return null;
    }),
    withTimeout(
      (async () => {
        await db.ping();
        return { cursor: await indexerCursorOf(db, chain.chainId) };
      })(),
      "database",
    ).catch(() => {
      failing.push("database");
      return null;
    }),
    // Reported, not failing: a low account still pays until it is empty; the log warns once.
    payer ? withTimeout(payer.status(), "payer").catch(() => null) : null,
  ]);
  const cursor = probe?.cursor;
  // No heartbeat: no indexer has run for this chain, and every write would wait for a mirror
  // that never moves.
  const absent = probe !== null && !cursor?.heartbeatAt;
  // Real-time age: the writer stamps its heartbeat with the wall clock, not the service clock.
  const stale = Boolean(cursor?.heartbeatAt && Date.now() - cursor.heartbeatAt.getTime() > INDEXER_STALE_MS);
  const reorgLoop = reorgLoopOf(cursor?.reorgLoop);
  // A looping indexer is alive but mirrors nothing new: a failure, not a lag to wait out.
  if (absent || stale || reorgLoop) failing.push("indexer");
  const state = probe === null ? null : absent ? "absent" : stale ? "stale" : reorgLoop ? "reorg-loop" : "indexing";
  const indexedBlock = probe === null ? null : (cursor?.blockNumber ?? 0);
  return {
    healthy: failing.length === 0,
    body: {
      status: failing.length === 0 ? "ok" : "degraded",
      chainId: chain.chainId,
      blockNumber,
      indexedBlock,
      indexer: {
        lagBlocks: blockNumber !== null && indexedBlock !== null ? Math.max(0, blockNumber - indexedBlock) : null,
        lastHeartbeat: cursor?.heartbeatAt?.toISOString() ?? null,
        state,
        reorgLoop,
      },
      database: db.kind,
      ...(payer ? { payer: payerStatus } : {}),
      ...(failing.length === 0 ? {} : { failing }),
    },
  };
}

/** `GET /health`: 200 when healthy, else 503. */
export function healthRoutes(deps: HealthDeps): Router {
  const router = Router();
  router.get("/health", async (_req, res) => {
    const { healthy, body } = await healthReport(deps);
    res.status(healthy ? 200 : 503).json(body);
  });
  // Another method passes on, to the 405 that every known path answers (after the rate limiter).
  router.all("/health", allowMethods(["get"]));
  return router;
}
