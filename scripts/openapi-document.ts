// The OpenAPI document the service serves at GET /v1/openapi.json, built by a throw-away
// instance of the service (an embedded chain with the platform deployed, an in-memory database,
// the development identity provider), so that what the client libraries are generated from is
// exactly what a running service answers.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createApp } from "../api/app.js";
import { listen } from "../api/server.js";
import { connectRpc, startEmbeddedChain } from "../core/chain.js";
import { ensureChainIdentity } from "../core/chain-identity.js";
import { createClock } from "../core/clock.js";
import { loadConfig } from "../core/config.js";
import { openDatabase } from "../core/db.js";
import { ensureDeployment } from "../core/deployments.js";
import { createLogger } from "../core/logger.js";
import { applyMigrations } from "../core/migrations.js";
import { CHAIN_DERIVED_TABLES } from "../domain/modules.js";
import { servicesFromConfig } from "../domain/services.js";

export async function openApiDocument(): Promise<unknown> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "openapi-"));
  // This instance's deployment file goes with it, not into deployments/.
  process.env.DEPLOYMENTS_DIR = dataDir;
  const logger = createLogger("silent");
  const chain = await startEmbeddedChain("127.0.0.1", 0);
  const { provider, chainId } = await connectRpc(chain.rpcUrl);
  const db = await openDatabase({ pgliteDataDir: "memory://" });
  try {
    const config = loadConfig({ NODE_ENV: "development", DATA_DIR: dataDir });
    const deployment = await ensureDeployment({ provider, deployerPrivateKey: config.chain.deployerPrivateKey, fresh: true });
    await applyMigrations(db.migrationAdapter());
    await ensureChainIdentity(db, deployment, { embedded: true, logger, chainTables: CHAIN_DERIVED_TABLES });
    const clock = createClock();
    const services = await servicesFromConfig(config, {
      db,
      clock,
      logger,
      processKind: "api",
      cacheReads: false,
      chain: { provider, chainId, deployment },
    });
    const app = await createApp({ logger, clock, db, chain: { provider, chainId }, config, services });
    const server = await listen(app, "127.0.0.1", 0);
    try {
      const response = await fetch(`${server.url}/v1/openapi.json`);
      if (!response.ok) throw new Error(`GET /v1/openapi.json answered ${response.status}`);
      return await response.json();
    } finally {
      services.notificationFeed.stop();
      await server.close();
      await services.stop();
    }
  } finally {
    provider.destroy();
    await db.close();
    await chain.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
