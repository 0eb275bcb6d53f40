import type { JsonRpcProvider } from "ethers";
import { Router } from "express";
import type { Database } from "../../core/db.js";

export interface HealthDeps {
  db: Pick<Database, "kind" | "ping" | "prisma">;
  chain: { provider: Pick<JsonRpcProvider, "getBlockNumber">; chainId: number };
}

const PROBE_TIMEOUT_MS = 2_000;

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
    const [blockNumber, indexedBlock] = await Promise.all([
      withTimeout(chain.provider.getBlockNumber(), "chain").catch(() => {
        failing.push("chain");
        return null;
      }),
      withTimeout(
        (async () => {
          await db.ping();
          const cursor = await db.prisma.indexerCursor.findUnique({ where: { chainId: chain.chainId } });
          return cursor?.blockNumber ?? 0;
        })(),
        "database",
      ).catch(() => {
        failing.push("database");
        return null;
      }),
    ]);
    res.status(failing.length === 0 ? 200 : 503).json({
      status: failing.length === 0 ? "ok" : "degraded",
      chainId: chain.chainId,
      blockNumber,
      indexedBlock,
      database: db.kind,
      ...(failing.length === 0 ? {} : { failing }),
    });
  });
  return router;
}
