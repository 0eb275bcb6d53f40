import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Contract, type JsonRpcProvider, NonceManager, Wallet } from "ethers";
import { loadArtifact } from "./artifacts.js";
import { ConfigError } from "./config.js";
import {
  type Addresses,
  type DeployedContract,
  deployAndWait,
  deployInBatches,
  grantOneByOne,
  platformContracts,
  platformGrants,
} from "./deploy-plan.js";
import type { Logger } from "./logger.js";
import { ROOT } from "./paths.js";

export { type Artifact, loadArtifact } from "./artifacts.js";

/** `deployments/`, or DEPLOYMENTS_DIR (tests keep their throw-away chains out of the developer's folder). */
export function deploymentsDir(): string {
  return process.env.DEPLOYMENTS_DIR ? path.resolve(process.env.DEPLOYMENTS_DIR) : path.join(ROOT, "deployments");
}

export type { DeployedContract };

/** `deployments/<chainId>.json`: where the platform lives on one chain. */
export interface Deployment {
  chainId: number;
  genesisHash: string;
  deployer: string;
  deployedAt: string;
  contracts: Record<string, DeployedContract>;
}

export function deploymentPath(chainId: number): string {
  return path.join(deploymentsDir(), `${chainId}.json`);
}

export function readDeployment(chainId: number): Deployment | undefined {
  const file = deploymentPath(chainId);
  return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Deployment) : undefined;
}

/**
 * A recorded deployment is reused only on the same chain (genesis), while its code is still there,
 * and when it has every contract this version deploys (one of an earlier version is deployed anew).
 */
async function isLive(provider: JsonRpcProvider, deployment: Deployment, genesisHash: string, keys: string[]): Promise<boolean> {
  if (deployment.genesisHash !== genesisHash) return false;
  if (keys.some((key) => !deployment.contracts[key])) return false;
  for (const contract of Object.values(deployment.contracts)) {
    if ((await provider.getCode(contract.address)) === "0x") return false;
  }
  return true;
}

export interface DeployOptions {
  provider: JsonRpcProvider;
  deployerPrivateKey: string;
  /** Real USDC on a testnet; MockUSDC is deployed when absent. */
  usdcAddress?: string | undefined;
  /**
   * Deploy even when a live deployment is recorded: a new development chain that mines each
   * transaction as it arrives (the embedded chain, the tests'), so the transactions go in batches.
   */
  fresh?: boolean;
  /** Where payment fees go (TREASURY_ADDRESS); the deployer's address when absent. */
  treasury?: string | undefined;
  /** The timelock's proposer and executor (ADMIN_ADDRESS); the deployer's address when absent. */
  admin?: string | undefined;
  /** The timelock's delay in seconds (ADMIN_TIMELOCK_DELAY); two days when absent. */
  timelockDelaySeconds?: number | undefined;
  /** Refuse to deploy without `admin` (production: the online key must not administer the pool). */
  requireAdmin?: boolean;
  logger?: Logger;
}

/** The timelock's delay when none is configured: two days, time for depositors to see a change and leave. */
export const DEFAULT_TIMELOCK_DELAY_SECONDS = 2 * 24 * 3600;

export async function ensureDeployment(options: DeployOptions): Promise<Deployment> {
  const { provider, logger } = options;
  const chainId = Number((await provider.getNetwork()).chainId);
  const genesis = await provider.getBlock(0);
  if (!genesis?.hash) throw new Error("deploy: the chain returned no genesis block");

  const wallet = new Wallet(options.deployerPrivateKey, provider);
  const deployer = new NonceManager(wallet);
  const treasury = options.treasury ?? wallet.address;
  const timelock = {
    admin: options.admin ?? wallet.address,
    delaySeconds: options.timelockDelaySeconds ?? DEFAULT_TIMELOCK_DELAY_SECONDS,
  };
  const steps = platformContracts({ admin: wallet.address, treasury, usdc: options.usdcAddress, timelock });
  const recorded = readDeployment(chainId);
  const keys = steps.map((step) => step.key);
  if (!options.fresh && recorded && (await isLive(provider, recorded, genesis.hash, keys))) {
    logger?.info({ chainId, file: deploymentPath(chainId) }, "using recorded deployment");
    await warnOfOtherTreasury(provider, recorded, treasury, logger);
    return recorded;
  }
  if (recorded && !options.fresh && recorded.genesisHash === genesis.hash) {
    logger?.warn({ chainId, file: deploymentPath(chainId) }, "recorded deployment is gone or of an earlier version: deploying anew");
  }
  if (options.requireAdmin && !options.admin) {
    throw new ConfigError(
      "config: NODE_ENV=production needs ADMIN_ADDRESS to deploy (the timelock's admin: a multisig, not the service's key)",
    );
  }
  if (!options.fresh && timelock.admin.toLowerCase() === wallet.address.toLowerCase()) {
    logger?.warn(
      { admin: timelock.admin },
      "the timelock's admin is the deployer's key: set ADMIN_ADDRESS to a multisig for anything but a development chain",
    );
  }

  const grants = platformGrants(wallet.address);
  let contracts: Record<string, DeployedContract> = {};
  if (options.fresh) {
    contracts = await deployInBatches(wallet, provider, { steps, grants, logger });
  } else {
    const at: Addresses = {};
    for (const step of steps) {
      contracts[step.key] = step.address ? { address: step.address, blockNumber: 0 } : await deployAndWait(deployer, step, at, logger);
      at[step.key] = contracts[step.key]!.address;
    }
    await grantOneByOne(deployer, grants, at, logger);
  }

  const deployment: Deployment = {
    chainId,
    genesisHash: genesis.hash,
    deployer: wallet.address,
    deployedAt: new Date().toISOString(),
    contracts,
  };
  mkdirSync(deploymentsDir(), { recursive: true });
  writeFileSync(deploymentPath(chainId), `${JSON.stringify(deployment, null, 2)}\n`);
  return deployment;
}

/**
 * The router's treasury is an admin setting: it changes through the timelock (`setFee`), never
 * from the online key. A TREASURY_ADDRESS that differs from it is reported, not applied.
 */
async function warnOfOtherTreasury(provider: JsonRpcProvider, recorded: Deployment, treasury: string, logger?: Logger): Promise<void> {
  const router = new Contract(
    recorded.contracts.paymentRouter!.address,
    loadArtifact("payments/PaymentRouter.sol", "PaymentRouter").abi as never,
    provider,
  );
  const current = (await router.getFunction("treasury")()) as string;
  if (current.toLowerCase() === treasury.toLowerCase()) return;
  logger?.warn(
    { treasury: current, configured: treasury, timelock: recorded.contracts.timelock!.address },
    "TREASURY_ADDRESS differs from the payment router's treasury: fees keep going to the router's until the timelock runs setFee",
  );
}
