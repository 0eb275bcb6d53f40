import type { Database } from "../../core/db.js";
import { createLogger } from "../../core/logger.js";
import { createIndexer, type Indexer } from "../../indexer/indexer.js";
import type { TestChain } from "./chain.js";
import { createTestDatabase } from "./database.js";

/** Every chain-derived table and its order; ChainBlock is left out (which blocks it keeps depends on batching). */
const MIRROR_TABLES: Record<string, string> = {
  ChainLog: `"blockNumber", "logIndex"`,
  VaultTransaction: `"blockNumber", "logIndex"`,
  YieldDistribution: `"blockNumber", "logIndex"`,
  UsdcTransfer: `"blockNumber", "logIndex"`,
  PaymentChainEvent: `"blockNumber", "logIndex"`,
  VaultPosition: `"owner"`,
  LoanChainState: `"loanId"`,
  SocialVaultState: `"address"`,
  SocialVaultGuardian: `"vault", "guardian"`,
  SocialVaultWithdrawal: `"vault", "requestId"`,
};

/** The mirror and the chain events of the outbox as plain JSON, for comparing two databases. */
export async function dumpMirror(db: Database): Promise<Record<string, unknown[]>> {
  const dump: Record<string, unknown[]> = {};
  for (const [table, order] of Object.entries(MIRROR_TABLES)) {
    const { rows } = await db.sql.query(`SELECT to_jsonb(t) AS row FROM "${table}" t ORDER BY ${order}`);
    dump[table] = rows.map((r) => r.row);
  }
  const { rows } = await db.sql.query(
    `SELECT jsonb_build_object('id', "id", 'type', "type", 'userId', "userId", 'data', "data", 'dedupeKey', "dedupeKey", 'createdAt', "createdAt", 'blockNumber', "blockNumber") AS row
       FROM "DomainEvent" WHERE "chainId" IS NOT NULL ORDER BY "dedupeKey"`,
  );
  dump.DomainEvent = rows.map((r) => r.row);
  return dump;
}

export function testIndexer(db: Database, chain: TestChain, overrides: { maxBlockRange?: number; confirmations?: number } = {}): Indexer {
  return createIndexer({
    db,
    rpcUrl: chain.rpcUrl,
    deployment: chain.deployment,
    logger: createLogger(process.env.TEST_LOG_LEVEL ?? "silent"),
    confirmations: overrides.confirmations ?? 0,
    pollMs: 20,
    maxBlockRange: overrides.maxBlockRange ?? 1_000,
  });
}

export async function waitFor<T>(probe: () => Promise<T | undefined | null | false>, timeoutMs = 15_000, what = "condition"): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Resolves once the database's cursor is at the chain's head block (number and hash). */
export async function waitForHead(db: Database, chain: TestChain, timeoutMs = 15_000): Promise<number> {
  return waitFor(
    async () => {
      const head = await chain.provider.getBlock("latest");
      const { rows } = await db.sql.query<{ blockNumber: number; blockHash: string }>(
        `SELECT "blockNumber", "blockHash" FROM "IndexerCursor" WHERE "chainId" = $1`,
        [chain.deployment.chainId],
      );
      return rows[0] && head && Number(rows[0].blockNumber) === head.number && rows[0].blockHash === head.hash ? head.number : undefined;
    },
    timeoutMs,
    "the indexer to reach the chain head",
  );
}

/** The mirror of the chain as it is now, written by a clean re-index into a fresh database. */
export async function cleanReindex(chain: TestChain, overrides: { maxBlockRange?: number } = {}): Promise<Record<string, unknown[]>> {
  const fresh = await createTestDatabase();
  const indexer = testIndexer(fresh, chain, overrides);
  try {
    indexer.start();
    await waitForHead(fresh, chain);
    return await dumpMirror(fresh);
  } finally {
    await indexer.stop();
    await fresh.destroy();
  }
}
