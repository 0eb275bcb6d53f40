// `npm run api`: the HTTP API alone, for deployments that run the parts as separate
// processes against a shared PostgreSQL (DATABASE_URL) and chain (CHAIN_RPC_URL).
import { serveApi } from "../api/server.js";
import { bootClock, bootSharedChainAndDatabase, isExpectedStartError } from "../core/boot.js";
import { loadConfig } from "../core/config.js";
import { createLogger } from "../core/logger.js";
import { apiProcessServices } from "./api-services.js";
import { runUntilSignal } from "./lifecycle.js";

await runUntilSignal(
  "api",
  async (onStop) => {
    const config = loadConfig();
    const logger = createLogger(config.logLevel, "api");
    const { chain, deployment, db } = await bootSharedChainAndDatabase("api", config, logger, onStop);

    const clock = await bootClock(db, logger, onStop);
    const services = await apiProcessServices({ config, db, clock, logger, chain, deployment });
    onStop(() => services.stop());
    const { server } = await serveApi({ logger, clock, db, chain, config, services }, onStop);
    console.log(`ready: api=${server.url} rpc=${chain.rpcUrl} chainId=${chain.chainId} database=${db.kind}`);
  },
  isExpectedStartError,
);
