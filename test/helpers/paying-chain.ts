import { Contract, type JsonRpcProvider, Wallet, ZeroAddress } from "ethers";
import { connectRpc, type EmbeddedChain, startEmbeddedChain } from "../../core/chain.js";
import { loadArtifact } from "../../core/deployments.js";
import { createTestDatabase, type TestDatabase } from "./database.js";

/** A bare embedded chain (no contracts), a test database, and a paying account of its own: what the money path's domain tests run on. */
export interface PayingChain {
  chain: EmbeddedChain;
  provider: JsonRpcProvider;
  chainId: number;
  db: TestDatabase;
  /** The paying account (`key`), given 100 ETH for gas. */
  account: Wallet;
  /** The forwarder's interface at no address: own calls never reach it. */
  forwarder: Contract;
  close(): Promise<void>;
}

export async function startPayingChain(key: string): Promise<PayingChain> {
  const chain = await startEmbeddedChain("127.0.0.1", 0);
  const { provider, chainId } = await connectRpc(chain.rpcUrl);
  const db = await createTestDatabase();
  const account = new Wallet(key, provider);
  await provider.send("hardhat_setBalance", [account.address, `0x${(100n * 10n ** 18n).toString(16)}`]);
  const forwarder = new Contract(ZeroAddress, loadArtifact("metatx/TrustMintForwarder.sol", "TrustMintForwarder").abi as never, provider);
  return {
    chain,
    provider,
    chainId,
    db,
    account,
    forwarder,
    async close() {
      provider.destroy();
      await chain.close();
      await db.destroy();
    },
  };
}
