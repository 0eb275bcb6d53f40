// The forwarder as the service's relayer uses it: requests signed by managed wallets without ETH, relayed by an
// account that pays the gas, and the requests it must refuse. The targets' own behaviour under forwarding is tested
// beside each contract (*.metatx.test.ts).
import { anyValue } from "@nomicfoundation/hardhat-ethers-chai-matchers/withArgs";
import { expect } from "chai";
import { network } from "hardhat";
import { HOUR, USDC } from "../social/social-fixture.js";
import { deployPlatform, FORWARDER_DOMAIN, inSeconds, signRequest } from "./metatx-helpers.js";

const { ethers, networkHelpers } = await network.create();
const platform = () => deployPlatform(ethers);
const load = () => networkHelpers.loadFixture(platform);

describe("TrustMintForwarder", () => {
  /** The user's request to create their social vault (daily limit 100 USDC, 1 hour, 1 signature). */
  async function createVaultRequest(f: Awaited<ReturnType<typeof load>>, options: Parameters<typeof signRequest>[4] = {}) {
    const data = f.factory.interface.encodeFunctionData("createVault", [USDC(100), HOUR, 1, ethers.ZeroHash]);
    return signRequest(f.forwarder, f.user, f.factory, data, options);
  }

  describe("deployment", () => {
    it("has the EIP-712 domain TrustMintForwarder / 1", async () => {
      const { forwarder } = await load();
      const domain = await forwarder.eip712Domain();
      expect(domain.name).to.equal(FORWARDER_DOMAIN.name);
      expect(domain.version).to.equal(FORWARDER_DOMAIN.version);
      expect(domain.chainId).to.equal((await ethers.provider.getNetwork()).chainId);
      expect(domain.verifyingContract).to.equal(await forwarder.getAddress());
    });

    it("is trusted by the vault, the loan book, the factory, the vault implementation and every clone", async () => {
      const { forwarder, vault, book, factory, alice } = await load();
      await factory.connect(alice).createVault(USDC(100), HOUR, 1, ethers.ZeroHash);
      const implementation = await ethers.getContractAt("SocialVault", await factory.implementation());
      const clone = await ethers.getContractAt("SocialVault", await factory.vaultOf(alice.address));
      const address = await forwarder.getAddress();
      for (const target of [vault, book, factory, implementation, clone]) {
        expect(await target.trustedForwarder()).to.equal(address);
        expect(await target.isTrustedForwarder(address)).to.equal(true);
        expect(await target.isTrustedForwarder(alice.address)).to.equal(false);
      }
    });
  });

  describe("execute", () => {
    it("relays a request signed by a wallet without ETH; the target acts for the signer and the relayer pays", async () => {
      const f = await load();
      const request = await createVaultRequest(f);
      const relayerBalance = await ethers.provider.getBalance(f.relayer.address);
      expect(await f.forwarder.verify(request)).to.equal(true);

      await expect(f.forwarder.connect(f.relayer).execute(request))
        .to.emit(f.factory, "SocialVaultCreated")
        .withArgs(f.user.address, await f.factory.predictVault(f.user.address), USDC(100), HOUR, 1)
        .and.to.emit(f.forwarder, "ExecutedForwardRequest")
        .withArgs(f.user.address, 0n, true);

      const vault = await ethers.getContractAt("SocialVault", await f.factory.vaultOf(f.user.address));
      expect(await vault.owner()).to.equal(f.user.address);
      expect(await f.forwarder.nonces(f.user.address)).to.equal(1n);
      expect(await ethers.provider.getBalance(f.user.address)).to.equal(0n);
      expect(await ethers.provider.getBalance(f.relayer.address)).to.be.lessThan(relayerBalance);
    });

    it("reverts when the request is signed by someone else", async () => {
      const f = await load();
      const data = f.factory.interface.encodeFunctionData("createVault", [USDC(100), HOUR, 1, ethers.ZeroHash]);
      const forged = await signRequest(f.forwarder, f.other, f.factory, data, { from: f.user.address });
      expect(await f.forwarder.verify(forged)).to.equal(false);
      await expect(f.forwarder.connect(f.relayer).execute(forged))
        .to.be.revertedWithCustomError(f.forwarder, "ERC2771ForwarderInvalidSigner")
        .withArgs(f.other.address, f.user.address);
    });

    it("reverts when a signed field was changed after signing", async () => {
      const f = await load();
      const request = await createVaultRequest(f);
      const tampered = { ...request, data: f.factory.interface.encodeFunctionData("createVault", [USDC(1_000), HOUR, 1, ethers.ZeroHash]) };
      await expect(f.forwarder.connect(f.relayer).execute(tampered))
        .to.be.revertedWithCustomError(f.forwarder, "ERC2771ForwarderInvalidSigner")
        .withArgs(anyValue, f.user.address);
    });

    it("reverts when the deadline has passed", async () => {
      const f = await load();
      const deadline = await inSeconds(ethers, 60);
      const request = await createVaultRequest(f, { deadline });
      await networkHelpers.time.increaseTo(deadline + 1n);
      expect(await f.forwarder.verify(request)).to.equal(false);
      await expect(f.forwarder.connect(f.relayer).execute(request))
        .to.be.revertedWithCustomError(f.forwarder, "ERC2771ForwarderExpiredRequest")
        .withArgs(deadline);
    });

    it("reverts when the nonce was already used (a replay) or is not the next one", async () => {
      const f = await load();
      const request = await createVaultRequest(f);
      await f.forwarder.connect(f.relayer).execute(request);
      // The signature is over nonce 0; the forwarder now hashes nonce 1, so the recovered signer differs.
      await expect(f.forwarder.connect(f.relayer).execute(request))
        .to.be.revertedWithCustomError(f.forwarder, "ERC2771ForwarderInvalidSigner")
        .withArgs(anyValue, f.user.address);

      const skipping = await createVaultRequest(f, { nonce: 2n });
      await expect(f.forwarder.connect(f.relayer).execute(skipping))
        .to.be.revertedWithCustomError(f.forwarder, "ERC2771ForwarderInvalidSigner")
        .withArgs(anyValue, f.user.address);
      expect(await f.forwarder.nonces(f.user.address)).to.equal(1n);
    });

    it("reverts when the target does not trust the forwarder (USDC, the rate model, another forwarder's vault)", async () => {
      const f = await load();
      const forwarderAddress = await f.forwarder.getAddress();
      // USDC is not ERC-2771-aware: a forwarded transfer would move the forwarder's tokens, so it is refused.
      const transfer = await signRequest(
        f.forwarder,
        f.user,
        f.usdc,
        f.usdc.interface.encodeFunctionData("transfer", [f.other.address, USDC(1)]),
      );
      await expect(f.forwarder.connect(f.relayer).execute(transfer))
        .to.be.revertedWithCustomError(f.forwarder, "ERC2771UntrustfulTarget")
        .withArgs(await f.usdc.getAddress(), forwarderAddress);

      const ratePoints = await signRequest(f.forwarder, f.user, f.model, f.model.interface.encodeFunctionData("ratePoints"));
      await expect(f.forwarder.connect(f.relayer).execute(ratePoints))
        .to.be.revertedWithCustomError(f.forwarder, "ERC2771UntrustfulTarget")
        .withArgs(await f.model.getAddress(), forwarderAddress);

      const otherForwarder = await ethers.deployContract("TrustMintForwarder");
      const otherVault = await ethers.deployContract("StakingVault", [
        await f.usdc.getAddress(),
        await f.model.getAddress(),
        f.admin.address,
        await otherForwarder.getAddress(),
      ]);
      const deposit = await signRequest(
        f.forwarder,
        f.user,
        otherVault,
        otherVault.interface.encodeFunctionData("deposit", [USDC(1), f.user.address]),
      );
      await expect(f.forwarder.connect(f.relayer).execute(deposit))
        .to.be.revertedWithCustomError(f.forwarder, "ERC2771UntrustfulTarget")
        .withArgs(await otherVault.getAddress(), forwarderAddress);
      expect(await f.usdc.balanceOf(f.user.address)).to.equal(USDC(10_000));
    });

    it("reverts with FailedCall when the target reverts, and leaves the nonce unused", async () => {
      const f = await load();
      // The user has no tmUSDC: the vault reverts ERC4626ExceededMaxRedeem, which execute does not bubble up.
      const redeem = await signRequest(
        f.forwarder,
        f.user,
        f.vault,
        f.vault.interface.encodeFunctionData("redeem", [1n, f.user.address, f.user.address]),
      );
      await expect(f.forwarder.connect(f.relayer).execute(redeem)).to.be.revertedWithCustomError(f.forwarder, "FailedCall");
      expect(await f.forwarder.nonces(f.user.address)).to.equal(0n);
      // Nonce 0 is still free for the next request.
      await f.forwarder.connect(f.relayer).execute(await createVaultRequest(f));
      expect(await f.forwarder.nonces(f.user.address)).to.equal(1n);
    });

    it("reverts when the ETH sent differs from the request's value", async () => {
      const f = await load();
      const request = await createVaultRequest(f);
      await expect(f.forwarder.connect(f.relayer).execute(request, { value: 1n }))
        .to.be.revertedWithCustomError(f.forwarder, "ERC2771ForwarderMismatchedValue")
        .withArgs(0n, 1n);
    });
  });

  describe("executeBatch", () => {
    it("runs every request; a target's revert consumes its nonce and is reported, not reverted", async () => {
      const f = await load();
      const failing = await signRequest(
        f.forwarder,
        f.user,
        f.vault,
        f.vault.interface.encodeFunctionData("redeem", [1n, f.user.address, f.user.address]),
      );
      const create = await createVaultRequest(f, { nonce: 1n });
      await expect(f.forwarder.connect(f.relayer).executeBatch([failing, create], ethers.ZeroAddress))
        .to.emit(f.forwarder, "ExecutedForwardRequest")
        .withArgs(f.user.address, 0n, false)
        .and.to.emit(f.forwarder, "ExecutedForwardRequest")
        .withArgs(f.user.address, 1n, true);
      expect(await f.forwarder.nonces(f.user.address)).to.equal(2n);
      expect(await f.factory.vaultOf(f.user.address)).to.not.equal(ethers.ZeroAddress);
    });

    it("skips an invalid request when a refund receiver is given", async () => {
      const f = await load();
      const create = await createVaultRequest(f);
      const expired = await createVaultRequest(f, { nonce: 1n, deadline: await inSeconds(ethers, -1) });
      const tx = f.forwarder.connect(f.relayer).executeBatch([create, expired], f.relayer.address);
      await expect(tx).to.emit(f.forwarder, "ExecutedForwardRequest").withArgs(f.user.address, 0n, true);
      const receipt = await (await tx).wait();
      const executed = receipt!.logs.filter((log) => f.forwarder.interface.parseLog(log)?.name === "ExecutedForwardRequest");
      expect(executed).to.have.length(1);
      expect(await f.forwarder.nonces(f.user.address)).to.equal(1n);
    });

    it("reverts when a request is invalid and no refund receiver is given", async () => {
      const f = await load();
      const deadline = await inSeconds(ethers, -1);
      const expired = await createVaultRequest(f, { deadline });
      await expect(f.forwarder.connect(f.relayer).executeBatch([expired], ethers.ZeroAddress))
        .to.be.revertedWithCustomError(f.forwarder, "ERC2771ForwarderExpiredRequest")
        .withArgs(deadline);
    });
  });
});
