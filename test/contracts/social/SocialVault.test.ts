import { expect } from "chai";
import { TypedDataEncoder } from "ethers";
import { network } from "hardhat";
import {
  DAY,
  GuardianStatus,
  HOUR,
  nextBlockAt,
  Param,
  request,
  type SocialVaultFixture,
  Status,
  socialVaultFixture,
  USDC,
} from "./social-fixture.js";

const connection = await network.create();
const { ethers, networkHelpers } = connection;
const fixture = () => socialVaultFixture(connection);
const load = () => networkHelpers.loadFixture(fixture);

/** Request `amount` to the recipient and have g1 and g2 approve it. */
async function approvedRequest(f: SocialVaultFixture, amount = USDC(1_000)) {
  const id = await request(f, amount, f.recipient.address);
  await f.vault.connect(f.g1).approveWithdrawal(id);
  await f.vault.connect(f.g2).approveWithdrawal(id);
  return id;
}

async function signApproval(f: SocialVaultFixture, signer: SocialVaultFixture["g1"], id: bigint, recipient: string, amount: bigint) {
  const domain = {
    name: "TrustMint SocialVault",
    version: "1",
    chainId: (await ethers.provider.getNetwork()).chainId,
    verifyingContract: await f.vault.getAddress(),
  };
  const types = {
    ApproveWithdrawal: [
      { name: "id", type: "uint256" },
      { name: "recipient", type: "address" },
      { name: "amount", type: "uint256" },
    ],
  };
  return signer.signTypedData(domain, types, { id, recipient, amount });
}

describe("SocialVault", () => {
  describe("deposit", () => {
    it("takes USDC from anyone and emits SocialVaultDeposited", async () => {
      const { usdc, vault, stranger } = await load();
      await usdc.mint(stranger.address, USDC(5));
      await usdc.connect(stranger).approve(await vault.getAddress(), USDC(5));
      await expect(vault.connect(stranger).deposit(USDC(5)))
        .to.emit(vault, "SocialVaultDeposited")
        .withArgs(stranger.address, USDC(5))
        .and.to.emit(usdc, "Transfer")
        .withArgs(stranger.address, await vault.getAddress(), USDC(5));
      expect(await usdc.balanceOf(await vault.getAddress())).to.equal(USDC(10_005));
    });

    it("reverts on a zero amount", async () => {
      const { vault, owner } = await load();
      await expect(vault.connect(owner).deposit(0)).to.be.revertedWithCustomError(vault, "SocialVaultZeroAmount");
    });

    it("reverts without allowance (SafeERC20 transferFrom)", async () => {
      const { usdc, vault, stranger } = await load();
      await usdc.mint(stranger.address, USDC(1));
      await expect(vault.connect(stranger).deposit(USDC(1))).to.be.revertedWithCustomError(usdc, "ERC20InsufficientAllowance");
    });
  });

  describe("withdraw (instant)", () => {
    it("pays the owner's recipient within the daily limit and reports the remaining limit", async () => {
      const { usdc, vault, owner, recipient } = await load();
      await expect(vault.connect(owner).withdraw(USDC(30), recipient.address))
        .to.emit(vault, "SocialVaultWithdrawn")
        .withArgs(recipient.address, USDC(30), USDC(70))
        .and.to.emit(usdc, "Transfer")
        .withArgs(await vault.getAddress(), recipient.address, USDC(30));
      expect(await usdc.balanceOf(recipient.address)).to.equal(USDC(30));
      expect(await vault.remainingDailyLimit()).to.equal(USDC(70));
      await expect(vault.connect(owner).withdraw(USDC(70), recipient.address))
        .to.emit(vault, "SocialVaultWithdrawn")
        .withArgs(recipient.address, USDC(70), 0);
    });

    it("reverts with DailyLimitExceeded carrying the remaining limit", async () => {
      const { vault, owner, recipient } = await load();
      await expect(vault.connect(owner).withdraw(USDC(101), recipient.address))
        .to.be.revertedWithCustomError(vault, "SocialVaultDailyLimitExceeded")
        .withArgs(USDC(101), USDC(100));
      await vault.connect(owner).withdraw(USDC(60), recipient.address);
      await expect(vault.connect(owner).withdraw(USDC(41), recipient.address))
        .to.be.revertedWithCustomError(vault, "SocialVaultDailyLimitExceeded")
        .withArgs(USDC(41), USDC(40));
    });

    it("uses a rolling 24-hour window opened by the first withdrawal", async () => {
      const { vault, owner, recipient } = await load();
      expect(await vault.dailyWindow()).to.deep.equal([0n, 0n, 0n]);
      const opened = await nextBlockAt(connection);
      await vault.connect(owner).withdraw(USDC(100), recipient.address);
      expect(await vault.dailyWindow()).to.deep.equal([USDC(100), BigInt(opened), BigInt(opened + DAY)]);

      // Still the same window one second before it ends, even across a UTC midnight.
      await networkHelpers.time.setNextBlockTimestamp(opened + DAY - 1);
      await expect(vault.connect(owner).withdraw(1, recipient.address))
        .to.be.revertedWithCustomError(vault, "SocialVaultDailyLimitExceeded")
        .withArgs(1, 0);

      // A new window opens with the first withdrawal once 24 hours have passed.
      await networkHelpers.time.setNextBlockTimestamp(opened + DAY);
      await vault.connect(owner).withdraw(USDC(10), recipient.address);
      expect(await vault.dailyWindow()).to.deep.equal([USDC(10), BigInt(opened + DAY), BigInt(opened + 2 * DAY)]);
      expect(await vault.remainingDailyLimit()).to.equal(USDC(90));

      await networkHelpers.time.increase(DAY);
      expect(await vault.remainingDailyLimit()).to.equal(USDC(100));
      expect(await vault.dailyWindow()).to.deep.equal([0n, 0n, 0n]);
    });

    it("leaves nothing when the limit is lowered below what the window spent", async () => {
      const { vault, owner, recipient } = await load();
      await vault.connect(owner).withdraw(USDC(80), recipient.address);
      await vault.connect(owner).setDailyLimit(USDC(50));
      expect(await vault.remainingDailyLimit()).to.equal(0n);
      await expect(vault.connect(owner).withdraw(1, recipient.address))
        .to.be.revertedWithCustomError(vault, "SocialVaultDailyLimitExceeded")
        .withArgs(1, 0);
    });

    it("never pays more than the balance", async () => {
      const { usdc, factory, other, recipient } = await load();
      await factory.connect(other).createVault(USDC(1_000), HOUR, 1, ethers.ZeroHash);
      const small = await ethers.getContractAt("SocialVault", await factory.vaultOf(other.address));
      await usdc.mint(other.address, USDC(5));
      await usdc.connect(other).approve(await small.getAddress(), USDC(5));
      await small.connect(other).deposit(USDC(5));
      await expect(small.connect(other).withdraw(USDC(10), recipient.address))
        .to.be.revertedWithCustomError(small, "SocialVaultInsufficientBalance")
        .withArgs(USDC(5), USDC(10));
    });

    it("is owner only and rejects zero amounts and recipients", async () => {
      const { vault, owner, g1, stranger, recipient } = await load();
      for (const caller of [stranger, g1]) {
        await expect(vault.connect(caller).withdraw(1, recipient.address))
          .to.be.revertedWithCustomError(vault, "SocialVaultUnauthorizedAccount")
          .withArgs(caller.address);
      }
      await expect(vault.connect(owner).withdraw(0, recipient.address)).to.be.revertedWithCustomError(vault, "SocialVaultZeroAmount");
      await expect(vault.connect(owner).withdraw(1, ethers.ZeroAddress)).to.be.revertedWithCustomError(vault, "SocialVaultZeroAddress");
    });
  });

  describe("requestWithdrawal", () => {
    it("creates a pending request with executeAfter, expiresAt and the required approvals", async () => {
      const { vault, owner, recipient } = await load();
      const t = await nextBlockAt(connection);
      await expect(vault.connect(owner).requestWithdrawal(USDC(5_000), recipient.address))
        .to.emit(vault, "SocialVaultWithdrawalRequested")
        .withArgs(100n, USDC(5_000), recipient.address, t + HOUR, t + HOUR + 7 * DAY, 2);
      const w = await vault.getWithdrawal(100n);
      expect(w.id).to.equal(100n);
      expect(w.amount).to.equal(USDC(5_000));
      expect(w.recipient).to.equal(recipient.address);
      expect(w.status).to.equal(Status.Pending);
      expect(w.requiredApprovals).to.equal(2n);
      expect(w.approvals).to.equal(0n);
      expect(w.executeAfter).to.equal(BigInt(t + HOUR));
      expect(w.expiresAt).to.equal(BigInt(t + HOUR + 7 * DAY));
      expect(await vault.openWithdrawalIds()).to.deep.equal([100n]);
      expect(await vault.withdrawalCount()).to.equal(1n);
    });

    it("numbers ids sequence * 100 + slot and reuses the lowest closed slot", async () => {
      const f = await load();
      const a = await request(f, USDC(1), f.recipient.address);
      const b = await request(f, USDC(1), f.recipient.address);
      expect([a, b]).to.deep.equal([100n, 201n]);
      await f.vault.connect(f.owner).cancelWithdrawal(a);
      const c = await request(f, USDC(1), f.recipient.address);
      expect(c).to.equal(300n);
      expect((await f.vault.getWithdrawal(a)).status).to.equal(Status.None); // slot 0 reused: the history is in the events
      expect(await f.vault.openWithdrawalIds()).to.deep.equal([300n, 201n]);
    });

    it("closes an expired request to reuse its slot", async () => {
      const f = await load();
      const old = await request(f, USDC(1), f.recipient.address);
      await networkHelpers.time.increase(HOUR + 7 * DAY + 1);
      expect((await f.vault.getWithdrawal(old)).status).to.equal(Status.Expired);
      await expect(f.vault.connect(f.owner).requestWithdrawal(USDC(2), f.recipient.address))
        .to.emit(f.vault, "SocialVaultWithdrawalExpired")
        .withArgs(old)
        .and.to.emit(f.vault, "SocialVaultWithdrawalRequested");
      expect(await f.vault.openWithdrawalIds()).to.deep.equal([200n]);
    });

    it("caps open requests at MAX_OPEN_WITHDRAWALS", async () => {
      const { vault, owner, recipient } = await load();
      for (let i = 0; i < 20; i++) await vault.connect(owner).requestWithdrawal(USDC(1), recipient.address);
      await expect(vault.connect(owner).requestWithdrawal(USDC(1), recipient.address))
        .to.be.revertedWithCustomError(vault, "SocialVaultTooManyOpenWithdrawals")
        .withArgs(20);
    });

    it("needs as many guardians (active or pending) as required approvals", async () => {
      const { factory, other, recipient, g1 } = await load();
      await factory.connect(other).createVault(USDC(1), HOUR, 2, ethers.ZeroHash);
      const vault = await ethers.getContractAt("SocialVault", await factory.vaultOf(other.address));
      await expect(vault.connect(other).requestWithdrawal(USDC(1), recipient.address))
        .to.be.revertedWithCustomError(vault, "SocialVaultNotEnoughGuardians")
        .withArgs(0, 2);
      await vault.connect(other).addGuardian(g1.address);
      await expect(vault.connect(other).requestWithdrawal(USDC(1), recipient.address))
        .to.be.revertedWithCustomError(vault, "SocialVaultNotEnoughGuardians")
        .withArgs(1, 2);
    });

    it("is owner only and rejects zero, oversized amounts and zero recipients", async () => {
      const { vault, owner, stranger, recipient } = await load();
      await expect(vault.connect(stranger).requestWithdrawal(1, recipient.address))
        .to.be.revertedWithCustomError(vault, "SocialVaultUnauthorizedAccount")
        .withArgs(stranger.address);
      await expect(vault.connect(owner).requestWithdrawal(0, recipient.address)).to.be.revertedWithCustomError(
        vault,
        "SocialVaultZeroAmount",
      );
      await expect(vault.connect(owner).requestWithdrawal(1, ethers.ZeroAddress)).to.be.revertedWithCustomError(
        vault,
        "SocialVaultZeroAddress",
      );
      await expect(vault.connect(owner).requestWithdrawal(2n ** 96n, recipient.address))
        .to.be.revertedWithCustomError(vault, "SafeCastOverflowedUintDowncast")
        .withArgs(96, 2n ** 96n);
    });
  });

  describe("approveWithdrawal", () => {
    it("counts active guardians once each and turns the request approved at the requirement", async () => {
      const f = await load();
      const id = await request(f, USDC(1_000), f.recipient.address);
      await expect(f.vault.connect(f.g1).approveWithdrawal(id))
        .to.emit(f.vault, "SocialVaultWithdrawalApproved")
        .withArgs(id, f.g1.address, 1);
      expect((await f.vault.getWithdrawal(id)).status).to.equal(Status.Pending);
      expect(await f.vault.hasApproved(id, f.g1.address)).to.equal(true);
      expect(await f.vault.hasApproved(id, f.g2.address)).to.equal(false);
      await expect(f.vault.connect(f.g2).approveWithdrawal(id))
        .to.emit(f.vault, "SocialVaultWithdrawalApproved")
        .withArgs(id, f.g2.address, 2);
      expect((await f.vault.getWithdrawal(id)).status).to.equal(Status.Approved);
      // A further approval is accepted (it keeps the request approved if a guardian is later removed).
      await expect(f.vault.connect(f.g3).approveWithdrawal(id))
        .to.emit(f.vault, "SocialVaultWithdrawalApproved")
        .withArgs(id, f.g3.address, 3);
      expect((await f.vault.getWithdrawal(id)).approvals).to.equal(3n);
    });

    it("reverts AlreadyApproved on a second approval by the same guardian", async () => {
      const f = await load();
      const id = await request(f, USDC(1_000), f.recipient.address);
      await f.vault.connect(f.g1).approveWithdrawal(id);
      await expect(f.vault.connect(f.g1).approveWithdrawal(id))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultAlreadyApproved")
        .withArgs(id, f.g1.address);
    });

    it("refuses non-guardians, the owner and pending guardians with NotGuardian", async () => {
      const f = await load();
      const id = await request(f, USDC(1_000), f.recipient.address);
      await f.vault.connect(f.owner).addGuardian(f.other.address);
      for (const caller of [f.stranger, f.owner, f.other]) {
        await expect(f.vault.connect(caller).approveWithdrawal(id))
          .to.be.revertedWithCustomError(f.vault, "SocialVaultNotGuardian")
          .withArgs(caller.address);
      }
    });

    it("lets a pending guardian approve once its timelock has passed, with no other call", async () => {
      const f = await load();
      const added = await nextBlockAt(connection);
      await f.vault.connect(f.owner).addGuardian(f.other.address);
      expect(await f.vault.guardianInfo(f.other.address)).to.deep.equal([GuardianStatus.Pending, BigInt(added + HOUR), 0n]);
      const id = await request(f, USDC(1_000), f.recipient.address);
      await networkHelpers.time.setNextBlockTimestamp(added + HOUR);
      await expect(f.vault.connect(f.other).approveWithdrawal(id))
        .to.emit(f.vault, "SocialVaultWithdrawalApproved")
        .withArgs(id, f.other.address, 1);
      expect((await f.vault.guardianInfo(f.other.address))[0]).to.equal(GuardianStatus.Active);
    });

    it("reverts NotFound for unknown ids and NotOpen for closed requests", async () => {
      const f = await load();
      for (const id of [0n, 100n, 125n, 999n]) {
        await expect(f.vault.connect(f.g1).approveWithdrawal(id))
          .to.be.revertedWithCustomError(f.vault, "SocialVaultWithdrawalNotFound")
          .withArgs(id);
        expect((await f.vault.getWithdrawal(id)).status).to.equal(Status.None);
        expect(await f.vault.hasApproved(id, f.g1.address)).to.equal(false);
      }
      const id = await request(f, USDC(1_000), f.recipient.address);
      await f.vault.connect(f.owner).cancelWithdrawal(id);
      await expect(f.vault.connect(f.g1).approveWithdrawal(id))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultWithdrawalNotOpen")
        .withArgs(id, Status.Cancelled);
    });

    it("reverts PastExpiry once the request has expired", async () => {
      const f = await load();
      const id = await request(f, USDC(1_000), f.recipient.address);
      const { expiresAt } = await f.vault.getWithdrawal(id);
      await networkHelpers.time.setNextBlockTimestamp(expiresAt + 1n);
      await expect(f.vault.connect(f.g1).approveWithdrawal(id))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultWithdrawalPastExpiry")
        .withArgs(id, expiresAt);
    });
  });

  describe("approveWithdrawalWithSignatures", () => {
    it("records EIP-712 approvals submitted by anyone, then executes in one multicall", async () => {
      const f = await load();
      const id = await request(f, USDC(1_000), f.recipient.address);
      const sigs = [
        { guardian: f.g1.address, signature: await signApproval(f, f.g1, id, f.recipient.address, USDC(1_000)) },
        { guardian: f.g3.address, signature: await signApproval(f, f.g3, id, f.recipient.address, USDC(1_000)) },
      ];
      await networkHelpers.time.increase(HOUR);
      const tx = f.vault
        .connect(f.stranger)
        .multicall([
          f.vault.interface.encodeFunctionData("approveWithdrawalWithSignatures", [id, sigs]),
          f.vault.interface.encodeFunctionData("executeWithdrawal", [id]),
        ]);
      await expect(tx)
        .to.emit(f.vault, "SocialVaultWithdrawalApproved")
        .withArgs(id, f.g1.address, 1)
        .and.to.emit(f.vault, "SocialVaultWithdrawalApproved")
        .withArgs(id, f.g3.address, 2)
        .and.to.emit(f.vault, "SocialVaultWithdrawalExecuted")
        .withArgs(id, USDC(1_000), f.recipient.address);
      expect(await f.usdc.balanceOf(f.recipient.address)).to.equal(USDC(1_000));
    });

    it("exposes the digest guardians sign", async () => {
      const f = await load();
      const id = await request(f, USDC(7), f.recipient.address);
      const domain = {
        name: "TrustMint SocialVault",
        version: "1",
        chainId: (await ethers.provider.getNetwork()).chainId,
        verifyingContract: await f.vault.getAddress(),
      };
      const types = {
        ApproveWithdrawal: [
          { name: "id", type: "uint256" },
          { name: "recipient", type: "address" },
          { name: "amount", type: "uint256" },
        ],
      };
      expect(await f.vault.withdrawalApprovalDigest(id)).to.equal(
        TypedDataEncoder.hash(domain, types, { id, recipient: f.recipient.address, amount: USDC(7) }),
      );
      await expect(f.vault.withdrawalApprovalDigest(999n))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultWithdrawalNotFound")
        .withArgs(999n);
    });

    it("rejects a signature by someone else or over other terms", async () => {
      const f = await load();
      const id = await request(f, USDC(1_000), f.recipient.address);
      const byG3 = await signApproval(f, f.g3, id, f.recipient.address, USDC(1_000));
      await expect(f.vault.approveWithdrawalWithSignatures(id, [{ guardian: f.g1.address, signature: byG3 }]))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultInvalidSignature")
        .withArgs(f.g1.address);
      const otherAmount = await signApproval(f, f.g1, id, f.recipient.address, USDC(999));
      await expect(f.vault.approveWithdrawalWithSignatures(id, [{ guardian: f.g1.address, signature: otherAmount }]))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultInvalidSignature")
        .withArgs(f.g1.address);
    });

    it("rejects non-guardian signers and duplicate guardians", async () => {
      const f = await load();
      const id = await request(f, USDC(1_000), f.recipient.address);
      const byStranger = await signApproval(f, f.stranger, id, f.recipient.address, USDC(1_000));
      await expect(f.vault.approveWithdrawalWithSignatures(id, [{ guardian: f.stranger.address, signature: byStranger }]))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultNotGuardian")
        .withArgs(f.stranger.address);
      const byG1 = await signApproval(f, f.g1, id, f.recipient.address, USDC(1_000));
      const twice = [
        { guardian: f.g1.address, signature: byG1 },
        { guardian: f.g1.address, signature: byG1 },
      ];
      await expect(f.vault.approveWithdrawalWithSignatures(id, twice))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultAlreadyApproved")
        .withArgs(id, f.g1.address);
    });
  });

  describe("executeWithdrawal", () => {
    it("pays an approved request after the timelock; anyone may call", async () => {
      const f = await load();
      const id = await approvedRequest(f);
      const { executeAfter } = await f.vault.getWithdrawal(id);
      await networkHelpers.time.setNextBlockTimestamp(executeAfter);
      await expect(f.vault.connect(f.stranger).executeWithdrawal(id))
        .to.emit(f.vault, "SocialVaultWithdrawalExecuted")
        .withArgs(id, USDC(1_000), f.recipient.address)
        .and.to.emit(f.usdc, "Transfer")
        .withArgs(await f.vault.getAddress(), f.recipient.address, USDC(1_000));
      expect(await f.usdc.balanceOf(f.recipient.address)).to.equal(USDC(1_000));
      expect((await f.vault.getWithdrawal(id)).status).to.equal(Status.Executed);
      expect(await f.vault.openWithdrawalIds()).to.deep.equal([]);
      await expect(f.vault.executeWithdrawal(id))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultWithdrawalNotOpen")
        .withArgs(id, Status.Executed);
    });

    it("reverts TimelockActive with executeAfter while the timelock runs", async () => {
      const f = await load();
      const id = await approvedRequest(f);
      const { executeAfter } = await f.vault.getWithdrawal(id);
      await networkHelpers.time.setNextBlockTimestamp(executeAfter - 1n);
      await expect(f.vault.executeWithdrawal(id))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultTimelockActive")
        .withArgs(executeAfter);
    });

    it("reverts NotApproved below the required approvals, whatever the time", async () => {
      const f = await load();
      const id = await request(f, USDC(1_000), f.recipient.address);
      await f.vault.connect(f.g1).approveWithdrawal(id);
      await networkHelpers.time.increase(2 * HOUR);
      await expect(f.vault.executeWithdrawal(id))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultWithdrawalNotApproved")
        .withArgs(id, 1, 2);
    });

    it("reverts PastExpiry after expiresAt", async () => {
      const f = await load();
      const id = await approvedRequest(f);
      const { expiresAt } = await f.vault.getWithdrawal(id);
      const beforeExpiry = await networkHelpers.takeSnapshot();
      await networkHelpers.time.setNextBlockTimestamp(expiresAt);
      await expect(f.vault.executeWithdrawal(id)).to.emit(f.vault, "SocialVaultWithdrawalExecuted"); // still valid at expiresAt
      await beforeExpiry.restore();
      await networkHelpers.time.setNextBlockTimestamp(expiresAt + 1n);
      await expect(f.vault.executeWithdrawal(id))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultWithdrawalPastExpiry")
        .withArgs(id, expiresAt);
    });

    it("reverts InsufficientBalance when the vault holds less than the amount", async () => {
      const f = await load();
      const id = await approvedRequest(f, USDC(20_000));
      await networkHelpers.time.increase(HOUR);
      await expect(f.vault.executeWithdrawal(id))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultInsufficientBalance")
        .withArgs(USDC(10_000), USDC(20_000));
    });

    it("keeps the approval requirement a request was made with", async () => {
      const f = await load();
      const id = await request(f, USDC(1_000), f.recipient.address);
      await f.vault.connect(f.owner).setRequiredSignatures(3); // raising applies at once, for new requests
      expect((await f.vault.getWithdrawal(id)).requiredApprovals).to.equal(2n);
      await f.vault.connect(f.g1).approveWithdrawal(id);
      await f.vault.connect(f.g2).approveWithdrawal(id);
      await networkHelpers.time.increase(HOUR);
      await expect(f.vault.executeWithdrawal(id)).to.emit(f.vault, "SocialVaultWithdrawalExecuted");
      const next = await request(f, USDC(1), f.recipient.address);
      expect((await f.vault.getWithdrawal(next)).requiredApprovals).to.equal(3n);
    });
  });

  describe("cancelWithdrawal", () => {
    it("cancels a pending or approved request (owner only)", async () => {
      const f = await load();
      const pending = await request(f, USDC(1_000), f.recipient.address);
      const approved = await approvedRequest(f);
      await expect(f.vault.connect(f.g1).cancelWithdrawal(pending))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultUnauthorizedAccount")
        .withArgs(f.g1.address);
      await expect(f.vault.connect(f.owner).cancelWithdrawal(pending)).to.emit(f.vault, "SocialVaultWithdrawalCancelled").withArgs(pending);
      await expect(f.vault.connect(f.owner).cancelWithdrawal(approved))
        .to.emit(f.vault, "SocialVaultWithdrawalCancelled")
        .withArgs(approved);
      expect((await f.vault.getWithdrawal(approved)).status).to.equal(Status.Cancelled);
      await expect(f.vault.connect(f.owner).cancelWithdrawal(approved))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultWithdrawalNotOpen")
        .withArgs(approved, Status.Cancelled);
      await expect(f.vault.connect(f.owner).cancelWithdrawal(999n))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultWithdrawalNotFound")
        .withArgs(999n);
    });

    it("closes an expired request as expired", async () => {
      const f = await load();
      const id = await request(f, USDC(1_000), f.recipient.address);
      await networkHelpers.time.increase(HOUR + 7 * DAY + 1);
      await expect(f.vault.connect(f.owner).cancelWithdrawal(id))
        .to.emit(f.vault, "SocialVaultWithdrawalExpired")
        .withArgs(id)
        .and.not.to.emit(f.vault, "SocialVaultWithdrawalCancelled");
      expect((await f.vault.getWithdrawal(id)).status).to.equal(Status.Expired);
    });
  });

  describe("guardians", () => {
    it("adds a guardian as pending until activeAt, then active by time alone", async () => {
      const { vault, owner, other } = await load();
      const t = await nextBlockAt(connection);
      await expect(vault.connect(owner).addGuardian(other.address))
        .to.emit(vault, "SocialVaultGuardianAdded")
        .withArgs(other.address, t + HOUR);
      expect(await vault.guardianInfo(other.address)).to.deep.equal([GuardianStatus.Pending, BigInt(t + HOUR), 0n]);
      expect(await vault.guardianCount()).to.equal(4n);
      expect(await vault.activeGuardianCount()).to.equal(3n);
      expect(await vault.guardians()).to.include(other.address);
      await networkHelpers.time.increaseTo(t + HOUR);
      expect((await vault.guardianInfo(other.address))[0]).to.equal(GuardianStatus.Active);
      expect(await vault.activeGuardianCount()).to.equal(4n);
    });

    it("rejects invalid, duplicate and surplus guardians and non-owners", async () => {
      const { vault, owner, g1, stranger } = await load();
      for (const bad of [ethers.ZeroAddress, owner.address, await vault.getAddress()]) {
        await expect(vault.connect(owner).addGuardian(bad))
          .to.be.revertedWithCustomError(vault, "SocialVaultInvalidGuardian")
          .withArgs(bad);
      }
      await expect(vault.connect(owner).addGuardian(g1.address))
        .to.be.revertedWithCustomError(vault, "SocialVaultGuardianAlreadyAdded")
        .withArgs(g1.address);
      await expect(vault.connect(stranger).addGuardian(stranger.address))
        .to.be.revertedWithCustomError(vault, "SocialVaultUnauthorizedAccount")
        .withArgs(stranger.address);
      for (let i = 0; i < 7; i++) await vault.connect(owner).addGuardian(ethers.Wallet.createRandom().address);
      expect(await vault.guardianCount()).to.equal(10n);
      await expect(vault.connect(owner).addGuardian(stranger.address))
        .to.be.revertedWithCustomError(vault, "SocialVaultGuardianLimitReached")
        .withArgs(10);
    });

    it("removes a pending guardian at once", async () => {
      const { vault, owner, other } = await load();
      await vault.connect(owner).addGuardian(other.address);
      await expect(vault.connect(owner).removeGuardian(other.address)).to.emit(vault, "SocialVaultGuardianRemoved").withArgs(other.address);
      expect(await vault.guardianInfo(other.address)).to.deep.equal([GuardianStatus.None, 0n, 0n]);
      expect(await vault.guardianCount()).to.equal(3n);
    });

    it("timelocks the removal of an active guardian, who keeps its powers meanwhile", async () => {
      const f = await load();
      const t = await nextBlockAt(connection);
      await expect(f.vault.connect(f.owner).removeGuardian(f.g1.address))
        .to.emit(f.vault, "SocialVaultGuardianRemovalSubmitted")
        .withArgs(f.g1.address, t + HOUR);
      const [status, , removableAt] = await f.vault.guardianInfo(f.g1.address);
      expect([status, removableAt]).to.deep.equal([GuardianStatus.Active, BigInt(t + HOUR)]);
      const id = await request(f, USDC(1_000), f.recipient.address);
      await expect(f.vault.connect(f.g1).approveWithdrawal(id)).to.emit(f.vault, "SocialVaultWithdrawalApproved");
    });

    it("accepts a removal after the timelock and stops counting the guardian's approvals", async () => {
      const f = await load();
      const id = await approvedRequest(f); // g1 + g2
      const t = await nextBlockAt(connection);
      await f.vault.connect(f.owner).removeGuardian(f.g1.address);
      await expect(f.vault.connect(f.owner).removeGuardian(f.g1.address))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultGuardianRemovalPending")
        .withArgs(f.g1.address, t + HOUR);
      await expect(f.vault.acceptGuardianRemoval(f.g1.address))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultTimelockActive")
        .withArgs(t + HOUR);
      await networkHelpers.time.setNextBlockTimestamp(t + HOUR);
      await expect(f.vault.connect(f.stranger).acceptGuardianRemoval(f.g1.address))
        .to.emit(f.vault, "SocialVaultGuardianRemoved")
        .withArgs(f.g1.address)
        .and.to.emit(f.vault, "SocialVaultWithdrawalApprovalRevoked")
        .withArgs(id, f.g1.address, 1);
      const w = await f.vault.getWithdrawal(id);
      expect([w.status, w.approvals]).to.deep.equal([Status.Pending, 1n]);
      expect(await f.vault.hasApproved(id, f.g1.address)).to.equal(false);
      await expect(f.vault.connect(f.g1).approveWithdrawal(id))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultNotGuardian")
        .withArgs(f.g1.address);
      await expect(f.vault.acceptGuardianRemoval(f.g1.address))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultNoPendingRemoval")
        .withArgs(f.g1.address);

      // The freed index goes to the next guardian, who starts with no approval.
      await f.vault.connect(f.owner).addGuardian(f.other.address);
      await networkHelpers.time.increase(HOUR);
      expect(await f.vault.hasApproved(id, f.other.address)).to.equal(false);
      await expect(f.vault.connect(f.other).approveWithdrawal(id))
        .to.emit(f.vault, "SocialVaultWithdrawalApproved")
        .withArgs(id, f.other.address, 2);
    });

    it("leaves closed requests and requests the removed guardian did not approve untouched", async () => {
      const f = await load();
      const executed = await approvedRequest(f); // g1 + g2, then executed
      await networkHelpers.time.increase(HOUR);
      await f.vault.executeWithdrawal(executed);
      const byOthers = await request(f, USDC(1_000), f.recipient.address);
      await f.vault.connect(f.g2).approveWithdrawal(byOthers);
      await f.vault.connect(f.g3).approveWithdrawal(byOthers);
      await f.vault.connect(f.owner).removeGuardian(f.g1.address);
      await networkHelpers.time.increase(HOUR);
      await expect(f.vault.acceptGuardianRemoval(f.g1.address))
        .to.emit(f.vault, "SocialVaultGuardianRemoved")
        .and.not.to.emit(f.vault, "SocialVaultWithdrawalApprovalRevoked");
      expect((await f.vault.getWithdrawal(byOthers)).status).to.equal(Status.Approved);
    });

    it("lets the owner revoke a submitted removal", async () => {
      const { vault, owner, g1, stranger } = await load();
      await vault.connect(owner).removeGuardian(g1.address);
      await expect(vault.connect(stranger).revokeGuardianRemoval(g1.address))
        .to.be.revertedWithCustomError(vault, "SocialVaultUnauthorizedAccount")
        .withArgs(stranger.address);
      await expect(vault.connect(owner).revokeGuardianRemoval(g1.address))
        .to.emit(vault, "SocialVaultGuardianRemovalRevoked")
        .withArgs(g1.address);
      expect((await vault.guardianInfo(g1.address))[2]).to.equal(0n);
      await expect(vault.connect(owner).revokeGuardianRemoval(g1.address))
        .to.be.revertedWithCustomError(vault, "SocialVaultNoPendingRemoval")
        .withArgs(g1.address);
    });

    it("rejects removing unknown guardians and non-owner removals", async () => {
      const { vault, owner, g1, stranger } = await load();
      await expect(vault.connect(owner).removeGuardian(stranger.address))
        .to.be.revertedWithCustomError(vault, "SocialVaultGuardianNotFound")
        .withArgs(stranger.address);
      await expect(vault.connect(stranger).removeGuardian(g1.address))
        .to.be.revertedWithCustomError(vault, "SocialVaultUnauthorizedAccount")
        .withArgs(stranger.address);
    });
  });

  describe("configuration", () => {
    it("applies a lower daily limit at once and timelocks a higher one", async () => {
      const { vault, owner, stranger } = await load();
      await expect(vault.connect(owner).setDailyLimit(USDC(50)))
        .to.emit(vault, "SocialVaultConfigUpdated")
        .withArgs(Param.DailyLimit, USDC(50));
      const t = await nextBlockAt(connection);
      await expect(vault.connect(owner).setDailyLimit(USDC(500)))
        .to.emit(vault, "SocialVaultConfigChangeSubmitted")
        .withArgs(Param.DailyLimit, USDC(500), t + HOUR);
      expect(await vault.dailyLimit()).to.equal(USDC(50));
      expect(await vault.pendingConfigChange(Param.DailyLimit)).to.deep.equal([USDC(500), BigInt(t + HOUR)]);
      await expect(vault.acceptConfigChange(Param.DailyLimit))
        .to.be.revertedWithCustomError(vault, "SocialVaultTimelockActive")
        .withArgs(t + HOUR);
      await networkHelpers.time.setNextBlockTimestamp(t + HOUR);
      await expect(vault.connect(stranger).acceptConfigChange(Param.DailyLimit))
        .to.emit(vault, "SocialVaultConfigUpdated")
        .withArgs(Param.DailyLimit, USDC(500));
      expect(await vault.dailyLimit()).to.equal(USDC(500));
      expect(await vault.pendingConfigChange(Param.DailyLimit)).to.deep.equal([0n, 0n]);
    });

    it("supersedes a pending raise with a lower value", async () => {
      const { vault, owner } = await load();
      await vault.connect(owner).setDailyLimit(USDC(500));
      await expect(vault.connect(owner).setDailyLimit(USDC(10)))
        .to.emit(vault, "SocialVaultConfigChangeRevoked")
        .withArgs(Param.DailyLimit)
        .and.to.emit(vault, "SocialVaultConfigUpdated")
        .withArgs(Param.DailyLimit, USDC(10));
      await expect(vault.acceptConfigChange(Param.DailyLimit))
        .to.be.revertedWithCustomError(vault, "SocialVaultNoPendingChange")
        .withArgs(Param.DailyLimit);
    });

    it("applies a longer timelock at once and timelocks a shorter one by the current timelock", async () => {
      const { vault, owner } = await load();
      await expect(vault.connect(owner).setTimelockDuration(2 * DAY))
        .to.emit(vault, "SocialVaultConfigUpdated")
        .withArgs(Param.TimelockDuration, 2 * DAY);
      const t = await nextBlockAt(connection);
      await expect(vault.connect(owner).setTimelockDuration(HOUR))
        .to.emit(vault, "SocialVaultConfigChangeSubmitted")
        .withArgs(Param.TimelockDuration, HOUR, t + 2 * DAY);
      await networkHelpers.time.setNextBlockTimestamp(t + 2 * DAY);
      await expect(vault.acceptConfigChange(Param.TimelockDuration))
        .to.emit(vault, "SocialVaultConfigUpdated")
        .withArgs(Param.TimelockDuration, HOUR);
      expect(await vault.timelockDuration()).to.equal(BigInt(HOUR));
      await expect(vault.connect(owner).setTimelockDuration(HOUR - 1))
        .to.be.revertedWithCustomError(vault, "SocialVaultInvalidTimelockDuration")
        .withArgs(HOUR - 1, HOUR, 7 * DAY);
    });

    it("applies more required signatures at once, timelocks fewer, and caps them by the guardian count", async () => {
      const { vault, owner } = await load();
      await expect(vault.connect(owner).setRequiredSignatures(3))
        .to.emit(vault, "SocialVaultConfigUpdated")
        .withArgs(Param.RequiredSignatures, 3);
      for (const bad of [0, 4]) {
        await expect(vault.connect(owner).setRequiredSignatures(bad))
          .to.be.revertedWithCustomError(vault, "SocialVaultInvalidRequiredSignatures")
          .withArgs(bad, 3);
      }
      const t = await nextBlockAt(connection);
      await expect(vault.connect(owner).setRequiredSignatures(1))
        .to.emit(vault, "SocialVaultConfigChangeSubmitted")
        .withArgs(Param.RequiredSignatures, 1, t + HOUR);
      await networkHelpers.time.setNextBlockTimestamp(t + HOUR);
      await expect(vault.acceptConfigChange(Param.RequiredSignatures))
        .to.emit(vault, "SocialVaultConfigUpdated")
        .withArgs(Param.RequiredSignatures, 1);
      expect(await vault.requiredSignatures()).to.equal(1n);
    });

    it("lets the owner or an active guardian revoke a submitted change", async () => {
      const { vault, owner, g2, stranger } = await load();
      await vault.connect(owner).setDailyLimit(USDC(500));
      await expect(vault.connect(stranger).revokeConfigChange(Param.DailyLimit))
        .to.be.revertedWithCustomError(vault, "SocialVaultUnauthorizedAccount")
        .withArgs(stranger.address);
      await expect(vault.connect(g2).revokeConfigChange(Param.DailyLimit))
        .to.emit(vault, "SocialVaultConfigChangeRevoked")
        .withArgs(Param.DailyLimit);
      await expect(vault.connect(owner).revokeConfigChange(Param.DailyLimit))
        .to.be.revertedWithCustomError(vault, "SocialVaultNoPendingChange")
        .withArgs(Param.DailyLimit);
      await vault.connect(owner).setTimelockDuration(2 * HOUR);
      await vault.connect(owner).setTimelockDuration(HOUR);
      await expect(vault.connect(owner).revokeConfigChange(Param.TimelockDuration))
        .to.emit(vault, "SocialVaultConfigChangeRevoked")
        .withArgs(Param.TimelockDuration);
    });

    it("makes every setter owner only", async () => {
      const { vault, g1 } = await load();
      const calls = [
        () => vault.connect(g1).setDailyLimit(1),
        () => vault.connect(g1).setTimelockDuration(HOUR),
        () => vault.connect(g1).setRequiredSignatures(1),
        () => vault.connect(g1).setDuressCommitment(ethers.ZeroHash),
      ];
      for (const call of calls) {
        await expect(call()).to.be.revertedWithCustomError(vault, "SocialVaultUnauthorizedAccount").withArgs(g1.address);
      }
    });
  });
});
