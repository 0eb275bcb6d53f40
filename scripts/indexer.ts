// `npm run indexer`: the chain indexer alone, for deployments that run the parts as separate
// processes against a shared PostgreSQL (DATABASE_URL) and chain (CHAIN_RPC_URL). Several may
// run: one writes, the others stand by and take over when it stops.
import { bootSharedChainAndDatabase, isExpectedStartError } from "../core/boot.js";
import { loadConfig } from "../core/config.js";
import { createLogger } from "../core/logger.js";
import { createIndexer } from "../indexer/indexer.js";
import { runUntilSignal } from "./lifecycle.js";

await runUntilSignal(
  "indexer",
  async (onStop) => {
    const config = loadConfig();
    const logger = createLogger(config.logLevel, "indexer");
    const { chain, deployment, db } = await bootSharedChainAndDatabase("indexer", config, logger, onStop);

    const indexer = createIndexer({
      db,
      rpcUrl: chain.rpcUrl,
      deployment,
      logger,
      confirmations: config.chain.confirmations,
      pollMs: config.indexer.pollMs,
      maxBlockRange: config.indexer.maxBlockRange,
    });
    indexer.start();
    onStop(() => indexer.stop());
    console.log(`ready: indexer chainId=${chain.chainId} rpc=${chain.rpcUrl} database=${db.kind}`);
  },
  isExpectedStartError,
);
