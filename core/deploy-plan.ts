import {
  Contract,
  ContractFactory,
  getCreateAddress,
  type JsonRpcProvider,
  type Signer,
  type TransactionReceipt,
  type Wallet,
} from "ethers";
import { loadArtifact } from "./artifacts.js";
import type { Logger } from "./logger.js";

/** Where one contract was deployed. */
export interface DeployedContract {
  address: string;
  blockNumber: number;
}

// What the platform's deployment is (its contracts in order, the roles it grants), and the two
// ways of sending it: one transaction after the other, each awaited (any chain), or, on a new
// development chain that mines each transaction as it arrives, signed here and sent in a few
// round trips (D-87).

/** The addresses known so far, by deployment key (`stakingVault`...). */
export type Addresses = Record<string, string>;

export interface ContractStep {
  key: string;
  source: string;
  name: string;
  /** Its constructor's arguments, from the addresses of the contracts deployed before it. */
  args(at: Addresses): unknown[];
  /** Already on the chain (USDC_ADDRESS): recorded at block 0, not deployed. */
  address?: string;
}

export interface RoleGrant {
  what: string;
  /** The deployment key of the contract that grants, and its artifact. */
  contract: string;
  source: string;
  name: string;
  role: string;
  to(at: Addresses): string;
  /** The deployer gives the role up instead (`renounceRole`): its admin roles, once the timelock holds them. */
  renounce?: boolean;
}

/** The timelock that administers the platform (contracts/governance/PlatformTimelock.sol). */
export interface TimelockTerms {
  /** Its proposer, canceller and executor: a multisig in production, the deployer on a development chain. */
  admin: string;
  /** Seconds between scheduling a change and executing it. */
  delaySeconds: number;
}

/** The platform's contracts, in the order they are deployed. */
export function platformContracts({
  admin,
  treasury,
  usdc,
  timelock,
}: {
  /** The deployer: the admin until the grants hand each contract to the timelock. */
  admin: string;
  treasury: string;
  usdc?: string | undefined;
  timelock: TimelockTerms;
}): ContractStep[] {
  return [
    // The ERC-2771 forwarder first: the platform contracts fix the address they trust at construction, so the
    // managed wallets' signed requests, relayed through it, act as the wallets (contracts/metatx/TrustMintForwarder.sol).
    { key: "forwarder", source: "metatx/TrustMintForwarder.sol", name: "TrustMintForwarder", args: () => [] },
    { key: "usdc", source: "mocks/MockUSDC.sol", name: "MockUSDC", args: () => [admin], ...(usdc ? { address: usdc } : {}) },
    { key: "interestRateModel", source: "vault/InterestRateModel.sol", name: "InterestRateModel", args: () => [admin] },
    {
      key: "stakingVault",
      source: "vault/StakingVault.sol",
      name: "StakingVault",
      args: (at) => [at.usdc, at.interestRateModel, admin, at.forwarder],
    },
    { key: "loanBook", source: "lending/LoanBook.sol", name: "LoanBook", args: (at) => [at.stakingVault, admin, at.forwarder] },
    {
      key: "socialVaultFactory",
      source: "social/SocialVaultFactory.sol",
      name: "SocialVaultFactory",
      args: (at) => [at.usdc, at.forwarder],
    },
    {
      key: "paymentRouter",
      source: "payments/PaymentRouter.sol",
      name: "PaymentRouter",
      args: (at) => [at.usdc, at.loanBook, admin, treasury, at.forwarder],
    },
    {
      key: "timelock",
      source: "governance/PlatformTimelock.sol",
      name: "PlatformTimelock",
      args: () => [timelock.delaySeconds, timelock.admin],
    },
  ];
}

const MODEL = { contract: "interestRateModel", source: "vault/InterestRateModel.sol", name: "InterestRateModel" };
const VAULT = { contract: "stakingVault", source: "vault/StakingVault.sol", name: "StakingVault" };
const LOAN_BOOK = { contract: "loanBook", source: "lending/LoanBook.sol", name: "LoanBook" };
const ROUTER = { contract: "paymentRouter", source: "payments/PaymentRouter.sol", name: "PaymentRouter" };

/**
 * Roles (contracts/README.md): the loan book draws from the vault and the payment router from the
 * loan book; the service's online key (the deployer) only operates: it funds loans within the
 * book's limits, distributes yield, pauses, and pays purchases on credit. Then every contract's
 * admin role goes to the timelock and the deployer gives its own up, so no key the service holds
 * can change a parameter, grant a role or move the pool's idle USDC (D-100).
 */
export function platformGrants(deployer: string): RoleGrant[] {
  const toTimelock = (contract: typeof VAULT): RoleGrant[] => [
    { ...contract, role: "DEFAULT_ADMIN_ROLE", to: (at) => at.timelock!, what: `${contract.contract} admin -> timelock` },
    {
      ...contract,
      role: "DEFAULT_ADMIN_ROLE",
      to: () => deployer,
      renounce: true,
      what: `${contract.contract} admin renounced by the deployer`,
    },
  ];
  return [
    { ...VAULT, role: "LENDER_ROLE", to: (at) => at.loanBook!, what: "vault LENDER -> loanBook" },
    { ...VAULT, role: "YIELD_ROLE", to: () => deployer, what: "vault YIELD -> service" },
    { ...VAULT, role: "PAUSER_ROLE", to: () => deployer, what: "vault PAUSER -> service" },
    { ...LOAN_BOOK, role: "OPERATOR_ROLE", to: () => deployer, what: "loanBook OPERATOR -> service" },
    { ...LOAN_BOOK, role: "OPERATOR_ROLE", to: (at) => at.paymentRouter!, what: "loanBook OPERATOR -> paymentRouter" },
    // Merchants' refunds settle the purchase loans through the router alone (D-89): the service's key never holds it.
    { ...LOAN_BOOK, role: "REFUNDER_ROLE", to: (at) => at.paymentRouter!, what: "loanBook REFUNDER -> paymentRouter" },
    { ...ROUTER, role: "OPERATOR_ROLE", to: () => deployer, what: "paymentRouter OPERATOR -> service" },
    ...[MODEL, VAULT, LOAN_BOOK, ROUTER].flatMap(toTimelock),
  ];
}

const abis = new Map<string, unknown[]>();
const contractOf = (grant: RoleGrant, at: Addresses, runner: Signer | JsonRpcProvider) => {
  const key = `${grant.source}:${grant.name}`;
  if (!abis.has(key)) abis.set(key, loadArtifact(grant.source, grant.name).abi);
  return new Contract(at[grant.contract]!, abis.get(key) as never, runner);
};

/** Deploys one contract and waits for its receipt. */
export async function deployAndWait(deployer: Signer, step: ContractStep, at: Addresses, logger?: Logger): Promise<DeployedContract> {
  const artifact = loadArtifact(step.source, step.name);
  const contract = await new ContractFactory(artifact.abi as never, artifact.bytecode, deployer).deploy(...step.args(at));
  const receipt = await contract.deploymentTransaction()?.wait();
  if (!receipt) throw new Error(`deploy: no receipt for ${step.name}`);
  const address = await contract.getAddress();
  logger?.info({ contract: step.name, address }, "deployed");
  return { address, blockNumber: receipt.blockNumber };
}

const callOf = (grant: RoleGrant) => (grant.renounce ? "renounceRole" : "grantRole");

/** Grants the roles one after the other, each awaited. */
export async function grantOneByOne(deployer: Signer, grants: RoleGrant[], at: Addresses, logger?: Logger): Promise<void> {
  for (const grant of grants) {
    const contract = contractOf(grant, at, deployer);
    const role = (await contract.getFunction(grant.role)()) as string;
    await (await contract.getFunction(callOf(grant))(role, grant.to(at))).wait();
    logger?.debug({ step: grant.what }, "wired");
  }
}

/** A gas limit every deployment and grant stays under (EIP-7825 caps a transaction at 2^24). */
const GAS_LIMIT = 15_000_000n;

/**
 * The whole deployment on a new development chain that mines each transaction as it arrives (the
 * embedded EDR chain): every transaction signed here with the next nonce, a contract's address
 * known before it is sent (CREATE: the deployer and the nonce), so nothing waits for a receipt
 * before the next one is sent. Seven round trips instead of about a hundred (estimates, fee data,
 * receipts per transaction); the same transactions, blocks and addresses as one by one.
 */
export async function deployInBatches(
  wallet: Wallet,
  provider: JsonRpcProvider,
  { steps, grants, logger }: { steps: ContractStep[]; grants: RoleGrant[]; logger?: Logger | undefined },
): Promise<Record<string, DeployedContract>> {
  const admin = wallet.address;
  const [network, firstNonce, fees] = await Promise.all([
    provider.getNetwork(),
    provider.getTransactionCount(admin, "pending"),
    provider.getFeeData(),
  ]);
  let nonce = firstNonce;
  // One fee quote for all: a block's base fee only falls while blocks are under half full, as these are.
  const sign = (to: string | null, data: string) =>
    wallet.signTransaction({
      type: 2,
      chainId: network.chainId,
      nonce: nonce++,
      to,
      data,
      gasLimit: GAS_LIMIT,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
    });

  const at: Addresses = {};
  const sent: { step: ContractStep; raw: string }[] = [];
  for (const step of steps) {
    if (step.address) {
      at[step.key] = step.address;
      continue;
    }
    const artifact = loadArtifact(step.source, step.name);
    const { data } = await new ContractFactory(artifact.abi as never, artifact.bytecode).getDeployTransaction(...step.args(at));
    at[step.key] = getCreateAddress({ from: admin, nonce });
    sent.push({ step, raw: await sign(null, data) });
  }
  const receipts = await sendInOrder(
    provider,
    sent.map(({ raw }) => raw),
  );
  const contracts: Record<string, DeployedContract> = {};
  for (const step of steps) {
    const index = sent.findIndex((entry) => entry.step === step);
    contracts[step.key] = { address: at[step.key]!, blockNumber: index === -1 ? 0 : receipts[index]!.blockNumber };
    if (index !== -1) logger?.info({ contract: step.name, address: at[step.key] }, "deployed");
  }

  // The roles' ids: one batch of calls.
  const roles = (await Promise.all(grants.map((grant) => contractOf(grant, at, provider).getFunction(grant.role)()))) as string[];
  const raws: string[] = [];
  for (const [i, grant] of grants.entries()) {
    const data = contractOf(grant, at, provider).interface.encodeFunctionData(callOf(grant), [roles[i], grant.to(at)]);
    raws.push(await sign(at[grant.contract]!, data));
  }
  await sendInOrder(provider, raws);
  for (const grant of grants) logger?.debug({ step: grant.what }, "wired");
  return contracts;
}

/** Sends signed transactions in order (each mined as it arrives), then reads their receipts in one batch. */
async function sendInOrder(provider: JsonRpcProvider, raws: string[]): Promise<TransactionReceipt[]> {
  const hashes: string[] = [];
  for (const raw of raws) hashes.push((await provider.send("eth_sendRawTransaction", [raw])) as string);
  const receipts = await Promise.all(hashes.map((hash) => provider.getTransactionReceipt(hash)));
  return receipts.map((receipt, i) => {
    if (receipt?.status !== 1) throw new Error(`deploy: transaction ${hashes[i]} ${receipt ? "reverted" : "was not mined"}`);
    return receipt;
  });
}
