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
import type { DeployedContract } from "./deployments.js";
import type { Logger } from "./logger.js";

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
  /** Sent only when the role is not held yet: granted once, a role held is left. */
  ifMissing?: boolean;
}

/** The platform's contracts, in the order they are deployed. */
export function platformContracts({
  admin,
  treasury,
  usdc,
}: {
  admin: string;
  treasury: string;
  usdc?: string | undefined;
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
  ];
}

const VAULT = { contract: "stakingVault", source: "vault/StakingVault.sol", name: "StakingVault" };
const LOAN_BOOK = { contract: "loanBook", source: "lending/LoanBook.sol", name: "LoanBook" };
const ROUTER = { contract: "paymentRouter", source: "payments/PaymentRouter.sol", name: "PaymentRouter" };

/**
 * Roles (docs/contracts-lending.md): the loan book draws from the vault; the service's signer (the
 * deployer here) operates loans, distributes yield and may pause; then the payment roles.
 */
export function platformGrants(admin: string): RoleGrant[] {
  return [
    { ...VAULT, role: "LENDER_ROLE", to: (at) => at.loanBook!, what: "vault LENDER -> loanBook" },
    { ...VAULT, role: "YIELD_ROLE", to: () => admin, what: "vault YIELD -> service" },
    { ...VAULT, role: "PAUSER_ROLE", to: () => admin, what: "vault PAUSER -> service" },
    { ...LOAN_BOOK, role: "OPERATOR_ROLE", to: () => admin, what: "loanBook OPERATOR -> service" },
    ...paymentGrants(admin),
  ];
}

/**
 * The payment router funds payments on credit from the loan book (its OPERATOR_ROLE there), and
 * the service's signer pays them (the router's OPERATOR_ROLE). Also checked on a recorded deployment.
 */
export function paymentGrants(admin: string): RoleGrant[] {
  return [
    { ...LOAN_BOOK, role: "OPERATOR_ROLE", to: (at) => at.paymentRouter!, what: "loanBook OPERATOR -> paymentRouter", ifMissing: true },
    // Merchants' refunds settle the purchase loans through the router alone (D-89): the service's key never holds it.
    { ...LOAN_BOOK, role: "REFUNDER_ROLE", to: (at) => at.paymentRouter!, what: "loanBook REFUNDER -> paymentRouter", ifMissing: true },
    { ...ROUTER, role: "OPERATOR_ROLE", to: () => admin, what: "paymentRouter OPERATOR -> service", ifMissing: true },
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

/** Grants the roles one after the other, each awaited. */
export async function grantOneByOne(deployer: Signer, grants: RoleGrant[], at: Addresses, logger?: Logger): Promise<void> {
  for (const grant of grants) {
    const contract = contractOf(grant, at, deployer);
    const role = (await contract.getFunction(grant.role)()) as string;
    if (grant.ifMissing && ((await contract.getFunction("hasRole")(role, grant.to(at))) as boolean)) continue;
    await (await contract.getFunction("grantRole")(role, grant.to(at))).wait();
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

  // The roles' ids and, for the grants made once, whether they are held: one batch of calls.
  const roles = (await Promise.all(grants.map((grant) => contractOf(grant, at, provider).getFunction(grant.role)()))) as string[];
  const held = await Promise.all(
    grants.map((grant, i) =>
      grant.ifMissing ? (contractOf(grant, at, provider).getFunction("hasRole")(roles[i], grant.to(at)) as Promise<boolean>) : false,
    ),
  );
  const granting = grants.flatMap((grant, i) => (held[i] ? [] : [{ grant, role: roles[i]! }]));
  const raws: string[] = [];
  for (const { grant, role } of granting) {
    raws.push(
      await sign(at[grant.contract]!, contractOf(grant, at, provider).interface.encodeFunctionData("grantRole", [role, grant.to(at)])),
    );
  }
  await sendInOrder(provider, raws);
  for (const { grant } of granting) logger?.debug({ step: grant.what }, "wired");
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
