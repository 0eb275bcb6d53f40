// `npm run api`: the HTTP API alone, for deployments that run the parts as separate
// processes against a shared PostgreSQL (DATABASE_URL) and chain (CHAIN_RPC_URL).
import { createApp } from "../api/app.js";
import { connectRedis } from "../api/http/rate-limit.js";
import { listen } from "../api/server.js";
import { bootChain, bootDatabase, isExpectedStartError } from "../core/boot.js";
import { ensureChainIdentity } from "../core/chain-identity.js";
import { createClock } from "../core/clock.js";
import { ConfigError, loadConfig } from "../core/config.js";
import { deploymentPath, readDeployment } from "../core/deployments.js";
import { createLogger } from "../core/logger.js";
import { runUntilSignal } from "./lifecycle.js";

await runUntilSignal(
  "api",
  async (onStop) => {
    const config = loadConfig();
    if (config.chain.mode === "embedded" || !config.database.url) {
      throw new ConfigError(
        "config: npm run api needs CHAIN_RPC_URL and DATABASE_URL (the embedded chain and database live inside npm start)",
      );
    }
    const logger = createLogger(config.logLevel, "api");
    const chain = await bootChain(config, logger);
    onStop(() => chain.close());
    const deployment = readDeployment(chain.chainId);
    if (!deployment)
      throw new ConfigError(`config: ${deploymentPath(chain.chainId)} not found; run npm run deploy against CHAIN_RPC_URL first`);
    const db = await bootDatabase(config, logger);
    onStop(() => db.close());
    await ensureChainIdentity(db, deployment, { embedded: false, logger });

    const redis = config.redisUrl ? connectRedis(config.redisUrl) : undefined;
    if (redis) onStop(() => redis.quit().then(() => {}));
    const app = await createApp({ logger, clock: createClock(), db, chain, config, redis });
    const server = await listen(app, config.http.host, config.http.port);
    onStop(() => server.close());
    console.log(`ready: api=${server.url} rpc=${chain.rpcUrl} chainId=${chain.chainId} database=${db.kind}`);
  },
  isExpectedStartError,
);
