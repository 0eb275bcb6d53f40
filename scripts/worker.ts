// `npm run worker`: the background work alone (the job queue's runner and the periodic jobs'
// slots), for deployments that run the parts as separate processes against a shared PostgreSQL
// (DATABASE_URL); run as many as needed, the queue gives each job to one of them. `npm start`
// runs the same work in its process.
// With CHAIN_RPC_URL the worker also holds the pool's operator (the paying account), so the loan
// jobs (funding, due dates) run here too; without a chain they run only in `npm start`.
import { bootClock, bootDatabase, bootSharedChainAndDatabase, isExpectedStartError } from "../core/boot.js";
import { ConfigError, loadConfig } from "../core/config.js";
import { createLogger } from "../core/logger.js";
import { servicesFromConfig } from "../domain/services.js";
import { startPlatformWorkers } from "../worker/jobs.js";
import { runUntilSignal } from "./lifecycle.js";

await runUntilSignal(
  "worker",
  async (onStop) => {
    const config = loadConfig();
    if (!config.database.url) {
      throw new ConfigError("config: npm run worker needs DATABASE_URL (the embedded database lives inside npm start)");
    }
    const logger = createLogger(config.logLevel, "worker");
    const shared = config.chain.mode === "embedded" ? undefined : await bootSharedChainAndDatabase("worker", config, logger, onStop);
    const db = shared?.db ?? (await bootDatabase(config, logger));
    if (!shared) onStop(() => db.close());

    const clock = await bootClock(db, logger, onStop);
    // The worker only writes: no cached reads.
    const services = await servicesFromConfig(config, {
      db,
      clock,
      logger,
      processKind: "worker",
      cacheReads: false,
      chain: shared && { provider: shared.chain.provider, chainId: shared.chain.chainId, deployment: shared.deployment },
    });
    onStop(() => services.stop());
    if (!shared)
      logger.info(
        "no CHAIN_RPC_URL: the loan jobs (funding, due dates) run only where a process holds the chain (npm start, or a worker with CHAIN_RPC_URL)",
      );
    const workers = startPlatformWorkers({ services, clock, logger });
    onStop(() => workers.stop());
    console.log(`ready: worker jobs=${workers.jobs.join(",")} database=${db.kind}${shared ? ` rpc=${shared.chain.rpcUrl}` : ""}`);
  },
  isExpectedStartError,
);
