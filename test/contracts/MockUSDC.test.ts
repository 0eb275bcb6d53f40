import { anyValue } from "@nomicfoundation/hardhat-ethers-chai-matchers/withArgs";
import { expect } from "chai";
import { Signature, TypedDataEncoder } from "ethers";
import { network } from "hardhat";
import { signPermit, signReceiveAuthorization } from "./metatx/metatx-helpers.js";

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

describe("MockUSDC transfers with authorization (EIP-3009)", () => {
  async function deploy() {
    const [admin, holder, payee, stranger] = await ethers.getSigners();
    const usdc = await ethers.deployContract("MockUSDC", [admin.address]);
    await usdc.mint(holder.address, 10_000_000n);
    return { usdc, holder, payee, stranger };
  }
  const NONCE = ethers.id("authorization 1");

  it("has EIP-3009's type hashes", async () => {
    const { usdc } = await deploy();
    expect(await usdc.RECEIVE_WITH_AUTHORIZATION_TYPEHASH()).to.equal(
      ethers.id("ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"),
    );
    expect(await usdc.TRANSFER_WITH_AUTHORIZATION_TYPEHASH()).to.equal(
      ethers.id("TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"),
    );
    expect(await usdc.CANCEL_AUTHORIZATION_TYPEHASH()).to.equal(ethers.id("CancelAuthorization(address authorizer,bytes32 nonce)"));
  });

  it("moves the holder's USDC to the payee who submits it, once per nonce", async () => {
    const { usdc, holder, payee } = await deploy();
    const auth = await signReceiveAuthorization(usdc, holder, payee.address, 4_000_000n, NONCE);
    const submit = () =>
      usdc
        .connect(payee)
        .receiveWithAuthorization(
          holder.address,
          payee.address,
          4_000_000n,
          auth.validAfter,
          auth.validBefore,
          NONCE,
          auth.v,
          auth.r,
          auth.s,
        );
    await expect(submit()).to.emit(usdc, "AuthorizationUsed").withArgs(holder.address, NONCE);
    expect(await usdc.balanceOf(payee.address)).to.equal(4_000_000n);
    expect(await usdc.authorizationState(holder.address, NONCE)).to.equal(true);
    await expect(submit()).to.be.revertedWithCustomError(usdc, "ERC3009AuthorizationUsed").withArgs(holder.address, NONCE);
  });

  it("refuses a caller other than the payee, another signer, changed values, and a time outside its window", async () => {
    const { usdc, holder, payee, stranger } = await deploy();
    const auth = await signReceiveAuthorization(usdc, holder, payee.address, 4_000_000n, NONCE);
    const args = [holder.address, payee.address, 4_000_000n, auth.validAfter, auth.validBefore, NONCE, auth.v, auth.r, auth.s] as const;
    await expect(usdc.connect(stranger).receiveWithAuthorization(...args))
      .to.be.revertedWithCustomError(usdc, "ERC3009CallerNotPayee")
      .withArgs(stranger.address, payee.address);
    await expect(
      usdc
        .connect(payee)
        .receiveWithAuthorization(
          holder.address,
          payee.address,
          5_000_000n,
          auth.validAfter,
          auth.validBefore,
          NONCE,
          auth.v,
          auth.r,
          auth.s,
        ),
    )
      .to.be.revertedWithCustomError(usdc, "ERC3009InvalidSignature")
      .withArgs(holder.address);
    const forged = await signReceiveAuthorization(usdc, stranger, payee.address, 4_000_000n, NONCE, { from: holder.address });
    await expect(
      usdc
        .connect(payee)
        .receiveWithAuthorization(holder.address, payee.address, 4_000_000n, 0n, forged.validBefore, NONCE, forged.v, forged.r, forged.s),
    )
      .to.be.revertedWithCustomError(usdc, "ERC3009InvalidSignature")
      .withArgs(holder.address);
    const now = BigInt((await ethers.provider.getBlock("latest"))!.timestamp);
    const late = await signReceiveAuthorization(usdc, holder, payee.address, 1n, NONCE, { validBefore: now });
    await expect(usdc.connect(payee).receiveWithAuthorization(holder.address, payee.address, 1n, 0n, now, NONCE, late.v, late.r, late.s))
      .to.be.revertedWithCustomError(usdc, "ERC3009AuthorizationExpired")
      .withArgs(now);
    const early = await signReceiveAuthorization(usdc, holder, payee.address, 1n, NONCE, { validAfter: now + 1_000n });
    await expect(
      usdc
        .connect(payee)
        .receiveWithAuthorization(holder.address, payee.address, 1n, now + 1_000n, early.validBefore, NONCE, early.v, early.r, early.s),
    )
      .to.be.revertedWithCustomError(usdc, "ERC3009AuthorizationNotYetValid")
      .withArgs(now + 1_000n);
    expect(await usdc.balanceOf(payee.address)).to.equal(0n);
    expect(await usdc.authorizationState(holder.address, NONCE)).to.equal(false);
  });

  it("takes an EIP-1271 contract wallet's authorization, and a cancelled nonce can no longer be used", async () => {
    const { usdc, holder, payee } = await deploy();
    const wallet = await ethers.deployContract("MockContractWallet", [holder.address]);
    await usdc.mint(await wallet.getAddress(), 2_000_000n);
    const auth = await signReceiveAuthorization(usdc, holder, payee.address, 2_000_000n, NONCE, { from: await wallet.getAddress() });
    await usdc
      .connect(payee)
      .receiveWithAuthorization(await wallet.getAddress(), payee.address, 2_000_000n, 0n, auth.validBefore, NONCE, auth.v, auth.r, auth.s);
    expect(await usdc.balanceOf(payee.address)).to.equal(2_000_000n);

    const other = ethers.id("authorization 2");
    const domain = {
      name: await usdc.name(),
      version: await usdc.version(),
      chainId: (await ethers.provider.getNetwork()).chainId,
      verifyingContract: await usdc.getAddress(),
    };
    const cancel = Signature.from(
      await holder.signTypedData(
        domain,
        {
          CancelAuthorization: [
            { name: "authorizer", type: "address" },
            { name: "nonce", type: "bytes32" },
          ],
        },
        {
          authorizer: holder.address,
          nonce: other,
        },
      ),
    );
    await expect(usdc.connect(payee).cancelAuthorization(holder.address, other, cancel.v, cancel.r, cancel.s))
      .to.emit(usdc, "AuthorizationCanceled")
      .withArgs(holder.address, other);
    const late = await signReceiveAuthorization(usdc, holder, payee.address, 1n, other);
    await expect(
      usdc.connect(payee).receiveWithAuthorization(holder.address, payee.address, 1n, 0n, late.validBefore, other, late.v, late.r, late.s),
    )
      .to.be.revertedWithCustomError(usdc, "ERC3009AuthorizationUsed")
      .withArgs(holder.address, other);
  });
});
