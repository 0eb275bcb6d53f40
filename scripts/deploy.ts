// `npm run deploy`: deploys the platform contracts to CHAIN_RPC_URL (a `npm run chain`
// node or a testnet) and writes deployments/<chainId>.json; a live recorded deployment is reused.

import { ChainUnavailableError, connectRpc } from "../core/chain.js";
import { ConfigError, loadConfig } from "../core/config.js";
import { deploymentPath, ensureDeployment } from "../core/deployments.js";
import { createLogger } from "../core/logger.js";

try {
  const config = loadConfig();
  if (config.chain.mode === "embedded")
    console.log(`deploy: CHAIN_RPC_URL not set; using ${config.chain.rpcUrl} (a \`npm run chain\` node)`);
  const logger = createLogger(config.logLevel);
  const { provider, chainId } = await connectRpc(config.chain.rpcUrl);
  await ensureDeployment({
    provider,
    deployerPrivateKey: config.chain.deployerPrivateKey,
    usdcAddress: config.chain.usdcAddress,
    treasury: config.chain.treasuryAddress,
    admin: config.chain.adminAddress,
    timelockDelaySeconds: config.chain.timelockDelaySeconds,
    requireAdmin: config.isProduction,
    logger,
  });
  provider.destroy();
  console.log(`deploy: chain ${chainId} contracts recorded in ${deploymentPath(chainId)}`);
} catch (error) {
  const expected = error instanceof ConfigError || error instanceof ChainUnavailableError;
  console.error(expected ? (error as Error).message : error);
  process.exit(1);
}
