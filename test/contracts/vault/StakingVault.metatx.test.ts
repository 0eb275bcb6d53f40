// The staking vault under ERC-2771 forwarding and EIP-2612 permits: a managed wallet without ETH signs, a relayer
// pays, and the vault sees the wallet as the actor (same paths, same events as a direct call).
import { expect } from "chai";
import type { ContractTransactionResponse } from "ethers";
import { network } from "hardhat";
import { USDC } from "../lending/lending-fixture.js";
import { deployPlatform, forwarderAccount, inSeconds, signPermit, signRequest } from "../metatx/metatx-helpers.js";

const { ethers, networkHelpers } = await network.create();

const VIRTUAL_SHARES = 10n ** 12n;
const SHARES = (usdc: bigint) => usdc * VIRTUAL_SHARES; // 1 USDC = 1 tmUSDC (18 decimals) in a fresh vault

/** The platform, plus `carol`: a Hardhat account with ETH and 10,000 USDC that has approved nothing. */
async function platform() {
  const f = await deployPlatform(ethers);
  const carol = (await ethers.getSigners())[10]!;
  await f.usdc.mint(carol.address, USDC(10_000));
  return { ...f, carol };
}
const load = () => networkHelpers.loadFixture(platform);
type Platform = Awaited<ReturnType<typeof platform>>;

/** The logs `address` emitted in the transaction, as raw topics and data. */
async function logsOf(tx: Promise<ContractTransactionResponse>, address: string) {
  const receipt = await (await tx).wait();
  return receipt!.logs.filter((log) => log.address === address).map((log) => ({ topics: log.topics, data: log.data }));
}

/** `signer` deposits `assets` for `receiver` with a permit, through the forwarder, relayed by the relayer. */
async function forwardedDepositWithPermit(f: Platform, signer: Platform["user"] | Platform["alice"], assets: bigint, receiver?: string) {
  const owner = await signer.getAddress();
  const permit = await signPermit(f.usdc, signer, f.vault, assets);
  const data = f.vault.interface.encodeFunctionData("depositWithPermit", [
    assets,
    receiver ?? owner,
    permit.deadline,
    permit.v,
    permit.r,
    permit.s,
  ]);
  return f.forwarder.connect(f.relayer).execute(await signRequest(f.forwarder, signer, f.vault, data));
}

describe("StakingVault meta-transactions", () => {
  describe("depositWithPermit", () => {
    it("deposits on a direct call with a permit and no prior allowance, and emits Deposit", async () => {
      const { usdc, vault, carol } = await load();
      const { deadline, v, r, s } = await signPermit(usdc, carol, vault, USDC(100));
      await expect(vault.connect(carol).depositWithPermit(USDC(100), carol.address, deadline, v, r, s))
        .to.emit(vault, "Deposit")
        .withArgs(carol.address, carol.address, USDC(100), SHARES(USDC(100)))
        .and.to.emit(usdc, "Approval")
        .withArgs(carol.address, await vault.getAddress(), USDC(100));
      expect(await vault.balanceOf(carol.address)).to.equal(SHARES(USDC(100)));
      expect(await usdc.allowance(carol.address, await vault.getAddress())).to.equal(0n);
      expect(await usdc.nonces(carol.address)).to.equal(1n);
    });

    it("lets a wallet without ETH deposit through the forwarder: Deposit(sender = owner = the wallet)", async () => {
      const f = await load();
      await expect(forwardedDepositWithPermit(f, f.user, USDC(250)))
        .to.emit(f.vault, "Deposit")
        .withArgs(f.user.address, f.user.address, USDC(250), SHARES(USDC(250)))
        .and.to.emit(f.usdc, "Transfer")
        .withArgs(f.user.address, await f.vault.getAddress(), USDC(250));
      expect(await f.vault.balanceOf(f.user.address)).to.equal(SHARES(USDC(250)));
      expect(await f.usdc.balanceOf(f.user.address)).to.equal(USDC(10_000 - 250));
      expect(await ethers.provider.getBalance(f.user.address)).to.equal(0n);
    });

    it("emits exactly the vault events of a direct deposit when forwarded", async () => {
      const f = await load();
      const vaultAddress = await f.vault.getAddress();
      const direct = await logsOf(f.vault.connect(f.alice).deposit(USDC(100), f.alice.address), vaultAddress);

      const again = await load(); // the same state, before the direct deposit
      const forwarded = await logsOf(forwardedDepositWithPermit(again, again.alice, USDC(100)), vaultAddress);

      expect(direct).to.have.length(2); // the share mint's Transfer and Deposit
      expect(forwarded).to.deep.equal(direct);
    });

    it("credits another receiver: Deposit(sender = the signer, owner = the receiver)", async () => {
      const f = await load();
      await expect(forwardedDepositWithPermit(f, f.user, USDC(10), f.other.address))
        .to.emit(f.vault, "Deposit")
        .withArgs(f.user.address, f.other.address, USDC(10), SHARES(USDC(10)));
      expect(await f.vault.balanceOf(f.other.address)).to.equal(SHARES(USDC(10)));
    });

    it("still deposits when someone submitted the permit first (front-running)", async () => {
      const f = await load();
      const permit = await signPermit(f.usdc, f.user, f.vault, USDC(100));
      // Anyone watching the mempool can submit the permit itself; that only sets the allowance.
      await f.usdc
        .connect(f.stranger)
        .permit(f.user.address, await f.vault.getAddress(), USDC(100), permit.deadline, permit.v, permit.r, permit.s);
      const data = f.vault.interface.encodeFunctionData("depositWithPermit", [
        USDC(100),
        f.user.address,
        permit.deadline,
        permit.v,
        permit.r,
        permit.s,
      ]);
      await expect(f.forwarder.connect(f.relayer).execute(await signRequest(f.forwarder, f.user, f.vault, data)))
        .to.emit(f.vault, "Deposit")
        .withArgs(f.user.address, f.user.address, USDC(100), SHARES(USDC(100)));
    });

    it("reverts when the permit is someone else's: it serves only its signer, and the caller has no allowance", async () => {
      const { usdc, vault, user, carol } = await load();
      const { deadline, v, r, s } = await signPermit(usdc, user, vault, USDC(100));
      await expect(vault.connect(carol).depositWithPermit(USDC(100), carol.address, deadline, v, r, s))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientAllowance")
        .withArgs(await vault.getAddress(), 0n, USDC(100));
      expect(await usdc.nonces(user.address)).to.equal(0n);
      expect(await usdc.balanceOf(user.address)).to.equal(USDC(10_000));
    });

    it("reverts when the permit has expired and there is no allowance", async () => {
      const { usdc, vault, carol } = await load();
      const { deadline, v, r, s } = await signPermit(usdc, carol, vault, USDC(100), { deadline: await inSeconds(ethers, -1) });
      await expect(vault.connect(carol).depositWithPermit(USDC(100), carol.address, deadline, v, r, s))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientAllowance")
        .withArgs(await vault.getAddress(), 0n, USDC(100));
    });

    it("reverts when the permit's nonce was already used and its allowance spent", async () => {
      const { usdc, vault, carol } = await load();
      const { deadline, v, r, s } = await signPermit(usdc, carol, vault, USDC(100));
      await vault.connect(carol).depositWithPermit(USDC(100), carol.address, deadline, v, r, s);
      await expect(vault.connect(carol).depositWithPermit(USDC(100), carol.address, deadline, v, r, s))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientAllowance")
        .withArgs(await vault.getAddress(), 0n, USDC(100));
    });

    it("reverts when the permit is for a smaller value than the deposit", async () => {
      const { usdc, vault, carol } = await load();
      // The vault asks the token for a permit of `assets`: a signature over 50 does not verify for 100.
      const { deadline, v, r, s } = await signPermit(usdc, carol, vault, USDC(50));
      await expect(vault.connect(carol).depositWithPermit(USDC(100), carol.address, deadline, v, r, s))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientAllowance")
        .withArgs(await vault.getAddress(), 0n, USDC(100));
    });

    it("reverts while paused (EnforcedPause) and below the minimum deposit (StakingVaultDepositTooSmall)", async () => {
      const { usdc, vault, carol, pauser } = await load();
      const small = await signPermit(usdc, carol, vault, USDC(1) - 1n);
      await expect(vault.connect(carol).depositWithPermit(USDC(1) - 1n, carol.address, small.deadline, small.v, small.r, small.s))
        .to.be.revertedWithCustomError(vault, "StakingVaultDepositTooSmall")
        .withArgs(USDC(1) - 1n, USDC(1));
      await vault.connect(pauser).pause();
      const permit = await signPermit(usdc, carol, vault, USDC(100));
      await expect(
        vault.connect(carol).depositWithPermit(USDC(100), carol.address, permit.deadline, permit.v, permit.r, permit.s),
      ).to.be.revertedWithCustomError(vault, "EnforcedPause");
    });
  });

  describe("forwarded calls", () => {
    /** The user holds 1,000 USDC worth of tmUSDC, deposited through the forwarder. */
    async function withShares() {
      const f = await load();
      await forwardedDepositWithPermit(f, f.user, USDC(1_000));
      return f;
    }

    it("redeem acts for the signer: Withdraw(sender = receiver = owner = the wallet)", async () => {
      const f = await withShares();
      const shares = SHARES(USDC(400));
      const data = f.vault.interface.encodeFunctionData("redeem", [shares, f.user.address, f.user.address]);
      await expect(f.forwarder.connect(f.relayer).execute(await signRequest(f.forwarder, f.user, f.vault, data)))
        .to.emit(f.vault, "Withdraw")
        .withArgs(f.user.address, f.user.address, f.user.address, USDC(400), shares);
      expect(await f.vault.balanceOf(f.user.address)).to.equal(SHARES(USDC(600)));
      expect(await f.usdc.balanceOf(f.user.address)).to.equal(USDC(10_000 - 600));
      expect(await ethers.provider.getBalance(f.user.address)).to.equal(0n);
    });

    it("withdraw acts for the signer and pays the receiver it names", async () => {
      const f = await withShares();
      const data = f.vault.interface.encodeFunctionData("withdraw", [USDC(300), f.other.address, f.user.address]);
      await expect(f.forwarder.connect(f.relayer).execute(await signRequest(f.forwarder, f.user, f.vault, data)))
        .to.emit(f.vault, "Withdraw")
        .withArgs(f.user.address, f.other.address, f.user.address, USDC(300), SHARES(USDC(300)));
      expect(await f.usdc.balanceOf(f.other.address)).to.equal(USDC(300));
    });

    it("tmUSDC transfers act for the signer", async () => {
      const f = await withShares();
      const data = f.vault.interface.encodeFunctionData("transfer", [f.other.address, SHARES(USDC(5))]);
      await expect(f.forwarder.connect(f.relayer).execute(await signRequest(f.forwarder, f.user, f.vault, data)))
        .to.emit(f.vault, "Transfer")
        .withArgs(f.user.address, f.other.address, SHARES(USDC(5)));
    });

    it("reverts when the signer redeems another holder's shares without an allowance", async () => {
      const f = await withShares();
      await f.vault.connect(f.alice).deposit(USDC(100), f.alice.address);
      const data = f.vault.interface.encodeFunctionData("redeem", [SHARES(USDC(100)), f.user.address, f.alice.address]);
      const asForwarder = await forwarderAccount(ethers, networkHelpers, f.forwarder);
      await expect(asForwarder.call(f.vault, data, f.user.address))
        .to.be.revertedWithCustomError(f.vault, "ERC20InsufficientAllowance")
        .withArgs(f.user.address, 0n, SHARES(USDC(100)));
      await expect(
        f.forwarder.connect(f.relayer).execute(await signRequest(f.forwarder, f.user, f.vault, data)),
      ).to.be.revertedWithCustomError(f.forwarder, "FailedCall");
    });

    it("checks roles against the signer: refused for a user, allowed for the admin's own signature", async () => {
      const f = await load();
      const asForwarder = await forwarderAccount(ethers, networkHelpers, f.forwarder);
      await expect(asForwarder.call(f.vault, f.vault.interface.encodeFunctionData("pause"), f.user.address))
        .to.be.revertedWithCustomError(f.vault, "AccessControlUnauthorizedAccount")
        .withArgs(f.user.address, await f.vault.PAUSER_ROLE());

      const data = f.vault.interface.encodeFunctionData("setMinDeposit", [USDC(5)]);
      await expect(f.forwarder.connect(f.relayer).execute(await signRequest(f.forwarder, f.admin, f.vault, data)))
        .to.emit(f.vault, "StakingVaultMinDepositUpdated")
        .withArgs(USDC(5));
      // Direct calls by the admin keep working.
      await expect(f.vault.connect(f.admin).setMinDeposit(USDC(2)))
        .to.emit(f.vault, "StakingVaultMinDepositUpdated")
        .withArgs(USDC(2));
    });

    it("treats a call from any other account as its own, whatever its calldata ends with", async () => {
      const f = await load();
      // The stranger appends the admin's address: only the trusted forwarder's suffix counts.
      const data = f.vault.interface.encodeFunctionData("setMinDeposit", [USDC(5)]);
      await expect(f.stranger.sendTransaction({ to: await f.vault.getAddress(), data: ethers.concat([data, f.admin.address]) }))
        .to.be.revertedWithCustomError(f.vault, "AccessControlUnauthorizedAccount")
        .withArgs(f.stranger.address, ethers.ZeroHash);
    });
  });
});
