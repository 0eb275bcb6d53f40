import { ensureChainIdentity } from "../../core/chain-identity.js";
import { createLogger } from "../../core/logger.js";
import type { Indexer } from "../../indexer/indexer.js";
import { startTestApi, type TestApi } from "./api.js";
import { startTestChain, type TestChain } from "./chain.js";
import { createTestDatabase, type TestDatabase } from "./database.js";
import { testIndexer } from "./mirror.js";

/** A chain, a migrated database, the indexer mirroring the chain into it, and the API on both. */
export interface MoneyStack {
  chain: TestChain;
  db: TestDatabase;
  indexer: Indexer;
  api: TestApi;
  /** Stops all four, the API first. */
  close(): Promise<void>;
}

/** Starts the stack the money tests run on (TEST_LOG_LEVEL shows the API's log). */
export async function startMoneyStack(): Promise<MoneyStack> {
  const chain = await startTestChain();
  const db = await createTestDatabase();
  await ensureChainIdentity(db, chain.deployment, { embedded: true, logger: createLogger("silent") });
  const indexer = testIndexer(db, chain);
  indexer.start();
  const api = await startTestApi({ chain, db, logger: createLogger(process.env.TEST_LOG_LEVEL ?? "silent") });
  return {
    chain,
    db,
    indexer,
    api,
    async close() {
      await api.close();
      await indexer.stop();
      await db.destroy();
      await chain.close();
    },
  };
}
