import { expect } from "chai";
import { network } from "hardhat";

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
