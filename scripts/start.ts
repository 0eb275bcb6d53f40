// `npm start`: the whole stack in one supervised process (embedded chain unless
// CHAIN_RPC_URL, PGlite unless DATABASE_URL, then migrations, API, workers).
import { setTimeout as sleep } from "node:timers/promises";
import { type HealthDeps, healthReport } from "../api/health/routes.js";
import { serveApi } from "../api/server.js";
import { bootChain, bootClock, bootDatabase, isExpectedStartError } from "../core/boot.js";
import { ensureChainIdentity } from "../core/chain-identity.js";
import { loadConfig } from "../core/config.js";
import { ensureDeployment } from "../core/deployments.js";
import { createLogger, type Logger } from "../core/logger.js";
import { CHAIN_DERIVED_TABLES } from "../domain/modules.js";
import { attachIndexer } from "../domain/transactions/read-your-writes.js";
import { createIndexer } from "../indexer/indexer.js";
import { startPlatformWorkers } from "../worker/jobs.js";
import { apiProcessServices } from "./api-services.js";
import { runUntilSignal, startSteps } from "./lifecycle.js";

const HEALTH_POLL_MS = 100;
/** How often a start that is not ready yet says what it waits for. */
const PROGRESS_EVERY_MS = 10_000;

/** Resolves once /health would answer 200; meanwhile says every 10 s what still fails. */
async function untilHealthy(deps: HealthDeps, logger: Logger): Promise<void> {
  let warnAt = Date.now() + PROGRESS_EVERY_MS;
  for (;;) {
    const { healthy, body } = await healthReport(deps);
    if (healthy) return;
    if (Date.now() >= warnAt) {
      logger.warn({ failing: body.failing }, "start: waiting for /health to pass before ready");
      warnAt += PROGRESS_EVERY_MS;
    }
    await sleep(HEALTH_POLL_MS);
  }
}

await runUntilSignal(
  "start",
  async (onStop) => {
    const config = loadConfig();
    const logger = createLogger(config.logLevel);
    const steps = startSteps(logger, PROGRESS_EVERY_MS);
    onStop(() => steps.done());

    // The chain, then the contracts, beside the database and its migrations (D-87): the embedded
    // chain starts in its own thread (about a second) while this one opens the database (mostly
    // WebAssembly). An external chain answers or fails within milliseconds: the database waits for
    // it, so a bad CHAIN_RPC_URL stops the start before DATA_DIR is touched.
    const booted = steps.track("the chain", bootChain(config, logger));
    const chainAndDeployment = booted.then(async (chain) => {
      onStop(() => chain.close());
      const deployment = await steps.track(
        "the contracts' deployment",
        ensureDeployment({
          provider: chain.provider,
          deployerPrivateKey: config.chain.deployerPrivateKey,
          usdcAddress: config.chain.usdcAddress,
          treasury: config.chain.treasuryAddress,
          admin: config.chain.adminAddress,
          timelockDelaySeconds: config.chain.timelockDelaySeconds,
          requireAdmin: config.isProduction,
          fresh: chain.embedded !== undefined,
          logger,
        }),
      );
      return { chain, deployment };
    });
    const database = (config.chain.mode === "embedded" ? Promise.resolve() : booted).then(() =>
      steps.track("the database and its migrations", bootDatabase(config, logger)),
    );
    // Closed once open, even when the chain fails meanwhile: PGlite cut off while it creates its
    // folder would leave the folder unusable.
    onStop(async () => (await database.catch(() => undefined))?.close());
    // The chain's failure is the one reported, as when the two ran one after the other.
    database.catch(() => {});
    const { chain, deployment } = await chainAndDeployment;
    const db = await database;
    await steps.track(
      "the chain identity check",
      ensureChainIdentity(db, deployment, { embedded: chain.embedded !== undefined, logger, chainTables: CHAIN_DERIVED_TABLES }),
    );
    // After the identity check: a new embedded chain resets the stored clock offset with it.
    const clock = await steps.track("the service clock", bootClock(db, logger, onStop));

    const indexer = createIndexer({
      db,
      rpcUrl: chain.rpcUrl,
      deployment,
      logger: logger.child({ component: "indexer" }),
      confirmations: config.chain.confirmations,
      pollMs: config.indexer.pollMs,
      maxBlockRange: config.indexer.maxBlockRange,
    });
    indexer.start();
    onStop(() => indexer.stop());

    // One set of services for the API and the jobs of this process: the API's caches see the jobs' writes.
    const services = await steps.track(
      "the API's services",
      apiProcessServices({ config, db, clock, logger, chain, deployment, processKind: "start" }),
    );
    onStop(() => services.stop());
    if (services.mirror) onStop(attachIndexer(services.mirror, indexer));
    const { server } = await steps.track("the HTTP server", serveApi({ logger, clock, db, chain, config, services }, onStop));
    const workers = startPlatformWorkers({ services, clock, logger });
    onStop(() => workers.stop());

    // `ready:` says what /health says: the indexer beside the API has written its heartbeat.
    steps.done(); // untilHealthy says what still fails
    await untilHealthy({ db, chain }, logger);
    // The figures of D-87: milliseconds since this process started, and its resident memory (worker threads included).
    const startupMs = Math.round(performance.now());
    const rssMb = Math.round(process.memoryUsage().rss / 2 ** 20);
    console.log(
      `ready: api=${server.url} rpc=${chain.rpcUrl} chainId=${chain.chainId} database=${db.kind} startup_ms=${startupMs} rss_mb=${rssMb}`,
    );
  },
  isExpectedStartError,
);
