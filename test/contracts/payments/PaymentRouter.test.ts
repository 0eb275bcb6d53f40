// The payment router's flows: payments with the fee split to the treasury, refunds from the merchant within what was
// paid, EIP-2612 permits, the admin's fee, and payments and refunds relayed through the TrustMintForwarder.
import { expect } from "chai";
import { network } from "hardhat";
import { forwarderAccount, inSeconds, signPermit, signRequest } from "../metatx/metatx-helpers.js";
import {
  balanceChanges,
  balancesOf,
  DEFAULT_FEE_BPS,
  deployPayments,
  feeOf,
  MAX_FEE_BPS,
  MAX_UINT128,
  type PaymentsFixture,
  USDC,
} from "./payments-fixture.js";

const { ethers, networkHelpers } = await network.create();

const REF = ethers.id("order-1");
const REFUND_REF = ethers.id("refund-1");

const load = () => networkHelpers.loadFixture(fixture);
async function fixture() {
  return deployPayments(ethers);
}

/** The fixture with payment REF: `payer` paid 100 USDC to `merchant` (1 USDC fee to the treasury). */
async function withPayment() {
  const f = await deployPayments(ethers);
  await f.router.connect(f.payer).pay(REF, f.merchant.address, USDC(100));
  return f;
}
const loadPaid = () => networkHelpers.loadFixture(withPayment);

/** A stored payment as a plain tuple: payer, merchant, amount, fee, refunded. */
async function paymentTuple(f: PaymentsFixture, ref: string) {
  const p = await f.router.paymentOf(ref);
  return [p.payer, p.merchant, p.amount, p.fee, p.refunded];
}

describe("PaymentRouter", () => {
  describe("constructor", () => {
    it("wires the asset, the admin, the treasury, the forwarder and the default 1 % fee", async () => {
      const { router, usdc, forwarder, admin, treasury } = await load();
      expect(await router.asset()).to.equal(await usdc.getAddress());
      expect(await router.treasury()).to.equal(treasury.address);
      expect(await router.feeBps()).to.equal(DEFAULT_FEE_BPS);
      expect(await router.MAX_FEE_BPS()).to.equal(MAX_FEE_BPS);
      expect(await router.hasRole(await router.DEFAULT_ADMIN_ROLE(), admin.address)).to.equal(true);
      expect(await router.hasRole(await router.DEFAULT_ADMIN_ROLE(), treasury.address)).to.equal(false);
      expect(await router.trustedForwarder()).to.equal(await forwarder.getAddress());
      expect(await router.isTrustedForwarder(await forwarder.getAddress())).to.equal(true);
    });

    it("emits the default fee and treasury", async () => {
      const { usdc, forwarder, admin, treasury } = await load();
      const router = await ethers.deployContract("PaymentRouter", [
        await usdc.getAddress(),
        admin.address,
        treasury.address,
        await forwarder.getAddress(),
      ]);
      await expect(router.deploymentTransaction()).to.emit(router, "PaymentFeeUpdated").withArgs(DEFAULT_FEE_BPS, treasury.address);
    });

    it("reverts when the asset, the admin, the treasury or the forwarder is zero", async () => {
      const { router, usdc, forwarder, admin, treasury } = await load();
      const [asset, trusted] = [await usdc.getAddress(), await forwarder.getAddress()];
      const zero = ethers.ZeroAddress;
      for (const args of [
        [zero, admin.address, treasury.address, trusted],
        [asset, zero, treasury.address, trusted],
        [asset, admin.address, zero, trusted],
        [asset, admin.address, treasury.address, zero],
      ]) {
        await expect(ethers.deployContract("PaymentRouter", args)).to.be.revertedWithCustomError(router, "PaymentRouterZeroAddress");
      }
    });
  });

  describe("pay", () => {
    it("pulls the amount from the payer, sends the net amount to the merchant and the fee to the treasury", async () => {
      const { router, usdc, payer, merchant, treasury } = await load();
      const holders = [payer, merchant, treasury, router];
      const changes = await balanceChanges(usdc, holders, async () => {
        await expect(router.connect(payer).pay(REF, merchant.address, USDC(100)))
          .to.emit(router, "PaymentPaid")
          .withArgs(REF, payer.address, merchant.address, USDC(100), USDC(1))
          .and.to.emit(usdc, "Transfer")
          .withArgs(payer.address, merchant.address, USDC(99))
          .and.to.emit(usdc, "Transfer")
          .withArgs(payer.address, treasury.address, USDC(1));
      });
      expect(changes).to.deep.equal([-USDC(100), USDC(99), USDC(1), 0n]);
      expect(await usdc.balanceOf(await router.getAddress())).to.equal(0n);
    });

    it("records the payment", async () => {
      const f = await load();
      expect(await paymentTuple(f, REF)).to.deep.equal([ethers.ZeroAddress, ethers.ZeroAddress, 0n, 0n, 0n]);
      await f.router.connect(f.payer).pay(REF, f.merchant.address, USDC(250));
      expect(await paymentTuple(f, REF)).to.deep.equal([f.payer.address, f.merchant.address, USDC(250), 2_500_000n, 0n]);
    });

    it("rounds the fee down, in the merchant's favour", async () => {
      const { router, usdc, payer, merchant, treasury } = await load();
      // 1 % of: 1 micro-unit is 0.01 (0), 99 is 0.99 (0), 100 is 1, 199 is 1.99 (1), 200 is 2, 12,345,678 is 123,456.78.
      const cases: [bigint, bigint][] = [
        [1n, 0n],
        [99n, 0n],
        [100n, 1n],
        [199n, 1n],
        [200n, 2n],
        [12_345_678n, 123_456n],
      ];
      for (const [i, [amount, fee]] of cases.entries()) {
        const ref = ethers.id(`rounding-${i}`);
        const changes = await balanceChanges(usdc, [payer, merchant, treasury], async () => {
          await expect(router.connect(payer).pay(ref, merchant.address, amount))
            .to.emit(router, "PaymentPaid")
            .withArgs(ref, payer.address, merchant.address, amount, fee);
        });
        expect(changes, `amount ${amount}`).to.deep.equal([-amount, amount - fee, fee]);
        expect((await router.paymentOf(ref)).fee).to.equal(fee);
      }
    });

    it("makes no transfer to the treasury when the fee rounds to zero", async () => {
      const { router, usdc, payer, merchant, treasury } = await load();
      const receipt = await (await router.connect(payer).pay(REF, merchant.address, 99n)).wait();
      const transfers = receipt!.logs.filter((log) => log.address === usdc.target).map((log) => usdc.interface.parseLog(log)!.args);
      expect(transfers.map((t) => [t[0], t[1], t[2]])).to.deep.equal([[payer.address, merchant.address, 99n]]);
      expect(await usdc.balanceOf(treasury.address)).to.equal(0n);
    });

    it("accepts an amount of exactly the uint128 maximum", async () => {
      const { router, usdc, admin, carol, merchant, treasury } = await load();
      await usdc.connect(admin).mint(carol.address, MAX_UINT128);
      await usdc.connect(carol).approve(await router.getAddress(), MAX_UINT128);
      const fee = feeOf(MAX_UINT128);
      await expect(router.connect(carol).pay(REF, merchant.address, MAX_UINT128))
        .to.emit(router, "PaymentPaid")
        .withArgs(REF, carol.address, merchant.address, MAX_UINT128, fee);
      expect(await balancesOf(usdc, [merchant, treasury])).to.deep.equal([MAX_UINT128 - fee, fee]);
      expect((await router.paymentOf(REF)).amount).to.equal(MAX_UINT128);
    });

    it("lets a payer pay several refs to several merchants", async () => {
      const { router, usdc, payer, otherPayer, merchant, otherMerchant, treasury } = await load();
      await router.connect(payer).pay(ethers.id("a"), merchant.address, USDC(10));
      await router.connect(payer).pay(ethers.id("b"), otherMerchant.address, USDC(20));
      await router.connect(otherPayer).pay(ethers.id("c"), merchant.address, USDC(30));
      expect(await balancesOf(usdc, [merchant, otherMerchant, treasury])).to.deep.equal([
        USDC(10) - feeOf(USDC(10)) + USDC(30) - feeOf(USDC(30)),
        USDC(20) - feeOf(USDC(20)),
        feeOf(USDC(10)) + feeOf(USDC(20)) + feeOf(USDC(30)),
      ]);
    });

    it("reverts when the ref was already paid, by the same or another payer, and moves nothing", async () => {
      const f = await loadPaid();
      const { router, usdc, payer, otherPayer, merchant, otherMerchant, treasury } = f;
      const before = await balancesOf(usdc, [payer, otherPayer, merchant, otherMerchant, treasury]);
      await expect(router.connect(payer).pay(REF, merchant.address, USDC(100)))
        .to.be.revertedWithCustomError(router, "PaymentRouterAlreadyPaid")
        .withArgs(REF);
      await expect(router.connect(otherPayer).pay(REF, otherMerchant.address, USDC(5)))
        .to.be.revertedWithCustomError(router, "PaymentRouterAlreadyPaid")
        .withArgs(REF);
      expect(await balancesOf(usdc, [payer, otherPayer, merchant, otherMerchant, treasury])).to.deep.equal(before);
      expect(await paymentTuple(f, REF)).to.deep.equal([payer.address, merchant.address, USDC(100), USDC(1), 0n]);
    });

    it("reverts when the ref is zero", async () => {
      const { router, payer, merchant } = await load();
      await expect(router.connect(payer).pay(ethers.ZeroHash, merchant.address, USDC(100))).to.be.revertedWithCustomError(
        router,
        "PaymentRouterEmptyRef",
      );
    });

    it("reverts when the merchant is zero", async () => {
      const { router, payer } = await load();
      await expect(router.connect(payer).pay(REF, ethers.ZeroAddress, USDC(100))).to.be.revertedWithCustomError(
        router,
        "PaymentRouterZeroAddress",
      );
    });

    it("reverts when the amount is zero", async () => {
      const { router, payer, merchant } = await load();
      await expect(router.connect(payer).pay(REF, merchant.address, 0n))
        .to.be.revertedWithCustomError(router, "PaymentRouterInvalidAmount")
        .withArgs(0n);
    });

    it("reverts when the amount is above the uint128 maximum", async () => {
      const { router, usdc, admin, payer, merchant } = await load();
      await usdc.connect(admin).mint(payer.address, MAX_UINT128 + 1n);
      await expect(router.connect(payer).pay(REF, merchant.address, MAX_UINT128 + 1n))
        .to.be.revertedWithCustomError(router, "PaymentRouterInvalidAmount")
        .withArgs(MAX_UINT128 + 1n);
      await expect(router.connect(payer).pay(REF, merchant.address, ethers.MaxUint256))
        .to.be.revertedWithCustomError(router, "PaymentRouterInvalidAmount")
        .withArgs(ethers.MaxUint256);
    });

    it("leaves the ref unpaid when a check fails, so it can be paid afterwards", async () => {
      const f = await load();
      await expect(f.router.connect(f.payer).pay(REF, f.merchant.address, 0n)).to.be.revertedWithCustomError(
        f.router,
        "PaymentRouterInvalidAmount",
      );
      await expect(f.router.connect(f.payer).pay(REF, f.merchant.address, USDC(1))).to.emit(f.router, "PaymentPaid");
    });

    it("reverts with the token's ERC20InsufficientAllowance when the payer approved nothing", async () => {
      const { router, usdc, carol, merchant } = await load();
      await expect(router.connect(carol).pay(REF, merchant.address, USDC(100)))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientAllowance")
        .withArgs(await router.getAddress(), 0n, USDC(99));
    });

    it("reverts with the token's ERC20InsufficientBalance when the payer lacks the amount, and records nothing", async () => {
      const f = await load();
      const { router, usdc, carol, merchant } = f;
      await usdc.connect(carol).approve(await router.getAddress(), ethers.MaxUint256);
      const before = await balancesOf(usdc, [carol, merchant, f.treasury]);
      // The net amount alone is above the balance: the first transfer fails.
      await expect(router.connect(carol).pay(REF, merchant.address, USDC(20_000)))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientBalance")
        .withArgs(carol.address, USDC(10_000), USDC(19_800));
      // The net amount (9,900.99) fits but not the fee after it (100.01 of the 99.01 left): all of it is undone.
      const amount = USDC(10_001);
      await expect(router.connect(carol).pay(REF, merchant.address, amount))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientBalance")
        .withArgs(carol.address, USDC(10_000) - (amount - feeOf(amount)), feeOf(amount));
      expect(await balancesOf(usdc, [carol, merchant, f.treasury])).to.deep.equal(before);
      expect(await paymentTuple(f, REF)).to.deep.equal([ethers.ZeroAddress, ethers.ZeroAddress, 0n, 0n, 0n]);
    });
  });

  describe("payWithPermit", () => {
    it("pays with a permit and no prior allowance, and uses the allowance up", async () => {
      const { router, usdc, carol, merchant, treasury } = await load();
      const { deadline, v, r, s } = await signPermit(usdc, carol, router, USDC(100));
      const changes = await balanceChanges(usdc, [carol, merchant, treasury, router], async () => {
        await expect(router.connect(carol).payWithPermit(REF, merchant.address, USDC(100), deadline, v, r, s))
          .to.emit(router, "PaymentPaid")
          .withArgs(REF, carol.address, merchant.address, USDC(100), USDC(1))
          .and.to.emit(usdc, "Approval")
          .withArgs(carol.address, await router.getAddress(), USDC(100));
      });
      expect(changes).to.deep.equal([-USDC(100), USDC(99), USDC(1), 0n]);
      expect(await usdc.allowance(carol.address, await router.getAddress())).to.equal(0n);
      expect(await usdc.nonces(carol.address)).to.equal(1n);
    });

    it("still pays when someone submitted the permit first (front-running), with the allowance it set", async () => {
      const { router, usdc, carol, stranger, merchant, treasury } = await load();
      const { deadline, v, r, s } = await signPermit(usdc, carol, router, USDC(100));
      await usdc.connect(stranger).permit(carol.address, await router.getAddress(), USDC(100), deadline, v, r, s);
      const changes = await balanceChanges(usdc, [carol, merchant, treasury], async () => {
        await expect(router.connect(carol).payWithPermit(REF, merchant.address, USDC(100), deadline, v, r, s))
          .to.emit(router, "PaymentPaid")
          .withArgs(REF, carol.address, merchant.address, USDC(100), USDC(1));
      });
      expect(changes).to.deep.equal([-USDC(100), USDC(99), USDC(1)]);
      expect(await usdc.nonces(carol.address)).to.equal(1n);
    });

    it("pays on an existing allowance when the permit was used already", async () => {
      const { router, usdc, payer, merchant } = await load();
      const { deadline, v, r, s } = await signPermit(usdc, payer, router, USDC(5));
      await router.connect(payer).payWithPermit(ethers.id("first"), merchant.address, USDC(5), deadline, v, r, s);
      // The same permit again: its nonce is used, and the remaining allowance (5 USDC set by the permit, spent) is 0.
      await expect(router.connect(payer).payWithPermit(REF, merchant.address, USDC(5), deadline, v, r, s))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientAllowance")
        .withArgs(await router.getAddress(), 0n, USDC(5) - feeOf(USDC(5)));
      await usdc.connect(payer).approve(await router.getAddress(), USDC(5));
      await expect(router.connect(payer).payWithPermit(REF, merchant.address, USDC(5), deadline, v, r, s))
        .to.emit(router, "PaymentPaid")
        .withArgs(REF, payer.address, merchant.address, USDC(5), feeOf(USDC(5)));
    });

    it("reverts when the permit is someone else's: it serves only its signer, and the caller has no allowance", async () => {
      const { router, usdc, user, carol, merchant } = await load();
      const { deadline, v, r, s } = await signPermit(usdc, user, router, USDC(100));
      await expect(router.connect(carol).payWithPermit(REF, merchant.address, USDC(100), deadline, v, r, s))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientAllowance")
        .withArgs(await router.getAddress(), 0n, USDC(99));
      expect(await usdc.nonces(user.address)).to.equal(0n);
      expect(await usdc.allowance(user.address, await router.getAddress())).to.equal(0n);
    });

    it("reverts when the permit has expired and there is no allowance", async () => {
      const { router, usdc, carol, merchant } = await load();
      const { deadline, v, r, s } = await signPermit(usdc, carol, router, USDC(100), { deadline: await inSeconds(ethers, -1) });
      await expect(router.connect(carol).payWithPermit(REF, merchant.address, USDC(100), deadline, v, r, s))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientAllowance")
        .withArgs(await router.getAddress(), 0n, USDC(99));
    });

    it("reverts like pay for a paid ref, a zero ref, a zero merchant or an invalid amount, and applies no permit", async () => {
      const { router, usdc, carol, merchant } = await loadPaid();
      const { deadline, v, r, s } = await signPermit(usdc, carol, router, USDC(100));
      await expect(router.connect(carol).payWithPermit(REF, merchant.address, USDC(100), deadline, v, r, s))
        .to.be.revertedWithCustomError(router, "PaymentRouterAlreadyPaid")
        .withArgs(REF);
      const fresh = ethers.id("order-2");
      await expect(
        router.connect(carol).payWithPermit(ethers.ZeroHash, merchant.address, USDC(100), deadline, v, r, s),
      ).to.be.revertedWithCustomError(router, "PaymentRouterEmptyRef");
      await expect(
        router.connect(carol).payWithPermit(fresh, ethers.ZeroAddress, USDC(100), deadline, v, r, s),
      ).to.be.revertedWithCustomError(router, "PaymentRouterZeroAddress");
      await expect(router.connect(carol).payWithPermit(fresh, merchant.address, 0n, deadline, v, r, s))
        .to.be.revertedWithCustomError(router, "PaymentRouterInvalidAmount")
        .withArgs(0n);
      expect(await usdc.nonces(carol.address)).to.equal(0n);
    });
  });

  describe("refund", () => {
    it("pulls the amount from the merchant to the payer, records it and emits PaymentRefunded", async () => {
      const f = await loadPaid();
      const { router, usdc, payer, merchant, treasury } = f;
      const changes = await balanceChanges(usdc, [payer, merchant, treasury, router], async () => {
        await expect(router.connect(merchant).refund(REF, REFUND_REF, USDC(40)))
          .to.emit(router, "PaymentRefunded")
          .withArgs(REF, REFUND_REF, merchant.address, payer.address, USDC(40), USDC(40))
          .and.to.emit(usdc, "Transfer")
          .withArgs(merchant.address, payer.address, USDC(40));
      });
      // The treasury keeps its fee: the merchant bears it.
      expect(changes).to.deep.equal([USDC(40), -USDC(40), 0n, 0n]);
      expect(await paymentTuple(f, REF)).to.deep.equal([payer.address, merchant.address, USDC(100), USDC(1), USDC(40)]);
      expect(await router.refundMade(REFUND_REF)).to.equal(true);
      expect(await router.refundMade(ethers.id("refund-2"))).to.equal(false);
    });

    it("lets partial refunds add up exactly to the amount, then refuses one more micro-unit", async () => {
      const f = await loadPaid();
      const { router, usdc, admin, payer, merchant } = f;
      await usdc.connect(admin).mint(merchant.address, USDC(1)); // the fee it bears on a full refund
      const parts = [USDC(30), USDC(45), USDC(25) - 1n, 1n];
      let total = 0n;
      const changes = await balanceChanges(usdc, [payer, merchant], async () => {
        for (const [i, part] of parts.entries()) {
          total += part;
          await expect(router.connect(merchant).refund(REF, ethers.id(`part-${i}`), part))
            .to.emit(router, "PaymentRefunded")
            .withArgs(REF, ethers.id(`part-${i}`), merchant.address, payer.address, part, total);
        }
      });
      expect(total).to.equal(USDC(100));
      expect(changes).to.deep.equal([USDC(100), -USDC(100)]);
      expect((await router.paymentOf(REF)).refunded).to.equal(USDC(100));
      await expect(router.connect(merchant).refund(REF, ethers.id("one-more"), 1n))
        .to.be.revertedWithCustomError(router, "PaymentRouterRefundTooLarge")
        .withArgs(REF, 1n, 0n);
    });

    it("reverts when the amount is above what is left of the payment", async () => {
      const { router, merchant } = await loadPaid();
      await expect(router.connect(merchant).refund(REF, REFUND_REF, USDC(100) + 1n))
        .to.be.revertedWithCustomError(router, "PaymentRouterRefundTooLarge")
        .withArgs(REF, USDC(100) + 1n, USDC(100));
      await router.connect(merchant).refund(REF, REFUND_REF, USDC(60));
      await expect(router.connect(merchant).refund(REF, ethers.id("refund-2"), USDC(40) + 1n))
        .to.be.revertedWithCustomError(router, "PaymentRouterRefundTooLarge")
        .withArgs(REF, USDC(40) + 1n, USDC(40));
      expect((await router.paymentOf(REF)).refunded).to.equal(USDC(60));
      expect(await router.refundMade(ethers.id("refund-2"))).to.equal(false);
    });

    it("reverts when the amount is zero", async () => {
      const { router, merchant } = await loadPaid();
      await expect(router.connect(merchant).refund(REF, REFUND_REF, 0n))
        .to.be.revertedWithCustomError(router, "PaymentRouterRefundTooLarge")
        .withArgs(REF, 0n, USDC(100));
      expect(await router.refundMade(REFUND_REF)).to.equal(false);
    });

    it("reverts when the caller is not the payment's merchant, the payer included", async () => {
      const { router, payer, otherMerchant, treasury } = await loadPaid();
      for (const caller of [otherMerchant, payer, treasury]) {
        await expect(router.connect(caller).refund(REF, REFUND_REF, USDC(1)))
          .to.be.revertedWithCustomError(router, "PaymentRouterNotMerchant")
          .withArgs(REF, caller.address);
      }
      expect(await router.refundMade(REFUND_REF)).to.equal(false);
    });

    it("reverts when the ref was never paid", async () => {
      const { router, merchant } = await loadPaid();
      const unknown = ethers.id("unknown");
      await expect(router.connect(merchant).refund(unknown, REFUND_REF, USDC(1)))
        .to.be.revertedWithCustomError(router, "PaymentRouterNotPaid")
        .withArgs(unknown);
      await expect(router.connect(merchant).refund(ethers.ZeroHash, REFUND_REF, USDC(1)))
        .to.be.revertedWithCustomError(router, "PaymentRouterNotPaid")
        .withArgs(ethers.ZeroHash);
    });

    it("reverts when the refundRef is zero", async () => {
      const { router, merchant } = await loadPaid();
      await expect(router.connect(merchant).refund(REF, ethers.ZeroHash, USDC(1))).to.be.revertedWithCustomError(
        router,
        "PaymentRouterEmptyRef",
      );
    });

    it("reverts when the refundRef was used, on this payment or another, and refunds nothing twice", async () => {
      const { router, usdc, payer, otherPayer, merchant } = await loadPaid();
      await router.connect(otherPayer).pay(ethers.id("order-2"), merchant.address, USDC(50));
      await router.connect(merchant).refund(REF, REFUND_REF, USDC(10));
      const before = await balancesOf(usdc, [payer, otherPayer, merchant]);
      await expect(router.connect(merchant).refund(REF, REFUND_REF, USDC(10)))
        .to.be.revertedWithCustomError(router, "PaymentRouterRefundExists")
        .withArgs(REFUND_REF);
      await expect(router.connect(merchant).refund(ethers.id("order-2"), REFUND_REF, USDC(10)))
        .to.be.revertedWithCustomError(router, "PaymentRouterRefundExists")
        .withArgs(REFUND_REF);
      expect(await balancesOf(usdc, [payer, otherPayer, merchant])).to.deep.equal(before);
      expect((await router.paymentOf(REF)).refunded).to.equal(USDC(10));
      expect((await router.paymentOf(ethers.id("order-2"))).refunded).to.equal(0n);
    });

    it("reverts with the token's ERC20InsufficientBalance when the merchant lacks the amount, and records nothing", async () => {
      const f = await loadPaid();
      const { router, usdc, merchant, stranger } = f;
      // A full refund needs 100 USDC; the merchant received 99 (it bears the fee).
      await expect(router.connect(merchant).refund(REF, REFUND_REF, USDC(100)))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientBalance")
        .withArgs(merchant.address, USDC(99), USDC(100));
      await usdc.connect(merchant).transfer(stranger.address, USDC(99));
      await expect(router.connect(merchant).refund(REF, REFUND_REF, USDC(1)))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientBalance")
        .withArgs(merchant.address, 0n, USDC(1));
      expect(await router.refundMade(REFUND_REF)).to.equal(false);
      expect((await router.paymentOf(REF)).refunded).to.equal(0n);
    });

    it("reverts with the token's ERC20InsufficientAllowance when the merchant approved nothing", async () => {
      const { router, usdc, merchant } = await loadPaid();
      await usdc.connect(merchant).approve(await router.getAddress(), 0n);
      await expect(router.connect(merchant).refund(REF, REFUND_REF, USDC(10)))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientAllowance")
        .withArgs(await router.getAddress(), 0n, USDC(10));
    });
  });

  describe("refundWithPermit", () => {
    it("refunds with the merchant's permit and no prior allowance", async () => {
      const { router, usdc, payer, merchant } = await loadPaid();
      await usdc.connect(merchant).approve(await router.getAddress(), 0n);
      const { deadline, v, r, s } = await signPermit(usdc, merchant, router, USDC(30));
      const changes = await balanceChanges(usdc, [payer, merchant], async () => {
        await expect(router.connect(merchant).refundWithPermit(REF, REFUND_REF, USDC(30), deadline, v, r, s))
          .to.emit(router, "PaymentRefunded")
          .withArgs(REF, REFUND_REF, merchant.address, payer.address, USDC(30), USDC(30));
      });
      expect(changes).to.deep.equal([USDC(30), -USDC(30)]);
      expect(await usdc.allowance(merchant.address, await router.getAddress())).to.equal(0n);
      expect(await usdc.nonces(merchant.address)).to.equal(1n);
    });

    it("still refunds when the permit was front-run", async () => {
      const { router, usdc, payer, merchant, stranger } = await loadPaid();
      await usdc.connect(merchant).approve(await router.getAddress(), 0n);
      const { deadline, v, r, s } = await signPermit(usdc, merchant, router, USDC(30));
      await usdc.connect(stranger).permit(merchant.address, await router.getAddress(), USDC(30), deadline, v, r, s);
      await expect(router.connect(merchant).refundWithPermit(REF, REFUND_REF, USDC(30), deadline, v, r, s))
        .to.emit(router, "PaymentRefunded")
        .withArgs(REF, REFUND_REF, merchant.address, payer.address, USDC(30), USDC(30));
    });

    it("reverts like refund for another caller, a used refundRef or too large an amount, and applies no permit", async () => {
      const { router, usdc, merchant, otherMerchant } = await loadPaid();
      const permit = await signPermit(usdc, otherMerchant, router, USDC(30));
      await expect(router.connect(otherMerchant).refundWithPermit(REF, REFUND_REF, USDC(30), permit.deadline, permit.v, permit.r, permit.s))
        .to.be.revertedWithCustomError(router, "PaymentRouterNotMerchant")
        .withArgs(REF, otherMerchant.address);
      expect(await usdc.nonces(otherMerchant.address)).to.equal(0n);

      await router.connect(merchant).refund(REF, REFUND_REF, USDC(10));
      const { deadline, v, r, s } = await signPermit(usdc, merchant, router, USDC(91));
      await expect(router.connect(merchant).refundWithPermit(REF, REFUND_REF, USDC(10), deadline, v, r, s))
        .to.be.revertedWithCustomError(router, "PaymentRouterRefundExists")
        .withArgs(REFUND_REF);
      await expect(router.connect(merchant).refundWithPermit(REF, ethers.id("refund-2"), USDC(91), deadline, v, r, s))
        .to.be.revertedWithCustomError(router, "PaymentRouterRefundTooLarge")
        .withArgs(REF, USDC(91), USDC(90));
      expect(await usdc.nonces(merchant.address)).to.equal(0n);
    });
  });

  describe("setFee", () => {
    it("sets the fee and the treasury, and emits PaymentFeeUpdated", async () => {
      const { router, admin, newTreasury } = await load();
      await expect(router.connect(admin).setFee(250n, newTreasury.address))
        .to.emit(router, "PaymentFeeUpdated")
        .withArgs(250n, newTreasury.address);
      expect(await router.feeBps()).to.equal(250n);
      expect(await router.treasury()).to.equal(newTreasury.address);
    });

    it("applies the new fee and treasury to later payments only", async () => {
      const f = await loadPaid();
      const { router, usdc, admin, payer, merchant, treasury, newTreasury } = f;
      await router.connect(admin).setFee(250n, newTreasury.address);
      const ref = ethers.id("order-2");
      const changes = await balanceChanges(usdc, [payer, merchant, treasury, newTreasury], async () => {
        await expect(router.connect(payer).pay(ref, merchant.address, USDC(100)))
          .to.emit(router, "PaymentPaid")
          .withArgs(ref, payer.address, merchant.address, USDC(100), 2_500_000n);
      });
      expect(changes).to.deep.equal([-USDC(100), USDC(100) - 2_500_000n, 0n, 2_500_000n]);
      // The earlier payment keeps its recorded fee.
      expect((await router.paymentOf(REF)).fee).to.equal(USDC(1));
    });

    it("accepts a zero fee (no transfer to the treasury) and exactly the maximum", async () => {
      const { router, usdc, admin, payer, merchant, treasury } = await load();
      await router.connect(admin).setFee(0n, treasury.address);
      let changes = await balanceChanges(usdc, [payer, merchant, treasury], () =>
        router.connect(payer).pay(ethers.id("free"), merchant.address, USDC(100)),
      );
      expect(changes).to.deep.equal([-USDC(100), USDC(100), 0n]);

      await expect(router.connect(admin).setFee(MAX_FEE_BPS, treasury.address))
        .to.emit(router, "PaymentFeeUpdated")
        .withArgs(MAX_FEE_BPS, treasury.address);
      changes = await balanceChanges(usdc, [payer, merchant, treasury], () =>
        router.connect(payer).pay(ethers.id("max"), merchant.address, USDC(100) + 9n),
      );
      // 10 % of 100.000009 USDC: 10.0000009, rounded down to 10 USDC.
      expect(changes).to.deep.equal([-(USDC(100) + 9n), USDC(90) + 9n, USDC(10)]);
    });

    it("reverts for a caller without DEFAULT_ADMIN_ROLE", async () => {
      const { router, stranger, treasury } = await load();
      await expect(router.connect(stranger).setFee(200n, stranger.address))
        .to.be.revertedWithCustomError(router, "AccessControlUnauthorizedAccount")
        .withArgs(stranger.address, await router.DEFAULT_ADMIN_ROLE());
      expect(await router.feeBps()).to.equal(DEFAULT_FEE_BPS);
      expect(await router.treasury()).to.equal(treasury.address);
    });

    it("reverts when the fee is above MAX_FEE_BPS", async () => {
      const { router, admin, treasury } = await load();
      await expect(router.connect(admin).setFee(MAX_FEE_BPS + 1n, treasury.address))
        .to.be.revertedWithCustomError(router, "PaymentRouterInvalidFee")
        .withArgs(MAX_FEE_BPS + 1n);
      await expect(router.connect(admin).setFee(10_000n, treasury.address))
        .to.be.revertedWithCustomError(router, "PaymentRouterInvalidFee")
        .withArgs(10_000n);
    });

    it("reverts when the treasury is zero", async () => {
      const { router, admin } = await load();
      await expect(router.connect(admin).setFee(100n, ethers.ZeroAddress)).to.be.revertedWithCustomError(
        router,
        "PaymentRouterZeroAddress",
      );
    });
  });

  describe("through the TrustMintForwarder", () => {
    /** Relays `signer`'s request to call the router with `data`. */
    async function relay(f: PaymentsFixture, signer: PaymentsFixture["user"] | PaymentsFixture["payer"], data: string) {
      return f.forwarder.connect(f.relayer).execute(await signRequest(f.forwarder, signer, f.router, data));
    }

    it("lets a payer without ETH pay with a permit in one signed request: the signer is the payer", async () => {
      const f = await load();
      const { router, usdc, user, merchant, treasury, relayer } = f;
      const { deadline, v, r, s } = await signPermit(usdc, user, router, USDC(100));
      const data = router.interface.encodeFunctionData("payWithPermit", [REF, merchant.address, USDC(100), deadline, v, r, s]);
      const changes = await balanceChanges(usdc, [user, merchant, treasury, relayer], async () => {
        await expect(relay(f, user, data))
          .to.emit(router, "PaymentPaid")
          .withArgs(REF, user.address, merchant.address, USDC(100), USDC(1));
      });
      expect(changes).to.deep.equal([-USDC(100), USDC(99), USDC(1), 0n]);
      expect((await router.paymentOf(REF)).payer).to.equal(user.address);
      expect(await ethers.provider.getBalance(user.address)).to.equal(0n);
      expect(await f.forwarder.nonces(user.address)).to.equal(1n);
    });

    it("relays a plain pay for a Hardhat account: the signer, not the relayer, pays", async () => {
      const f = await load();
      const { router, usdc, payer, merchant, relayer } = f;
      const data = router.interface.encodeFunctionData("pay", [REF, merchant.address, USDC(10)]);
      const changes = await balanceChanges(usdc, [payer, merchant, relayer], async () => {
        await expect(relay(f, payer, data))
          .to.emit(router, "PaymentPaid")
          .withArgs(REF, payer.address, merchant.address, USDC(10), 100_000n);
      });
      expect(changes).to.deep.equal([-USDC(10), USDC(10) - 100_000n, 0n]);
    });

    it("lets a merchant without ETH refund with a permit in one signed request: the signer is the merchant", async () => {
      const f = await load();
      const { router, usdc, payer, shop, relayer } = f;
      await router.connect(payer).pay(REF, shop.address, USDC(100));
      const { deadline, v, r, s } = await signPermit(usdc, shop, router, USDC(60));
      const data = router.interface.encodeFunctionData("refundWithPermit", [REF, REFUND_REF, USDC(60), deadline, v, r, s]);
      const changes = await balanceChanges(usdc, [payer, shop, relayer], async () => {
        await expect(relay(f, shop, data))
          .to.emit(router, "PaymentRefunded")
          .withArgs(REF, REFUND_REF, shop.address, payer.address, USDC(60), USDC(60));
      });
      expect(changes).to.deep.equal([USDC(60), -USDC(60), 0n]);
      expect(await ethers.provider.getBalance(shop.address)).to.equal(0n);
      expect(await router.refundMade(REFUND_REF)).to.equal(true);
    });

    it("relays a plain refund for a Hardhat merchant", async () => {
      const f = await loadPaid();
      const { router, usdc, payer, merchant } = f;
      const data = router.interface.encodeFunctionData("refund", [REF, REFUND_REF, USDC(25)]);
      const changes = await balanceChanges(usdc, [payer, merchant], async () => {
        await expect(relay(f, merchant, data))
          .to.emit(router, "PaymentRefunded")
          .withArgs(REF, REFUND_REF, merchant.address, payer.address, USDC(25), USDC(25));
      });
      expect(changes).to.deep.equal([USDC(25), -USDC(25)]);
    });

    it("checks the merchant against the signer: a relayed refund signed by anyone else fails", async () => {
      const f = await loadPaid();
      const { router, forwarder, relayer, user, merchant } = f;
      const data = router.interface.encodeFunctionData("refund", [REF, REFUND_REF, USDC(25)]);
      // Signed by the payer-to-be `user`, relayed by the relayer: execute reports FailedCall and keeps the nonce.
      await expect(relay(f, user, data)).to.be.revertedWithCustomError(forwarder, "FailedCall");
      expect(await forwarder.nonces(user.address)).to.equal(0n);
      // The router's own error, for the request as the forwarder sends it.
      const asForwarder = await forwarderAccount(ethers, networkHelpers, forwarder);
      await expect(asForwarder.call(router, data, user.address))
        .to.be.revertedWithCustomError(router, "PaymentRouterNotMerchant")
        .withArgs(REF, user.address);
      // The relayer calling directly is not the merchant either.
      await expect(router.connect(relayer).refund(REF, REFUND_REF, USDC(25)))
        .to.be.revertedWithCustomError(router, "PaymentRouterNotMerchant")
        .withArgs(REF, relayer.address);
      // The merchant's signature works.
      await expect(relay(f, merchant, data)).to.emit(router, "PaymentRefunded");
    });

    it("checks the admin role against the signer of a relayed setFee", async () => {
      const f = await load();
      const { router, forwarder, admin, stranger, newTreasury } = f;
      const data = router.interface.encodeFunctionData("setFee", [300n, newTreasury.address]);
      const asForwarder = await forwarderAccount(ethers, networkHelpers, forwarder);
      await expect(asForwarder.call(router, data, stranger.address))
        .to.be.revertedWithCustomError(router, "AccessControlUnauthorizedAccount")
        .withArgs(stranger.address, await router.DEFAULT_ADMIN_ROLE());
      await expect(relay(f, admin, data))
        .to.emit(router, "PaymentFeeUpdated")
        .withArgs(300n, newTreasury.address);
      expect(await router.feeBps()).to.equal(300n);
    });
  });
});
