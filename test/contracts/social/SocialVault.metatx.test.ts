// Social vaults under ERC-2771 forwarding and EIP-2612 permits: a managed wallet without ETH creates, funds and uses
// its vault with signed requests; guardians act through the forwarder too; and a forwarded multicall cannot act as
// another address (the December 2023 ERC-2771 + Multicall address-spoofing issue).
import { expect } from "chai";
import type { ContractTransactionResponse } from "ethers";
import { network } from "hardhat";
import { forwarderAccount, managedWallet, signPermit, signRequest } from "../metatx/metatx-helpers.js";
import { HOUR, request, type SocialVaultFixture, socialVaultFixture, USDC } from "./social-fixture.js";

const connection = await network.create();
const { ethers, networkHelpers } = connection;

/** The social-vault fixture (owner, three active guardians, 10,000 USDC), a relayer and a managed wallet. */
async function fixture() {
  const f = await socialVaultFixture(connection);
  const relayer = (await ethers.getSigners())[9]!;
  const user = managedWallet(ethers, "social user");
  await f.usdc.mint(user.address, USDC(1_000));
  await f.usdc.mint(f.stranger.address, USDC(1_000));
  return { ...f, relayer, user };
}
const load = () => networkHelpers.loadFixture(fixture);
type Fixture = Awaited<ReturnType<typeof fixture>>;
type Signer = Fixture["user"] | Fixture["owner"];

async function logsOf(tx: Promise<ContractTransactionResponse>, address: string) {
  const receipt = await (await tx).wait();
  return receipt!.logs.filter((log) => log.address === address).map((log) => ({ topics: log.topics, data: log.data }));
}

/** Relays `signer`'s request to call `target` with `data`. */
async function relay(f: Fixture, signer: Signer, target: Fixture["vault"] | Fixture["factory"], data: string) {
  return f.forwarder.connect(f.relayer).execute(await signRequest(f.forwarder, signer, target, data));
}

/** `signer`'s forwarded depositWithPermit of `amount` into `vault`. */
async function forwardedDeposit(f: Fixture, signer: Signer, vault: Fixture["vault"], amount: bigint) {
  const { deadline, v, r, s } = await signPermit(f.usdc, signer, vault, amount);
  return relay(f, signer, vault, vault.interface.encodeFunctionData("depositWithPermit", [amount, deadline, v, r, s]));
}

describe("SocialVault meta-transactions", () => {
  describe("a managed wallet's vault, end to end through the forwarder", () => {
    it("creates, funds and withdraws without ever holding ETH", async () => {
      const f = await load();
      const vaultAddress = await f.factory.predictVault(f.user.address);
      const create = f.factory.interface.encodeFunctionData("createVault", [USDC(100), HOUR, 1, ethers.ZeroHash]);
      await expect(relay(f, f.user, f.factory, create))
        .to.emit(f.factory, "SocialVaultCreated")
        .withArgs(f.user.address, vaultAddress, USDC(100), HOUR, 1n);
      const vault = await ethers.getContractAt("SocialVault", vaultAddress);
      expect(await vault.owner()).to.equal(f.user.address);

      await expect(forwardedDeposit(f, f.user, vault, USDC(600)))
        .to.emit(vault, "SocialVaultDeposited")
        .withArgs(f.user.address, USDC(600));

      const withdraw = vault.interface.encodeFunctionData("withdraw", [USDC(40), f.recipient.address]);
      await expect(relay(f, f.user, vault, withdraw))
        .to.emit(vault, "SocialVaultWithdrawn")
        .withArgs(f.recipient.address, USDC(40), USDC(60));

      expect(await f.usdc.balanceOf(vaultAddress)).to.equal(USDC(560));
      expect(await f.usdc.balanceOf(f.recipient.address)).to.equal(USDC(40));
      expect(await ethers.provider.getBalance(f.user.address)).to.equal(0n);
    });
  });

  describe("createVault through the forwarder", () => {
    it("refuses a second vault for the signer", async () => {
      const f = await load();
      const create = f.factory.interface.encodeFunctionData("createVault", [USDC(100), HOUR, 1, ethers.ZeroHash]);
      await relay(f, f.user, f.factory, create);
      const asForwarder = await forwarderAccount(ethers, networkHelpers, f.forwarder);
      await expect(asForwarder.call(f.factory, create, f.user.address))
        .to.be.revertedWithCustomError(f.factory, "SocialVaultFactoryVaultExists")
        .withArgs(f.user.address, await f.factory.vaultOf(f.user.address));
    });
  });

  describe("depositWithPermit", () => {
    it("deposits on a direct call with a permit and no prior allowance, and emits SocialVaultDeposited", async () => {
      const { usdc, vault, stranger } = await load();
      const { deadline, v, r, s } = await signPermit(usdc, stranger, vault, USDC(5));
      await expect(vault.connect(stranger).depositWithPermit(USDC(5), deadline, v, r, s))
        .to.emit(vault, "SocialVaultDeposited")
        .withArgs(stranger.address, USDC(5))
        .and.to.emit(usdc, "Transfer")
        .withArgs(stranger.address, await vault.getAddress(), USDC(5));
      expect(await usdc.balanceOf(await vault.getAddress())).to.equal(USDC(10_005));
    });

    it("emits exactly the vault events of a direct deposit when forwarded", async () => {
      const f = await load();
      const vaultAddress = await f.vault.getAddress();
      await f.usdc.mint(f.owner.address, USDC(50));
      const direct = await logsOf(f.vault.connect(f.owner).deposit(USDC(50)), vaultAddress);

      const again = await load();
      await again.usdc.mint(again.owner.address, USDC(50));
      const forwarded = await logsOf(forwardedDeposit(again, again.owner, again.vault, USDC(50)), vaultAddress);

      expect(direct).to.have.length(1);
      expect(forwarded).to.deep.equal(direct);
    });

    it("still deposits when someone submitted the permit first (front-running)", async () => {
      const f = await load();
      const { deadline, v, r, s } = await signPermit(f.usdc, f.user, f.vault, USDC(30));
      await f.usdc.connect(f.stranger).permit(f.user.address, await f.vault.getAddress(), USDC(30), deadline, v, r, s);
      const data = f.vault.interface.encodeFunctionData("depositWithPermit", [USDC(30), deadline, v, r, s]);
      await expect(relay(f, f.user, f.vault, data))
        .to.emit(f.vault, "SocialVaultDeposited")
        .withArgs(f.user.address, USDC(30));
    });

    it("reverts when the permit is someone else's: it serves only its signer, and the caller has no allowance", async () => {
      const { usdc, vault, user, stranger } = await load();
      const { deadline, v, r, s } = await signPermit(usdc, user, vault, USDC(30));
      await expect(vault.connect(stranger).depositWithPermit(USDC(30), deadline, v, r, s))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientAllowance")
        .withArgs(await vault.getAddress(), 0n, USDC(30));
      expect(await usdc.balanceOf(user.address)).to.equal(USDC(1_000));
    });

    it("reverts on a zero amount", async () => {
      const { usdc, vault, stranger } = await load();
      const { deadline, v, r, s } = await signPermit(usdc, stranger, vault, 0n);
      await expect(vault.connect(stranger).depositWithPermit(0n, deadline, v, r, s)).to.be.revertedWithCustomError(
        vault,
        "SocialVaultZeroAmount",
      );
    });
  });

  describe("forwarded calls", () => {
    it("act for the owner: a request and its cancellation", async () => {
      const f = await load();
      const id = await f.vault.connect(f.owner).requestWithdrawal.staticCall(USDC(1_000), f.recipient.address);
      await expect(
        relay(f, f.owner, f.vault, f.vault.interface.encodeFunctionData("requestWithdrawal", [USDC(1_000), f.recipient.address])),
      )
        .to.emit(f.vault, "SocialVaultWithdrawalRequested")
        .withArgs(id, USDC(1_000), f.recipient.address, anyTimestamp, anyTimestamp, 2n);
      await expect(relay(f, f.owner, f.vault, f.vault.interface.encodeFunctionData("cancelWithdrawal", [id])))
        .to.emit(f.vault, "SocialVaultWithdrawalCancelled")
        .withArgs(id);
    });

    it("act for a guardian: approvals and the lock name the guardian", async () => {
      const f = await load();
      const id = await request(f, USDC(1_000), f.recipient.address);
      await expect(relay(f, f.g1, f.vault, f.vault.interface.encodeFunctionData("approveWithdrawal", [id])))
        .to.emit(f.vault, "SocialVaultWithdrawalApproved")
        .withArgs(id, f.g1.address, 1n);
      await expect(relay(f, f.g2, f.vault, f.vault.interface.encodeFunctionData("lock")))
        .to.emit(f.vault, "SocialVaultLocked")
        .withArgs(anyTimestamp, f.g2.address);
    });

    it("refuse a signer who is not the owner: SocialVaultUnauthorizedAccount(signer)", async () => {
      const f = await load();
      const asForwarder = await forwarderAccount(ethers, networkHelpers, f.forwarder);
      const withdraw = f.vault.interface.encodeFunctionData("withdraw", [USDC(10), f.stranger.address]);
      await expect(asForwarder.call(f.vault, withdraw, f.stranger.address))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultUnauthorizedAccount")
        .withArgs(f.stranger.address);
      await expect(asForwarder.call(f.vault, f.vault.interface.encodeFunctionData("lock"), f.stranger.address))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultUnauthorizedAccount")
        .withArgs(f.stranger.address);
    });
  });

  describe("multicall through the forwarder", () => {
    /** `multicall([withdraw(amount, to) ‖ suffix])`: a subcall with an address appended, as in the 2023 exploit. */
    function spoofingMulticall(f: SocialVaultFixture, amount: bigint, to: string, suffix: string) {
      const withdraw = f.vault.interface.encodeFunctionData("withdraw", [amount, to]);
      return f.vault.interface.encodeFunctionData("multicall", [[ethers.concat([withdraw, suffix])]]);
    }

    it("acts for the signer in every subcall", async () => {
      const f = await load();
      const data = f.vault.interface.encodeFunctionData("multicall", [
        [
          f.vault.interface.encodeFunctionData("withdraw", [USDC(10), f.recipient.address]),
          f.vault.interface.encodeFunctionData("setDailyLimit", [USDC(50)]),
        ],
      ]);
      await expect(relay(f, f.owner, f.vault, data))
        .to.emit(f.vault, "SocialVaultWithdrawn")
        .withArgs(f.recipient.address, USDC(10), USDC(90))
        .and.to.emit(f.vault, "SocialVaultConfigUpdated")
        .withArgs(0n, USDC(50));
    });

    it("cannot act as another address: a subcall ending with the owner's address still runs as the signer", async () => {
      const f = await load();
      const data = spoofingMulticall(f, USDC(100), f.stranger.address, f.owner.address);

      // What the target does with the forwarded call: the subcall sees the stranger, not the appended owner.
      const asForwarder = await forwarderAccount(ethers, networkHelpers, f.forwarder);
      await expect(asForwarder.call(f.vault, data, f.stranger.address))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultUnauthorizedAccount")
        .withArgs(f.stranger.address);

      // The real path: the stranger's signed request, relayed alone or in a batch.
      const signed = await signRequest(f.forwarder, f.stranger, f.vault, data);
      await expect(f.forwarder.connect(f.relayer).execute(signed)).to.be.revertedWithCustomError(f.forwarder, "FailedCall");
      await expect(f.forwarder.connect(f.relayer).executeBatch([signed], ethers.ZeroAddress))
        .to.emit(f.forwarder, "ExecutedForwardRequest")
        .withArgs(f.stranger.address, 0n, false);

      expect(await f.usdc.balanceOf(await f.vault.getAddress())).to.equal(USDC(10_000));
      expect(await f.usdc.balanceOf(f.stranger.address)).to.equal(USDC(1_000));
      expect(await f.vault.remainingDailyLimit()).to.equal(USDC(100));
    });

    it("ignores a suffix on a direct multicall too", async () => {
      const f = await load();
      await expect(
        f.stranger.sendTransaction({
          to: await f.vault.getAddress(),
          data: spoofingMulticall(f, USDC(100), f.stranger.address, f.owner.address),
        }),
      )
        .to.be.revertedWithCustomError(f.vault, "SocialVaultUnauthorizedAccount")
        .withArgs(f.stranger.address);
    });
  });
});

/** Matches any timestamp argument (the block time of the relayed transaction). */
function anyTimestamp(value: unknown): boolean {
  return typeof value === "bigint" && value > 0n;
}
