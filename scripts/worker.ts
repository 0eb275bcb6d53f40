// `npm run worker`: the periodic jobs alone, for deployments that run the parts as separate
// processes against a shared PostgreSQL (DATABASE_URL). `npm start` runs the same jobs in its process.
import { bootClock, bootDatabase, isExpectedStartError } from "../core/boot.js";
import { ConfigError, loadConfig } from "../core/config.js";
import { createLogger } from "../core/logger.js";
import { managedWalletsFor } from "../core/wallets.js";
import { createServices } from "../domain/services.js";
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
    const db = await bootDatabase(config, logger);
    onStop(() => db.close());

    const clock = await bootClock(db, logger, onStop);
    // The worker only writes: no cached reads.
    const services = createServices({ db, clock, wallets: await managedWalletsFor(config, db), cacheReads: false, logger });
    const workers = startPlatformWorkers({ services, clock, logger });
    onStop(() => workers.stop());
    console.log(`ready: worker jobs=${workers.jobs.join(",")} database=${db.kind}`);
  },
  isExpectedStartError,
);
