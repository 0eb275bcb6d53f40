import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Contract, type JsonRpcProvider, JsonRpcSigner } from "ethers";
import { connectRpc, type EmbeddedChain, startEmbeddedChain } from "../../core/chain.js";
import { type Deployment, ensureDeployment, loadArtifact } from "../../core/deployments.js";

// Throw-away chains of the tests write their deployments/<chainId>.json here, not into the repository.
process.env.DEPLOYMENTS_DIR ??= mkdtempSync(path.join(os.tmpdir(), "deployments-"));

/** Hardhat's first development account: the deployer of `ensureDeployment`. */
export const DEPLOYER_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

export const usdc = (amount: number | bigint) => BigInt(amount) * 1_000_000n;

export interface TestChain {
  rpcUrl: string;
  provider: JsonRpcProvider;
  embedded: EmbeddedChain;
  deployment: Deployment;
  contracts: { usdc: Contract; vault: Contract; loanBook: Contract; factory: Contract; router: Contract; forwarder: Contract };
  signer(index: number): Promise<JsonRpcSigner>;
  /** Contract `name` at `address`, connected to `runner`. */
  at(source: [string, string], address: string, runner: JsonRpcSigner): Contract;
  /** The platform's timelock as a signer (impersonated: a test skips its delay), for an admin call such as `unpause`. */
  asTimelock(): Promise<JsonRpcSigner>;
  snapshot(): Promise<string>;
  revert(id: string): Promise<void>;
  mine(blocks?: number): Promise<void>;
  setAutomine(on: boolean): Promise<void>;
  close(): Promise<void>;
}

/** What every test chain offers over its provider and deployment (contracts, signers, snapshots). */
export async function chainHandles(
  provider: JsonRpcProvider,
  deployment: Deployment,
): Promise<
  Pick<TestChain, "provider" | "deployment" | "contracts" | "signer" | "at" | "asTimelock" | "snapshot" | "revert" | "setAutomine">
> {
  // The contracts act as the deployer (account #0), as the fixtures expect.
  const deployer = await provider.getSigner(0);
  const connect = (key: string, file: string, name: string) =>
    new Contract(deployment.contracts[key]!.address, loadArtifact(file, name).abi as never, deployer);
  return {
    provider,
    deployment,
    contracts: {
      usdc: connect("usdc", "mocks/MockUSDC.sol", "MockUSDC"),
      vault: connect("stakingVault", "vault/StakingVault.sol", "StakingVault"),
      loanBook: connect("loanBook", "lending/LoanBook.sol", "LoanBook"),
      factory: connect("socialVaultFactory", "social/SocialVaultFactory.sol", "SocialVaultFactory"),
      router: connect("paymentRouter", "payments/PaymentRouter.sol", "PaymentRouter"),
      forwarder: connect("forwarder", "metatx/TrustMintForwarder.sol", "TrustMintForwarder"),
    },
    signer: (index) => provider.getSigner(index),
    at: ([file, name], address, runner) => new Contract(address, loadArtifact(file, name).abi as never, runner),
    asTimelock: async () => {
      const timelock = deployment.contracts.timelock!.address;
      await provider.send("hardhat_impersonateAccount", [timelock]);
      await provider.send("hardhat_setBalance", [timelock, "0xDE0B6B3A7640000"]);
      // Not one of the node's accounts, so not `getSigner`: the node signs for it while it is impersonated.
      return new JsonRpcSigner(provider, timelock);
    },
    snapshot: () => provider.send("evm_snapshot", []) as Promise<string>,
    revert: async (id) => {
      if (!(await provider.send("evm_revert", [id]))) throw new Error(`evm_revert ${id} failed`);
    },
    setAutomine: async (on) => {
      await provider.send("evm_setAutomine", [on]);
    },
  };
}

/** An embedded EDR chain on a free port with the platform deployed on it. */
export async function startTestChain(): Promise<TestChain> {
  const embedded = await startEmbeddedChain("127.0.0.1", 0);
  const { provider } = await connectRpc(embedded.rpcUrl);
  const deployment = await ensureDeployment({ provider, deployerPrivateKey: DEPLOYER_KEY, fresh: true });
  return {
    ...(await chainHandles(provider, deployment)),
    rpcUrl: embedded.rpcUrl,
    embedded,
    mine: async (blocks = 1) => {
      for (let i = 0; i < blocks; i += 1) await provider.send("evm_mine", []);
    },
    close: async () => {
      provider.destroy();
      await embedded.close();
    },
  };
}
