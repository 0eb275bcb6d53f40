// What the relay lets a user's signed request call (domain/services-chain.ts relayAllowList):
// the platform contracts' user functions and a social vault's, nothing else. An attacker with a
// managed wallet cannot have the relay forward an operator's or an admin's function (grantRole,
// distributeYield, fund, setDailyFundingCap, ...), nor a social vault's functions at an address
// the factory did not create, nor anything of the USDC contract or the forwarder itself.
import { expect } from "chai";
import { Interface, ZeroAddress } from "ethers";
import { loadArtifact } from "../../core/deployments.js";
import { relayAllowList } from "../../domain/services-chain.js";
import { startTestChain, type TestChain } from "../helpers/chain.js";

/** Each platform contract: the user functions the relay lets through, and operator or admin ones it must not (in the ABI). */
const CONTRACTS: Record<string, { artifact: [string, string]; allowed: string[]; operators: string[] }> = {
  stakingVault: {
    artifact: ["vault/StakingVault.sol", "StakingVault"],
    allowed: ["depositWithPermit", "deposit", "redeem", "withdraw"],
    operators: ["distributeYield", "lend", "pause", "unpause", "grantRole", "setInterestRateModel", "releaseReserveSurplus"],
  },
  loanBook: {
    artifact: ["lending/LoanBook.sol", "LoanBook"],
    allowed: ["repayWithPermit", "repay"],
    operators: ["fundLoan", "fundLoanFor", "markDefaulted", "setDailyFundingCap", "grantRole"],
  },
  socialVaultFactory: {
    artifact: ["social/SocialVaultFactory.sol", "SocialVaultFactory"],
    allowed: ["createVault"],
    operators: ["moveVault"],
  },
  paymentRouter: {
    artifact: ["payments/PaymentRouter.sol", "PaymentRouter"],
    allowed: ["payWithPermit", "pay", "refundWithPermit", "refund"],
    operators: ["payWithLoans", "setFee", "grantRole"],
  },
};
const call = (iface: Interface, name: string) => `${iface.getFunction(name)!.selector}${"00".repeat(64)}`;
const functionsOf = (iface: Interface) =>
  iface.fragments.flatMap((fragment) => (fragment.type === "function" ? [fragment.format("sighash")] : []));

describe("the relay's allow-list", function () {
  this.timeout(60_000);
  let chain: TestChain;
  before(async () => {
    chain = await startTestChain();
  });
  after(async () => {
    await chain?.close();
  });

  it("lets through exactly the user functions of each platform contract, no operator's or admin's", async () => {
    const knownVault = "0x00000000000000000000000000000000000000aa";
    const isAllowed = relayAllowList(chain.deployment, async (address) => address === knownVault);
    for (const [key, { artifact, allowed, operators }] of Object.entries(CONTRACTS)) {
      const iface = new Interface(loadArtifact(...artifact).abi as never);
      const to = chain.deployment.contracts[key]!.address;
      const through: string[] = [];
      for (const signature of functionsOf(iface))
        if (await isAllowed(to, call(iface, signature))) through.push(iface.getFunction(signature)!.name);
      expect(through.sort(), key).to.deep.equal([...allowed].sort());
      // Not vacuous: the operator's and admin's functions are in the ABI, and refused.
      for (const name of operators) expect(await isAllowed(to, call(iface, name)), `${key}.${name}`).to.equal(false);
    }
  });

  it("refuses a social vault's functions at an address the factory did not create, and everything of USDC and the forwarder", async () => {
    const knownVault = "0x00000000000000000000000000000000000000aa";
    const isAllowed = relayAllowList(chain.deployment, async (address) => address === knownVault);
    const social = new Interface(loadArtifact("social/SocialVault.sol", "SocialVault").abi as never);
    expect(await isAllowed(knownVault, call(social, "approveWithdrawal"))).to.equal(true);
    expect(await isAllowed("0x00000000000000000000000000000000000000bb", call(social, "approveWithdrawal"))).to.equal(false);
    // The owner's admin of its own vault is a user function; the implementation's initializer is not.
    expect(await isAllowed(knownVault, call(social, "initialize"))).to.equal(false);
    for (const key of ["usdc", "forwarder"]) {
      const to = chain.deployment.contracts[key]!.address;
      const usdc = new Interface(loadArtifact("mocks/MockUSDC.sol", "MockUSDC").abi as never);
      for (const name of ["transfer", "approve", "transferFrom", "mint"])
        if (usdc.getFunction(name)) expect(await isAllowed(to, call(usdc, name)), `${key}.${name}`).to.equal(false);
    }
    expect(await isAllowed(ZeroAddress, "0x")).to.equal(false);
  });
});
