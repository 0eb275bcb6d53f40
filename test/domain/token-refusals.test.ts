// A token's refusal of a transfer, read the same whichever way the token says it (failures.ts
// `tokenRefusal`): the test USDC's custom errors (OpenZeppelin 5), and the reason strings of
// Circle's USDC, which a deployment with USDC_ADDRESS meets (StringRevertUSDC refuses with them).
// The relay asks a permit where the allowance falls short, and a short balance is
// INSUFFICIENT_BALANCE, for both. Real reverts, decoded as the relay decodes them.
import { expect } from "chai";
import { type Contract, ContractFactory, type JsonRpcProvider, Wallet } from "ethers";
import { loadArtifact } from "../../core/artifacts.js";
import { connectRpc, type EmbeddedChain, startEmbeddedChain } from "../../core/chain.js";
import { platformErrors } from "../../core/platform-abi.js";
import { needsAllowance } from "../../domain/transactions/calls.js";
import { decodeRevert, type TransactionRevertedError, tokenRefusal } from "../../domain/transactions/failures.js";

/** Hardhat's development accounts #1 and #2 (funded with ETH on every development chain). */
const HOLDER_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const SPENDER_KEY = "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9bc6f2dd8b5a9";
const RECEIVER = "0x000000000000000000000000000000000000bEEF";
const HOLDER = new Wallet(HOLDER_KEY).address;

describe("a token's refusals, custom errors or Circle's reason strings", function () {
  this.timeout(60_000);
  let chain: EmbeddedChain;
  let provider: JsonRpcProvider;
  let holder: Wallet;
  let spender: Wallet;

  before(async () => {
    chain = await startEmbeddedChain("127.0.0.1", 0);
    ({ provider } = await connectRpc(chain.rpcUrl));
    holder = new Wallet(HOLDER_KEY, provider);
    spender = new Wallet(SPENDER_KEY, provider);
  });
  after(async () => {
    provider?.destroy();
    await chain?.close();
  });

  async function deploy(source: string, name: string, args: unknown[]): Promise<Contract> {
    const { abi, bytecode } = loadArtifact(source, name);
    const contract = await new ContractFactory(abi as never, bytecode, holder).deploy(...args);
    await contract.waitForDeployment();
    return contract as Contract;
  }

  /** The refusal of the spender's transferFrom of 10 USDC out of the holder's, as the relay's simulation decodes it. */
  async function refusalOf(token: Contract): Promise<TransactionRevertedError> {
    const data = token.interface.encodeFunctionData("transferFrom", [holder.address, RECEIVER, 10_000_000n]);
    const error = await provider.estimateGas({ from: spender.address, to: token.target as string, data }).then(
      () => null,
      (failure) => decodeRevert(platformErrors(), failure),
    );
    expect(error, "the transfer is refused").to.not.equal(null);
    return error!;
  }

  for (const [label, source, name, args] of [
    ["the test USDC (custom errors)", "mocks/MockUSDC.sol", "MockUSDC", [HOLDER]],
    ["a token refusing as Circle's USDC does (reason strings)", "mocks/StringRevertUSDC.sol", "StringRevertUSDC", []],
  ] as const) {
    it(`${label}: a short allowance asks a permit, a short balance is the wallet's`, async () => {
      const token = await deploy(source, name, [...args]);
      await (await token.getFunction("mint")(holder.address, 5_000_000n)).wait();
      const pulls = { spender: spender.address, value: 10_000_000n };

      const noAllowance = await refusalOf(token);
      expect(tokenRefusal(noAllowance.revert)).to.equal("allowance");
      expect(needsAllowance({ pulls }, noAllowance)).to.equal(true);
      expect(needsAllowance({}, noAllowance), "a call that pulls nothing asks no permit").to.equal(false);

      await (await (token.connect(holder) as Contract).getFunction("approve")(spender.address, 10_000_000n)).wait();
      const noBalance = await refusalOf(token);
      expect(tokenRefusal(noBalance.revert)).to.equal("balance");
      expect(needsAllowance({ pulls }, noBalance)).to.equal(false);
    });
  }

  it("reads no other revert as the token's", () => {
    expect(tokenRefusal({ name: "Error", args: ["FiatTokenV2: invalid signature"] })).to.equal(null);
    expect(tokenRefusal({ name: "StakingVaultInsufficientLiquidity", args: [1n, 0n] })).to.equal(null);
    expect(tokenRefusal(null)).to.equal(null);
  });
});
