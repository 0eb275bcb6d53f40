// `npm run indexer`: the chain indexer alone, for deployments that run the parts as separate
// processes against a shared PostgreSQL (DATABASE_URL) and chain (CHAIN_RPC_URL). Several may
// run: one writes, the others stand by and take over when it stops.
import { bootChain, bootDatabase, isExpectedStartError } from "../core/boot.js";
import { ensureChainIdentity } from "../core/chain-identity.js";
import { ConfigError, loadConfig } from "../core/config.js";
import { deploymentPath, readDeployment } from "../core/deployments.js";
import { createLogger } from "../core/logger.js";
import { createIndexer } from "../indexer/indexer.js";
import { runUntilSignal } from "./lifecycle.js";

await runUntilSignal(
  "indexer",
  async (onStop) => {
    const config = loadConfig();
    if (config.chain.mode === "embedded" || !config.database.url) {
      throw new ConfigError(
        "config: npm run indexer needs CHAIN_RPC_URL and DATABASE_URL (the embedded chain and database live inside npm start)",
      );
    }
    const logger = createLogger(config.logLevel, "indexer");
    const chain = await bootChain(config, logger);
    onStop(() => chain.close());
    const deployment = readDeployment(chain.chainId);
    if (!deployment)
      throw new ConfigError(`config: ${deploymentPath(chain.chainId)} not found; run npm run deploy against CHAIN_RPC_URL first`);
    const db = await bootDatabase(config, logger);
    onStop(() => db.close());
    await ensureChainIdentity(db, deployment, { embedded: false, logger });

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
