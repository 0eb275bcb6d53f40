import type { JsonRpcProvider } from "ethers";
import { Router } from "express";
import type { Database } from "../../core/db.js";

export interface HealthDeps {
  db: Pick<Database, "kind" | "ping" | "prisma">;
  chain: { provider: Pick<JsonRpcProvider, "getBlockNumber">; chainId: number };
}

const PROBE_TIMEOUT_MS = 2_000;
/** An indexer whose heartbeat is older than this is reported down (it beats every 2 s). */
const INDEXER_STALE_MS = 30_000;

function withTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} timed out`)), PROBE_TIMEOUT_MS).unref()),
  ]);
}

/** `GET /health`: bare JSON (no envelope) as the run contract fixes it; 503 names the failing parts. */
export function healthRoutes({ db, chain }: HealthDeps): Router {
  const router = Router();
  router.get("/health", async (_req, res) => {
    const failing: string[] = [];
    const [blockNumber, probe] = await Promise.all([
      withTimeout(chain.provider.getBlockNumber(), "chain").catch(() => {
        failing.push("chain");
        return null;
      }),
      withTimeout(
        (async () => {
          await db.ping();
          return { cursor: await db.prisma.indexerCursor.findUnique({ where: { chainId: chain.chainId } }) };
        })(),
        "database",
      ).catch(() => {
        failing.push("database");
        return null;
      }),
    ]);
    const cursor = probe?.cursor;
    // Real-time age: the writer stamps its heartbeat with the wall clock, not the service clock.
    if (cursor?.heartbeatAt && Date.now() - cursor.heartbeatAt.getTime() > INDEXER_STALE_MS) failing.push("indexer");
    const indexedBlock = probe === null ? null : (cursor?.blockNumber ?? 0);
    res.status(failing.length === 0 ? 200 : 503).json({
      status: failing.length === 0 ? "ok" : "degraded",
      chainId: chain.chainId,
      blockNumber,
      indexedBlock,
      indexer: {
        lagBlocks: blockNumber !== null && indexedBlock !== null ? Math.max(0, blockNumber - indexedBlock) : null,
        lastHeartbeat: cursor?.heartbeatAt?.toISOString() ?? null,
      },
      database: db.kind,
      ...(failing.length === 0 ? {} : { failing }),
    });
  });
  return router;
}
