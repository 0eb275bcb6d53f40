import { anyValue } from "@nomicfoundation/hardhat-ethers-chai-matchers/withArgs";
import { expect } from "chai";
import { TypedDataEncoder } from "ethers";
import { network } from "hardhat";
import { signPermit } from "./metatx/metatx-helpers.js";

const { ethers } = await network.create();

describe("MockUSDC", () => {
  it("has 6 decimals and the USDC symbol", async () => {
    const [admin] = await ethers.getSigners();
    const usdc = await ethers.deployContract("MockUSDC", [admin.address]);
    expect(await usdc.decimals()).to.equal(6n);
    expect(await usdc.symbol()).to.equal("USDC");
  });

  it("emits Transfer on faucet mint and refuses other callers", async () => {
    const [admin, stranger] = await ethers.getSigners();
    const usdc = await ethers.deployContract("MockUSDC", [admin.address]);
    await expect(usdc.mint(stranger.address, 5_000_000n))
      .to.emit(usdc, "Transfer")
      .withArgs(ethers.ZeroAddress, stranger.address, 5_000_000n);
    await expect(usdc.connect(stranger).mint(stranger.address, 1n)).to.be.revertedWithCustomError(usdc, "AccessControlUnauthorizedAccount");
  });
});

describe("MockUSDC permit (EIP-2612)", () => {
  async function deploy() {
    const [admin, owner, spender] = await ethers.getSigners();
    const usdc = await ethers.deployContract("MockUSDC", [admin.address]);
    return { usdc, owner, spender };
  }

  it("signs over the domain that name() and version() give, as a relayer builds it for real USDC", async () => {
    const { usdc } = await deploy();
    expect(await usdc.name()).to.equal("USD Coin (test)");
    expect(await usdc.version()).to.equal("1");
    const domain = {
      name: await usdc.name(),
      version: await usdc.version(),
      chainId: (await ethers.provider.getNetwork()).chainId,
      verifyingContract: await usdc.getAddress(),
    };
    expect(await usdc.DOMAIN_SEPARATOR()).to.equal(TypedDataEncoder.hashDomain(domain));
    const eip712 = await usdc.eip712Domain();
    expect([eip712.name, eip712.version]).to.deep.equal([domain.name, domain.version]);
  });

  it("sets the allowance from the owner's signature, sent by anyone, and uses the nonce", async () => {
    const { usdc, owner, spender } = await deploy();
    const { deadline, v, r, s } = await signPermit(usdc, owner, spender.address, 7_000_000n);
    await expect(usdc.connect(spender).permit(owner.address, spender.address, 7_000_000n, deadline, v, r, s))
      .to.emit(usdc, "Approval")
      .withArgs(owner.address, spender.address, 7_000_000n);
    expect(await usdc.allowance(owner.address, spender.address)).to.equal(7_000_000n);
    expect(await usdc.nonces(owner.address)).to.equal(1n);
  });

  it("reverts when the deadline has passed, when replayed, or when signed by someone else", async () => {
    const { usdc, owner, spender } = await deploy();
    const latest = BigInt((await ethers.provider.getBlock("latest"))!.timestamp);
    const expired = await signPermit(usdc, owner, spender.address, 1n, { deadline: latest - 1n });
    await expect(usdc.permit(owner.address, spender.address, 1n, expired.deadline, expired.v, expired.r, expired.s))
      .to.be.revertedWithCustomError(usdc, "ERC2612ExpiredSignature")
      .withArgs(expired.deadline);

    const permit = await signPermit(usdc, owner, spender.address, 1n);
    await usdc.permit(owner.address, spender.address, 1n, permit.deadline, permit.v, permit.r, permit.s);
    await expect(usdc.permit(owner.address, spender.address, 1n, permit.deadline, permit.v, permit.r, permit.s))
      .to.be.revertedWithCustomError(usdc, "ERC2612InvalidSigner")
      .withArgs(anyValue, owner.address);

    const forged = await signPermit(usdc, spender, spender.address, 1n, { owner: owner.address });
    await expect(usdc.permit(owner.address, spender.address, 1n, forged.deadline, forged.v, forged.r, forged.s))
      .to.be.revertedWithCustomError(usdc, "ERC2612InvalidSigner")
      .withArgs(spender.address, owner.address);
  });
});
