import { expect } from "chai";
import { network } from "hardhat";
import {
  commitmentOf,
  DAY,
  DURESS_KEY,
  GuardianStatus,
  HOUR,
  nextBlockAt,
  Param,
  request,
  Status,
  socialVaultFixture,
  USDC,
} from "./social-fixture.js";

const connection = await network.create();
const { ethers, networkHelpers } = connection;
const fixture = () => socialVaultFixture(connection);
const load = () => networkHelpers.loadFixture(fixture);
const OWNER_UNLOCK_DELAY = 30 * DAY;

/** The standard vault plus one open pending request and one open approved request. */
async function withOpenRequests() {
  const f = await load();
  const pending = await request(f, USDC(1_000), f.recipient.address);
  const approved = await request(f, USDC(2_000), f.recipient.address);
  await f.vault.connect(f.g1).approveWithdrawal(approved);
  await f.vault.connect(f.g2).approveWithdrawal(approved);
  return { ...f, pending, approved };
}

describe("SocialVault lock", () => {
  describe("lock", () => {
    it("cancels every open request, revokes queued risk-raising changes and emits SocialVaultLocked", async () => {
      const f = await withOpenRequests();
      await f.vault.connect(f.owner).setDailyLimit(USDC(5_000)); // submitted
      await f.vault.connect(f.owner).removeGuardian(f.g3.address); // submitted
      await f.vault.connect(f.owner).addGuardian(f.other.address); // pending guardian
      const t = await nextBlockAt(connection);
      await expect(f.vault.connect(f.owner).lock())
        .to.emit(f.vault, "SocialVaultLocked")
        .withArgs(t, f.owner.address)
        .and.to.emit(f.vault, "SocialVaultWithdrawalCancelled")
        .withArgs(f.pending)
        .and.to.emit(f.vault, "SocialVaultWithdrawalCancelled")
        .withArgs(f.approved)
        .and.to.emit(f.vault, "SocialVaultConfigChangeRevoked")
        .withArgs(Param.DailyLimit)
        .and.to.emit(f.vault, "SocialVaultGuardianRemovalRevoked")
        .withArgs(f.g3.address)
        .and.to.emit(f.vault, "SocialVaultGuardianRemoved")
        .withArgs(f.other.address);
      expect(await f.vault.isLocked()).to.equal(true);
      expect(await f.vault.lockedAt()).to.equal(BigInt(t));
      expect(await f.vault.openWithdrawalIds()).to.deep.equal([]);
      expect((await f.vault.getWithdrawal(f.pending)).status).to.equal(Status.Cancelled);
      expect((await f.vault.getWithdrawal(f.approved)).status).to.equal(Status.Cancelled);
      expect(await f.vault.pendingConfigChange(Param.DailyLimit)).to.deep.equal([0n, 0n]);
      expect((await f.vault.guardianInfo(f.g3.address))[2]).to.equal(0n);
      expect((await f.vault.guardianInfo(f.other.address))[0]).to.equal(GuardianStatus.None);
      expect(await f.vault.guardianCount()).to.equal(3n);
    });

    it("can be called by an active guardian, not by a stranger or a pending guardian", async () => {
      const f = await load();
      await f.vault.connect(f.owner).addGuardian(f.other.address);
      for (const caller of [f.stranger, f.other]) {
        await expect(f.vault.connect(caller).lock())
          .to.be.revertedWithCustomError(f.vault, "SocialVaultUnauthorizedAccount")
          .withArgs(caller.address);
      }
      const t = await nextBlockAt(connection);
      await expect(f.vault.connect(f.g2).lock()).to.emit(f.vault, "SocialVaultLocked").withArgs(t, f.g2.address);
      await expect(f.vault.connect(f.owner).lock()).to.be.revertedWithCustomError(f.vault, "SocialVaultIsLocked").withArgs(t);
    });

    it("closes an expired open request as expired", async () => {
      const f = await load();
      const id = await request(f, USDC(1_000), f.recipient.address);
      await networkHelpers.time.increase(HOUR + 7 * DAY + 1);
      await expect(f.vault.connect(f.owner).lock())
        .to.emit(f.vault, "SocialVaultWithdrawalExpired")
        .withArgs(id)
        .and.not.to.emit(f.vault, "SocialVaultWithdrawalCancelled");
    });

    it("keeps the locking guardian's own submitted removal", async () => {
      const f = await load();
      await f.vault.connect(f.owner).removeGuardian(f.g1.address);
      await f.vault.connect(f.owner).removeGuardian(f.g2.address);
      const receipt = await (await f.vault.connect(f.g1).lock()).wait();
      const revoked = receipt!.logs
        .map((log) => f.vault.interface.parseLog(log))
        .filter((event) => event?.name === "SocialVaultGuardianRemovalRevoked")
        .map((event) => event!.args.guardian);
      expect(revoked).to.deep.equal([f.g2.address]);
      expect((await f.vault.guardianInfo(f.g1.address))[2]).to.not.equal(0n);
    });

    it("makes money moves and risk-raising changes revert with IsLocked", async () => {
      const f = await withOpenRequests();
      await f.vault.connect(f.owner).removeGuardian(f.g3.address);
      const t = await nextBlockAt(connection);
      await f.vault.connect(f.g1).lock();
      const v = f.vault;
      const reverting = [
        () => v.connect(f.owner).withdraw(1, f.recipient.address),
        () => v.connect(f.owner).requestWithdrawal(1, f.recipient.address),
        () => v.connect(f.g3).approveWithdrawal(f.pending),
        () => v.approveWithdrawalWithSignatures(f.pending, []),
        () => v.executeWithdrawal(f.approved),
        () => v.connect(f.owner).cancelWithdrawal(f.pending),
        () => v.connect(f.owner).addGuardian(f.other.address),
        () => v.connect(f.owner).removeGuardian(f.g2.address),
        () => v.acceptGuardianRemoval(f.g3.address),
        () => v.connect(f.owner).setDailyLimit(USDC(101)),
        () => v.connect(f.owner).setRequiredSignatures(1),
        () => v.acceptConfigChange(Param.DailyLimit),
      ];
      for (const call of reverting) {
        await expect(call()).to.be.revertedWithCustomError(v, "SocialVaultIsLocked").withArgs(t);
      }
    });

    it("still accepts deposits and risk-lowering changes while locked", async () => {
      const f = await load();
      await f.vault.connect(f.owner).lock();
      await f.usdc.mint(f.stranger.address, USDC(3));
      await f.usdc.connect(f.stranger).approve(await f.vault.getAddress(), USDC(3));
      await expect(f.vault.connect(f.stranger).deposit(USDC(3))).to.emit(f.vault, "SocialVaultDeposited");
      await expect(f.vault.connect(f.owner).setDailyLimit(USDC(10))).to.emit(f.vault, "SocialVaultConfigUpdated");
      await expect(f.vault.connect(f.owner).setTimelockDuration(2 * HOUR)).to.emit(f.vault, "SocialVaultConfigUpdated");
      await expect(f.vault.connect(f.owner).setRequiredSignatures(3)).to.emit(f.vault, "SocialVaultConfigUpdated");
      await expect(f.vault.connect(f.owner).setDuressCommitment(commitmentOf(DURESS_KEY))).to.emit(
        f.vault,
        "SocialVaultDuressCommitmentSet",
      );
      await expect(f.vault.connect(f.owner).setTimelockDuration(HOUR))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultIsLocked")
        .withArgs(await f.vault.lockedAt());
    });
  });

  describe("duressLock", () => {
    it("locks exactly like lock() for anyone presenting the key, and consumes the key", async () => {
      const f = await withOpenRequests();
      const t = await nextBlockAt(connection);
      await expect(f.vault.connect(f.stranger).duressLock(DURESS_KEY))
        .to.emit(f.vault, "SocialVaultLocked")
        .withArgs(t, f.stranger.address)
        .and.to.emit(f.vault, "SocialVaultWithdrawalCancelled")
        .withArgs(f.pending)
        .and.to.emit(f.vault, "SocialVaultWithdrawalCancelled")
        .withArgs(f.approved)
        .and.to.emit(f.vault, "SocialVaultDuressCommitmentSet")
        .withArgs(ethers.ZeroHash);
      expect(await f.vault.isLocked()).to.equal(true);
      expect(await f.vault.duressCommitment()).to.equal(ethers.ZeroHash);
      // The revealed key no longer works.
      await expect(f.vault.duressLock(DURESS_KEY)).to.be.revertedWithCustomError(f.vault, "SocialVaultInvalidDuressKey");
    });

    it("reverts InvalidDuressKey on a wrong key or when no commitment is set", async () => {
      const f = await load();
      await expect(f.vault.duressLock(ethers.id("123456"))).to.be.revertedWithCustomError(f.vault, "SocialVaultInvalidDuressKey");
      await expect(f.vault.connect(f.owner).setDuressCommitment(ethers.ZeroHash))
        .to.emit(f.vault, "SocialVaultDuressCommitmentSet")
        .withArgs(ethers.ZeroHash);
      await expect(f.vault.duressLock(DURESS_KEY)).to.be.revertedWithCustomError(f.vault, "SocialVaultInvalidDuressKey");
      await expect(f.vault.duressLock(ethers.ZeroHash)).to.be.revertedWithCustomError(f.vault, "SocialVaultInvalidDuressKey");
    });

    it("on an already locked vault only consumes the key", async () => {
      const f = await load();
      await f.vault.connect(f.owner).lock();
      const lockedAt = await f.vault.lockedAt();
      await expect(f.vault.connect(f.stranger).duressLock(DURESS_KEY))
        .to.emit(f.vault, "SocialVaultDuressCommitmentSet")
        .withArgs(ethers.ZeroHash)
        .and.not.to.emit(f.vault, "SocialVaultLocked");
      expect(await f.vault.lockedAt()).to.equal(lockedAt);
    });

    it("accepts a replaced commitment", async () => {
      const f = await load();
      const newKey = ethers.id("hmac-sha256(server secret, vault || version 2 || 654321)");
      await expect(f.vault.connect(f.owner).setDuressCommitment(commitmentOf(newKey)))
        .to.emit(f.vault, "SocialVaultDuressCommitmentSet")
        .withArgs(commitmentOf(newKey));
      await expect(f.vault.duressLock(DURESS_KEY)).to.be.revertedWithCustomError(f.vault, "SocialVaultInvalidDuressKey");
      await expect(f.vault.duressLock(newKey)).to.emit(f.vault, "SocialVaultLocked");
    });
  });

  describe("unlock", () => {
    it("unlocks with guardian approvals once the timelock has passed since the request", async () => {
      const f = await load();
      await f.vault.connect(f.stranger).duressLock(DURESS_KEY);
      const t = await nextBlockAt(connection);
      await expect(f.vault.connect(f.g1).requestUnlock())
        .to.emit(f.vault, "SocialVaultUnlockRequested")
        .withArgs(f.g1.address, t + HOUR, t + OWNER_UNLOCK_DELAY);
      await expect(f.vault.connect(f.g1).approveUnlock()).to.emit(f.vault, "SocialVaultUnlockApproved").withArgs(f.g1.address, 1);
      await expect(f.vault.connect(f.g3).approveUnlock()).to.emit(f.vault, "SocialVaultUnlockApproved").withArgs(f.g3.address, 2);
      expect(await f.vault.unlockRequest()).to.deep.equal([BigInt(t), 2n, BigInt(t + HOUR), BigInt(t + OWNER_UNLOCK_DELAY)]);
      expect(await f.vault.hasApprovedUnlock(f.g3.address)).to.equal(true);
      expect(await f.vault.hasApprovedUnlock(f.g2.address)).to.equal(false);
      await expect(f.vault.unlock())
        .to.be.revertedWithCustomError(f.vault, "SocialVaultTimelockActive")
        .withArgs(t + HOUR);

      await networkHelpers.time.setNextBlockTimestamp(t + HOUR);
      await expect(f.vault.connect(f.stranger).unlock()).to.emit(f.vault, "SocialVaultUnlocked").withArgs(f.stranger.address);
      expect(await f.vault.isLocked()).to.equal(false);
      expect(await f.vault.lockedAt()).to.equal(0n);
      expect(await f.vault.unlockRequest()).to.deep.equal([0n, 0n, 0n, 0n]);
      expect(await f.vault.hasApprovedUnlock(f.g3.address)).to.equal(false);
      await expect(f.vault.connect(f.owner).withdraw(USDC(1), f.recipient.address)).to.emit(f.vault, "SocialVaultWithdrawn");
    });

    it("lets the owner alone unlock only after OWNER_UNLOCK_DELAY (a coerced owner cannot undo a lock)", async () => {
      const f = await load();
      await f.vault.connect(f.owner).lock();
      const t = await nextBlockAt(connection);
      await expect(f.vault.connect(f.owner).requestUnlock())
        .to.emit(f.vault, "SocialVaultUnlockRequested")
        .withArgs(f.owner.address, t + HOUR, t + OWNER_UNLOCK_DELAY);
      await f.vault.connect(f.g1).approveUnlock();
      await networkHelpers.time.setNextBlockTimestamp(t + HOUR);
      await expect(f.vault.connect(f.owner).unlock())
        .to.be.revertedWithCustomError(f.vault, "SocialVaultTimelockActive")
        .withArgs(t + OWNER_UNLOCK_DELAY);
      await expect(f.vault.connect(f.g1).unlock()).to.be.revertedWithCustomError(f.vault, "SocialVaultUnlockNotApproved").withArgs(1, 2);
      await networkHelpers.time.setNextBlockTimestamp(t + OWNER_UNLOCK_DELAY);
      await expect(f.vault.connect(f.owner).unlock()).to.emit(f.vault, "SocialVaultUnlocked").withArgs(f.owner.address);
    });

    it("lets the owner of a vault without guardians recover after the delay", async () => {
      const { factory, usdc, other } = await load();
      await factory.connect(other).createVault(USDC(10), HOUR, 1, commitmentOf(DURESS_KEY));
      const vault = await ethers.getContractAt("SocialVault", await factory.vaultOf(other.address));
      await usdc.mint(await vault.getAddress(), USDC(10));
      await vault.duressLock(DURESS_KEY);
      await vault.connect(other).requestUnlock();
      await networkHelpers.time.increase(OWNER_UNLOCK_DELAY);
      await vault.connect(other).unlock();
      await expect(vault.connect(other).withdraw(USDC(10), other.address)).to.emit(vault, "SocialVaultWithdrawn");
    });

    it("rejects unlock calls in the wrong state or by the wrong caller", async () => {
      const f = await load();
      await expect(f.vault.connect(f.owner).requestUnlock()).to.be.revertedWithCustomError(f.vault, "SocialVaultNotLocked");
      await expect(f.vault.connect(f.g1).approveUnlock()).to.be.revertedWithCustomError(f.vault, "SocialVaultNotLocked");
      await expect(f.vault.unlock()).to.be.revertedWithCustomError(f.vault, "SocialVaultNotLocked");

      await f.vault.connect(f.owner).lock();
      await expect(f.vault.connect(f.g1).approveUnlock()).to.be.revertedWithCustomError(f.vault, "SocialVaultUnlockNotRequested");
      await expect(f.vault.unlock()).to.be.revertedWithCustomError(f.vault, "SocialVaultUnlockNotRequested");
      await expect(f.vault.connect(f.stranger).requestUnlock())
        .to.be.revertedWithCustomError(f.vault, "SocialVaultUnauthorizedAccount")
        .withArgs(f.stranger.address);

      const t = await nextBlockAt(connection);
      await f.vault.connect(f.owner).requestUnlock();
      await expect(f.vault.connect(f.g2).requestUnlock())
        .to.be.revertedWithCustomError(f.vault, "SocialVaultUnlockAlreadyRequested")
        .withArgs(t);
      for (const caller of [f.owner, f.stranger]) {
        await expect(f.vault.connect(caller).approveUnlock())
          .to.be.revertedWithCustomError(f.vault, "SocialVaultNotGuardian")
          .withArgs(caller.address);
      }
      await f.vault.connect(f.g2).approveUnlock();
      await expect(f.vault.connect(f.g2).approveUnlock())
        .to.be.revertedWithCustomError(f.vault, "SocialVaultUnlockAlreadyApproved")
        .withArgs(f.g2.address);
    });

    it("leaves cancelled requests cancelled after an unlock", async () => {
      const f = await withOpenRequests();
      await f.vault.connect(f.owner).lock();
      await f.vault.connect(f.owner).requestUnlock();
      await f.vault.connect(f.g1).approveUnlock();
      await f.vault.connect(f.g2).approveUnlock();
      await networkHelpers.time.increase(HOUR);
      await f.vault.unlock();
      await expect(f.vault.executeWithdrawal(f.approved))
        .to.be.revertedWithCustomError(f.vault, "SocialVaultWithdrawalNotOpen")
        .withArgs(f.approved, Status.Cancelled);
    });
  });
});
