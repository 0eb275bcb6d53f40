import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Contract, type JsonRpcProvider, NonceManager, Wallet } from "ethers";
import { loadArtifact } from "./artifacts.js";
import {
  type Addresses,
  deployAndWait,
  deployInBatches,
  grantOneByOne,
  paymentGrants,
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

export interface DeployedContract {
  address: string;
  blockNumber: number;
}

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

/** A recorded deployment is reused only on the same chain (genesis) and while its code is still there. */
async function isLive(provider: JsonRpcProvider, deployment: Deployment, genesisHash: string): Promise<boolean> {
  if (deployment.genesisHash !== genesisHash) return false;
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
  logger?: Logger;
}

export async function ensureDeployment(options: DeployOptions): Promise<Deployment> {
  const { provider, logger } = options;
  const chainId = Number((await provider.getNetwork()).chainId);
  const genesis = await provider.getBlock(0);
  if (!genesis?.hash) throw new Error("deploy: the chain returned no genesis block");

  const wallet = new Wallet(options.deployerPrivateKey, provider);
  const deployer = new NonceManager(wallet);
  const treasury = options.treasury ?? wallet.address;
  const recorded = readDeployment(chainId);
  if (!options.fresh && recorded && (await isLive(provider, recorded, genesis.hash))) {
    logger?.info({ chainId, file: deploymentPath(chainId) }, "using recorded deployment");
    return upgradeDeployment(recorded, { deployer, treasury, logger });
  }

  const steps = platformContracts({ admin: wallet.address, treasury, usdc: options.usdcAddress });
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
 * A recorded deployment brought up to this version: a contract later versions added (the payment
 * router) is deployed beside the others and recorded, and the router's treasury follows
 * TREASURY_ADDRESS. The contracts deployed before keep their addresses and their state.
 */
async function upgradeDeployment(
  recorded: Deployment,
  { deployer, treasury, logger }: { deployer: NonceManager; treasury: string; logger?: Logger | undefined },
): Promise<Deployment> {
  const contracts = { ...recorded.contracts };
  const admin = await deployer.getAddress();
  const at: Addresses = Object.fromEntries(Object.entries(contracts).map(([key, contract]) => [key, contract.address]));
  if (!contracts.paymentRouter) {
    const step = platformContracts({ admin, treasury }).find((candidate) => candidate.key === "paymentRouter")!;
    contracts.paymentRouter = await deployAndWait(deployer, step, at, logger);
    at.paymentRouter = contracts.paymentRouter.address;
  }
  await grantOneByOne(deployer, paymentGrants(admin), at, logger);
  const router = new Contract(at.paymentRouter!, loadArtifact("payments/PaymentRouter.sol", "PaymentRouter").abi as never, deployer);
  if (((await router.getFunction("treasury")()) as string).toLowerCase() !== treasury.toLowerCase()) {
    const fee = (await router.getFunction("feeBps")()) as bigint;
    await (await router.getFunction("setFee")(fee, treasury)).wait();
    logger?.debug({ step: "paymentRouter treasury" }, "wired");
    logger?.info({ treasury }, "payment fees go to the configured treasury");
  }
  if (Object.keys(contracts).length === Object.keys(recorded.contracts).length) return recorded;
  const upgraded = { ...recorded, contracts };
  writeFileSync(deploymentPath(recorded.chainId), `${JSON.stringify(upgraded, null, 2)}\n`);
  return upgraded;
}
