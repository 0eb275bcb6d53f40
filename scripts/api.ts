// `npm run api`: the HTTP API alone, for deployments that run the parts as separate
// processes against a shared PostgreSQL (DATABASE_URL) and chain (CHAIN_RPC_URL).
import { createApp } from "../api/app.js";
import { connectRedis } from "../api/http/rate-limit.js";
import { listen } from "../api/server.js";
import { bootClock, bootSharedChainAndDatabase, isExpectedStartError } from "../core/boot.js";
import { loadConfig } from "../core/config.js";
import { createLogger } from "../core/logger.js";
import { runUntilSignal } from "./lifecycle.js";

await runUntilSignal(
  "api",
  async (onStop) => {
    const config = loadConfig();
    const logger = createLogger(config.logLevel, "api");
    const { chain, db } = await bootSharedChainAndDatabase("api", config, logger, onStop);

    const redis = config.redisUrl ? connectRedis(config.redisUrl, logger) : undefined;
    // quit() refuses while the connection is still being made (no offline queue): then drop it.
    if (redis)
      onStop(() =>
        redis.quit().then(
          () => {},
          () => redis.disconnect(),
        ),
      );
    const clock = await bootClock(db, logger, onStop);
    const app = await createApp({ logger, clock, db, chain, config, redis });
    const server = await listen(app, config.http.host, config.http.port);
    onStop(() => server.close());
    console.log(`ready: api=${server.url} rpc=${chain.rpcUrl} chainId=${chain.chainId} database=${db.kind}`);
  },
  isExpectedStartError,
);
