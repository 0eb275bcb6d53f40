import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Contract, ContractFactory, type JsonRpcProvider, NonceManager, Wallet } from "ethers";
import type { Logger } from "./logger.js";

/** `deployments/`, or DEPLOYMENTS_DIR (tests keep their throw-away chains out of the developer's folder). */
export function deploymentsDir(): string {
  return process.env.DEPLOYMENTS_DIR ? path.resolve(process.env.DEPLOYMENTS_DIR) : path.resolve(import.meta.dirname, "..", "deployments");
}
const ARTIFACTS_DIR = path.resolve(import.meta.dirname, "..", "artifacts", "contracts");

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

interface Artifact {
  abi: unknown[];
  bytecode: string;
}

export function loadArtifact(sourcePath: string, contractName: string): Artifact {
  const file = path.join(ARTIFACTS_DIR, sourcePath, `${contractName}.json`);
  if (!existsSync(file)) throw new Error(`deploy: artifact ${sourcePath}:${contractName} not found; run \`npm run build\``);
  return JSON.parse(readFileSync(file, "utf8")) as Artifact;
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
  /** Deploy even when a live deployment is recorded (the embedded chain is always new). */
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

  const contracts: Record<string, DeployedContract> = {};

  const deploy = (key: string, sourcePath: string, name: string, args: unknown[]) =>
    deployContract({ deployer, contracts, logger }, key, sourcePath, name, args);
  const send = (what: string, call: Promise<{ wait(): Promise<unknown> }>) => sendAndWait(logger, what, call);

  // The ERC-2771 forwarder first: the platform contracts fix the address they trust at construction, so the
  // managed wallets' signed requests, relayed through it, act as the wallets (contracts/metatx/TrustMintForwarder.sol).
  const forwarder = await (await deploy("forwarder", "metatx/TrustMintForwarder.sol", "TrustMintForwarder", [])).getAddress();

  if (options.usdcAddress) {
    contracts.usdc = { address: options.usdcAddress, blockNumber: 0 };
  } else {
    await deploy("usdc", "mocks/MockUSDC.sol", "MockUSDC", [wallet.address]);
  }

  const usdc = contracts.usdc!.address;
  const rateModel = await deploy("interestRateModel", "vault/InterestRateModel.sol", "InterestRateModel", [wallet.address]);
  const vault = await deploy("stakingVault", "vault/StakingVault.sol", "StakingVault", [
    usdc,
    await rateModel.getAddress(),
    wallet.address,
    forwarder,
  ]);
  const loanBook = await deploy("loanBook", "lending/LoanBook.sol", "LoanBook", [await vault.getAddress(), wallet.address, forwarder]);
  await deploy("socialVaultFactory", "social/SocialVaultFactory.sol", "SocialVaultFactory", [usdc, forwarder]);
  const router = await deploy("paymentRouter", "payments/PaymentRouter.sol", "PaymentRouter", [
    usdc,
    await loanBook.getAddress(),
    wallet.address,
    treasury,
    forwarder,
  ]);

  // Roles (docs/contracts-lending.md): the loan book draws from the vault; the service's
  // signer (the deployer here) operates loans, distributes yield and may pause.
  const vaultRole = async (name: string) => (await vault.getFunction(name)()) as string;
  await send("vault LENDER -> loanBook", vault.getFunction("grantRole")(await vaultRole("LENDER_ROLE"), await loanBook.getAddress()));
  await send("vault YIELD -> service", vault.getFunction("grantRole")(await vaultRole("YIELD_ROLE"), wallet.address));
  await send("vault PAUSER -> service", vault.getFunction("grantRole")(await vaultRole("PAUSER_ROLE"), wallet.address));
  const operatorRole = (await loanBook.getFunction("OPERATOR_ROLE")()) as string;
  await send("loanBook OPERATOR -> service", loanBook.getFunction("grantRole")(operatorRole, wallet.address));
  await grantPaymentRoles({ loanBook, router, operator: wallet.address, logger });

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

interface DeployContext {
  deployer: NonceManager;
  contracts: Record<string, DeployedContract>;
  logger?: Logger | undefined;
}

async function deployContract(context: DeployContext, key: string, sourcePath: string, name: string, args: unknown[]): Promise<Contract> {
  const artifact = loadArtifact(sourcePath, name);
  const factory = new ContractFactory(artifact.abi as never, artifact.bytecode, context.deployer);
  const contract = await factory.deploy(...args);
  const receipt = await contract.deploymentTransaction()?.wait();
  if (!receipt) throw new Error(`deploy: no receipt for ${name}`);
  const address = await contract.getAddress();
  context.contracts[key] = { address, blockNumber: receipt.blockNumber };
  context.logger?.info({ contract: name, address }, "deployed");
  return new Contract(address, artifact.abi as never, context.deployer);
}

async function sendAndWait(logger: Logger | undefined, what: string, call: Promise<{ wait(): Promise<unknown> }>) {
  await (await call).wait();
  logger?.debug({ step: what }, "wired");
}

/**
 * The payment router funds payments on credit from the loan book (its OPERATOR_ROLE there), and
 * the service's signer pays them (the router's OPERATOR_ROLE). Granted once: a role held is left.
 */
async function grantPaymentRoles({
  loanBook,
  router,
  operator,
  logger,
}: {
  loanBook: Contract;
  router: Contract;
  operator: string;
  logger?: Logger | undefined;
}) {
  const grant = async (contract: Contract, to: string, what: string) => {
    const role = (await contract.getFunction("OPERATOR_ROLE")()) as string;
    if (!((await contract.getFunction("hasRole")(role, to)) as boolean)) {
      await sendAndWait(logger, what, contract.getFunction("grantRole")(role, to));
    }
  };
  await grant(loanBook, await router.getAddress(), "loanBook OPERATOR -> paymentRouter");
  await grant(router, operator, "paymentRouter OPERATOR -> service");
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
  const usdc = contracts.usdc!.address;
  const forwarder = contracts.forwarder!.address;
  const admin = await deployer.getAddress();
  const loanBook = new Contract(contracts.loanBook!.address, loadArtifact("lending/LoanBook.sol", "LoanBook").abi as never, deployer);
  let router: Contract;
  if (contracts.paymentRouter) {
    router = new Contract(
      contracts.paymentRouter.address,
      loadArtifact("payments/PaymentRouter.sol", "PaymentRouter").abi as never,
      deployer,
    );
  } else {
    router = await deployContract({ deployer, contracts, logger }, "paymentRouter", "payments/PaymentRouter.sol", "PaymentRouter", [
      usdc,
      contracts.loanBook!.address,
      admin,
      treasury,
      forwarder,
    ]);
  }
  await grantPaymentRoles({ loanBook, router, operator: admin, logger });
  if (((await router.getFunction("treasury")()) as string).toLowerCase() !== treasury.toLowerCase()) {
    const fee = (await router.getFunction("feeBps")()) as bigint;
    await sendAndWait(logger, "paymentRouter treasury", router.getFunction("setFee")(fee, treasury));
    logger?.info({ treasury }, "payment fees go to the configured treasury");
  }
  if (Object.keys(contracts).length === Object.keys(recorded.contracts).length) return recorded;
  const upgraded = { ...recorded, contracts };
  writeFileSync(deploymentPath(recorded.chainId), `${JSON.stringify(upgraded, null, 2)}\n`);
  return upgraded;
}
