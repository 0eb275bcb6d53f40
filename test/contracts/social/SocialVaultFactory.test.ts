import { expect } from "chai";
import { network } from "hardhat";
import { commitmentOf, DURESS_KEY, HOUR, USDC } from "./social-fixture.js";

const { ethers, networkHelpers } = await network.create();

async function deployFactory() {
  const [deployer, owner, other, stranger] = await ethers.getSigners();
  const usdc = await ethers.deployContract("MockUSDC", [deployer.address]);
  const forwarder = await ethers.deployContract("TrustMintForwarder");
  const factory = await ethers.deployContract("SocialVaultFactory", [await usdc.getAddress(), await forwarder.getAddress()]);
  return { usdc, forwarder, factory, deployer, owner, other, stranger };
}

describe("SocialVaultFactory", () => {
  describe("constructor", () => {
    it("deploys the implementation and records the token", async () => {
      const { usdc, factory } = await networkHelpers.loadFixture(deployFactory);
      expect(await factory.asset()).to.equal(await usdc.getAddress());
      const implementation = await ethers.getContractAt("SocialVault", await factory.implementation());
      expect(await implementation.asset()).to.equal(await usdc.getAddress());
      expect(await implementation.factory()).to.equal(await factory.getAddress());
    });

    it("passes its trusted forwarder to the implementation, so every clone shares it", async () => {
      const { forwarder, factory } = await networkHelpers.loadFixture(deployFactory);
      const implementation = await ethers.getContractAt("SocialVault", await factory.implementation());
      expect(await factory.trustedForwarder()).to.equal(await forwarder.getAddress());
      expect(await implementation.trustedForwarder()).to.equal(await forwarder.getAddress());
    });

    it("reverts on a zero token address", async () => {
      const { factory, forwarder } = await networkHelpers.loadFixture(deployFactory);
      await expect(
        ethers.deployContract("SocialVaultFactory", [ethers.ZeroAddress, await forwarder.getAddress()]),
      ).to.be.revertedWithCustomError(factory, "SocialVaultFactoryZeroAddress");
    });

    it("reverts on a zero forwarder address", async () => {
      const { factory, usdc } = await networkHelpers.loadFixture(deployFactory);
      await expect(
        ethers.deployContract("SocialVaultFactory", [await usdc.getAddress(), ethers.ZeroAddress]),
      ).to.be.revertedWithCustomError(factory, "SocialVaultFactoryZeroAddress");
    });
  });

  describe("createVault", () => {
    it("creates the caller's vault at the predicted address and emits SocialVaultCreated", async () => {
      const { usdc, factory, owner } = await networkHelpers.loadFixture(deployFactory);
      const predicted = await factory.predictVault(owner.address);
      expect(await factory.vaultOf(owner.address)).to.equal(ethers.ZeroAddress);
      const vault = await ethers.getContractAt("SocialVault", predicted);

      await expect(factory.connect(owner).createVault(USDC(250), 2 * HOUR, 3, commitmentOf(DURESS_KEY)))
        .to.emit(factory, "SocialVaultCreated")
        .withArgs(owner.address, predicted, USDC(250), 2 * HOUR, 3)
        .and.to.emit(vault, "SocialVaultDuressCommitmentSet")
        .withArgs(commitmentOf(DURESS_KEY));

      expect(await factory.vaultOf(owner.address)).to.equal(predicted);
      expect(await vault.owner()).to.equal(owner.address);
      expect(await vault.asset()).to.equal(await usdc.getAddress());
      expect(await vault.factory()).to.equal(await factory.getAddress());
      expect(await vault.dailyLimit()).to.equal(USDC(250));
      expect(await vault.timelockDuration()).to.equal(2 * HOUR);
      expect(await vault.requiredSignatures()).to.equal(3n);
      expect(await vault.duressCommitment()).to.equal(commitmentOf(DURESS_KEY));
      expect(await vault.isLocked()).to.equal(false);
      expect(await vault.guardianCount()).to.equal(0n);
      expect(await vault.withdrawalCount()).to.equal(0n);
      expect(await vault.remainingDailyLimit()).to.equal(USDC(250));
    });

    it("gives each owner a distinct vault and accepts no duress commitment", async () => {
      const { factory, owner, other } = await networkHelpers.loadFixture(deployFactory);
      await factory.connect(owner).createVault(USDC(1), HOUR, 1, ethers.ZeroHash);
      await expect(factory.connect(other).createVault(USDC(1), HOUR, 1, ethers.ZeroHash)).not.to.emit(
        await ethers.getContractAt("SocialVault", await factory.predictVault(other.address)),
        "SocialVaultDuressCommitmentSet",
      );
      const [a, b] = [await factory.vaultOf(owner.address), await factory.vaultOf(other.address)];
      expect(a).to.not.equal(b);
      expect(b).to.equal(await factory.predictVault(other.address));
      expect(await (await ethers.getContractAt("SocialVault", b)).duressCommitment()).to.equal(ethers.ZeroHash);
    });

    it("reverts on a second vault for the same owner", async () => {
      const { factory, owner } = await networkHelpers.loadFixture(deployFactory);
      await factory.connect(owner).createVault(USDC(1), HOUR, 1, ethers.ZeroHash);
      await expect(factory.connect(owner).createVault(USDC(1), HOUR, 1, ethers.ZeroHash))
        .to.be.revertedWithCustomError(factory, "SocialVaultFactoryVaultExists")
        .withArgs(owner.address, await factory.vaultOf(owner.address));
    });

    it("rejects a timelock outside 3600..604800 seconds", async () => {
      const { factory, owner } = await networkHelpers.loadFixture(deployFactory);
      const vault = await ethers.getContractAt("SocialVault", await factory.implementation());
      for (const duration of [0, HOUR - 1, 7 * 24 * HOUR + 1]) {
        await expect(factory.connect(owner).createVault(USDC(1), duration, 1, ethers.ZeroHash))
          .to.be.revertedWithCustomError(vault, "SocialVaultInvalidTimelockDuration")
          .withArgs(duration, HOUR, 7 * 24 * HOUR);
      }
      await factory.connect(owner).createVault(USDC(1), 7 * 24 * HOUR, 1, ethers.ZeroHash);
    });

    it("rejects requiredSignatures of 0 or above MAX_GUARDIANS", async () => {
      const { factory, owner } = await networkHelpers.loadFixture(deployFactory);
      const vault = await ethers.getContractAt("SocialVault", await factory.implementation());
      for (const required of [0, 11]) {
        await expect(factory.connect(owner).createVault(USDC(1), HOUR, required, ethers.ZeroHash))
          .to.be.revertedWithCustomError(vault, "SocialVaultInvalidRequiredSignatures")
          .withArgs(required, 10);
      }
      await factory.connect(owner).createVault(USDC(1), HOUR, 10, ethers.ZeroHash);
    });

    it("rejects a daily limit above 2^96 - 1", async () => {
      const { factory, owner } = await networkHelpers.loadFixture(deployFactory);
      const vault = await ethers.getContractAt("SocialVault", await factory.implementation());
      await expect(factory.connect(owner).createVault(2n ** 96n, HOUR, 1, ethers.ZeroHash))
        .to.be.revertedWithCustomError(vault, "SafeCastOverflowedUintDowncast")
        .withArgs(96, 2n ** 96n);
    });
  });

  describe("initialize", () => {
    it("cannot run on the implementation or twice on a clone", async () => {
      const { factory, owner } = await networkHelpers.loadFixture(deployFactory);
      const implementation = await ethers.getContractAt("SocialVault", await factory.implementation());
      await expect(implementation.initialize(owner.address, 1, HOUR, 1, ethers.ZeroHash)).to.be.revertedWithCustomError(
        implementation,
        "InvalidInitialization",
      );
      await factory.connect(owner).createVault(USDC(1), HOUR, 1, ethers.ZeroHash);
      const vault = await ethers.getContractAt("SocialVault", await factory.vaultOf(owner.address));
      await expect(vault.initialize(owner.address, 1, HOUR, 1, ethers.ZeroHash)).to.be.revertedWithCustomError(
        vault,
        "InvalidInitialization",
      );
    });

    it("accepts only the factory as caller, even on a fresh clone", async () => {
      const { factory, stranger } = await networkHelpers.loadFixture(deployFactory);
      // An EIP-1167 clone of the implementation deployed by someone else, not initialized yet.
      const implementation = (await factory.implementation()).slice(2).toLowerCase();
      const initCode = `0x3d602d80600a3d3981f3363d3d373d3d3d363d73${implementation}5af43d82803e903d91602b57fd5bf3`;
      const receipt = await (await stranger.sendTransaction({ data: initCode })).wait();
      const clone = await ethers.getContractAt("SocialVault", receipt!.contractAddress!);
      await expect(clone.connect(stranger).initialize(stranger.address, 1, HOUR, 1, ethers.ZeroHash))
        .to.be.revertedWithCustomError(clone, "SocialVaultUnauthorizedAccount")
        .withArgs(stranger.address);
    });
  });
});
