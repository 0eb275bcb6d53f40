import type { BootedChain } from "../core/boot.js";
import type { Clock } from "../core/clock.js";
import type { Config } from "../core/config.js";
import type { Database } from "../core/db.js";
import type { Deployment } from "../core/deployments.js";
import type { Logger } from "../core/logger.js";
import { type Services, servicesFromConfig } from "../domain/services.js";

/**
 * The domain services of a process that serves the API (`npm start`, `npm run api`): cached
 * reads, the deployment's wallets, and the transaction sender on the chain, whose transactions a
 * stopped process left in flight are broadcast again and settled before new work.
 */
export async function apiProcessServices(options: {
  config: Config;
  db: Database;
  clock: Pick<Clock, "now">;
  logger: Logger;
  chain: Pick<BootedChain, "provider" | "chainId">;
  deployment: Deployment;
  processKind?: string;
}): Promise<Services> {
  const { config, db, chain } = options;
  const services = await servicesFromConfig(config, {
    db,
    clock: options.clock,
    logger: options.logger,
    processKind: options.processKind ?? "api",
    cacheReads: true,
    chain: { provider: chain.provider, chainId: chain.chainId, deployment: options.deployment },
  });
  // What a stopped process left in flight: its transactions, then the users' requests in them.
  await services.relay?.reconcile();
  // Logs a warning at start when the paying account is already low.
  await services.payer?.status().catch(() => undefined);
  return services;
}
