// The payment router's flows: payments with the fee split to the treasury, refunds from the merchant within what was
// paid, EIP-2612 permits, the admin's fee, and payments and refunds relayed through the TrustMintForwarder; and the
// review's three findings: a payment is its terms (ref, merchant, amount), so paying its ref first under other terms
// leaves it payable; a merchant's refund refs are its own; the router is never the merchant or the treasury.
import { expect } from "chai";
import { network } from "hardhat";
import { forwarderAccount, inSeconds, signPermit, signReceiveAuthorization, signRequest } from "../metatx/metatx-helpers.js";
import {
  balanceChanges,
  balancesOf,
  DEFAULT_FEE_BPS,
  deployPayments,
  feeOf,
  MAX_FEE_BPS,
  MAX_UINT128,
  type PaymentsFixture,
  paymentKeyOf,
  USDC,
} from "./payments-fixture.js";

const { ethers, networkHelpers } = await network.create();

const REF = ethers.id("order-1");
const REFUND_REF = ethers.id("refund-1");
/** The amount of the fixture's payment REF. */
const PAID = USDC(100);
/** The record of a payment that was not paid. */
const UNPAID = [ethers.ZeroAddress, ethers.ZeroAddress, 0n, 0n, 0n];

const load = () => networkHelpers.loadFixture(fixture);
async function fixture() {
  return deployPayments(ethers);
}

/** The fixture with payment REF: `payer` paid 100 USDC (PAID) to `merchant` (1 USDC fee to the treasury). */
async function withPayment() {
  const f = await deployPayments(ethers);
  await f.router.connect(f.payer).pay(REF, f.merchant.address, PAID);
  return f;
}
const loadPaid = () => networkHelpers.loadFixture(withPayment);

/** The stored payment of `ref` to `merchant` of `amount` as a plain tuple: payer, merchant, amount, fee, refunded. */
async function paymentTuple(f: PaymentsFixture, ref: string, merchant: string, amount: bigint) {
  const p = await f.router.paymentOf(ref, merchant, amount);
  return [p.payer, p.merchant, p.amount, p.fee, p.refunded];
}

/** The fixture's payment REF (payer, merchant, PAID) as a plain tuple. */
const paidTuple = (f: PaymentsFixture) => paymentTuple(f, REF, f.merchant.address, PAID);

describe("PaymentRouter", () => {
  describe("constructor", () => {
    it("wires the asset, the loan book, the admin, the treasury, the forwarder and the default 1 % fee", async () => {
      const { router, usdc, book, forwarder, admin, treasury, operator } = await load();
      expect(await router.asset()).to.equal(await usdc.getAddress());
      expect(await router.loanBook()).to.equal(await book.getAddress());
      expect(await router.OPERATOR_ROLE()).to.equal(ethers.id("OPERATOR_ROLE"));
      expect(await router.MAX_INSTALLMENTS()).to.equal(12n);
      // The admin grants the service's operator after deployment (the fixture did); the deployer holds no operator role.
      expect(await router.hasRole(await router.OPERATOR_ROLE(), operator.address)).to.equal(true);
      expect(await router.hasRole(await router.OPERATOR_ROLE(), admin.address)).to.equal(false);
      expect(await router.treasury()).to.equal(treasury.address);
      expect(await router.feeBps()).to.equal(DEFAULT_FEE_BPS);
      expect(await router.MAX_FEE_BPS()).to.equal(MAX_FEE_BPS);
      expect(await router.hasRole(await router.DEFAULT_ADMIN_ROLE(), admin.address)).to.equal(true);
      expect(await router.hasRole(await router.DEFAULT_ADMIN_ROLE(), treasury.address)).to.equal(false);
      expect(await router.trustedForwarder()).to.equal(await forwarder.getAddress());
      expect(await router.isTrustedForwarder(await forwarder.getAddress())).to.equal(true);
    });

    it("emits the default fee and treasury", async () => {
      const { usdc, book, forwarder, admin, treasury } = await load();
      const router = await ethers.deployContract("PaymentRouter", [
        await usdc.getAddress(),
        await book.getAddress(),
        admin.address,
        treasury.address,
        await forwarder.getAddress(),
      ]);
      await expect(router.deploymentTransaction()).to.emit(router, "PaymentFeeUpdated").withArgs(DEFAULT_FEE_BPS, treasury.address);
    });

    it("reverts when the asset, the loan book, the admin, the treasury or the forwarder is zero", async () => {
      const { router, usdc, book, forwarder, admin, treasury } = await load();
      const [asset, loans, trusted] = [await usdc.getAddress(), await book.getAddress(), await forwarder.getAddress()];
      const zero = ethers.ZeroAddress;
      for (const args of [
        [zero, loans, admin.address, treasury.address, trusted],
        [asset, zero, admin.address, treasury.address, trusted],
        [asset, loans, zero, treasury.address, trusted],
        [asset, loans, admin.address, zero, trusted],
        [asset, loans, admin.address, treasury.address, zero],
      ]) {
        await expect(ethers.deployContract("PaymentRouter", args)).to.be.revertedWithCustomError(router, "PaymentRouterZeroAddress");
      }
    });

    it("reverts when the loan book lends another asset", async () => {
      const { router, usdc, book, forwarder, admin, treasury } = await load();
      const other = await ethers.deployContract("MockUSDC", [admin.address]);
      await expect(
        ethers.deployContract("PaymentRouter", [
          await other.getAddress(),
          await book.getAddress(),
          admin.address,
          treasury.address,
          await forwarder.getAddress(),
        ]),
      )
        .to.be.revertedWithCustomError(router, "PaymentRouterAssetMismatch")
        .withArgs(await other.getAddress(), await usdc.getAddress());
    });
  });

  describe("paymentKey and paymentOf", () => {
    it("keys a payment by keccak256(abi.encode(ref, merchant, amount)), as the service computes it", async () => {
      const { router, merchant, otherMerchant } = await load();
      for (const [ref, to, amount] of [
        [REF, merchant.address, PAID],
        [REF, otherMerchant.address, PAID],
        [REF, merchant.address, PAID + 1n],
        [ethers.id("order-2"), merchant.address, PAID],
      ] as const) {
        expect(await router.paymentKey(ref, to, amount)).to.equal(paymentKeyOf(ref, to, amount));
      }
      // Each term is part of the key.
      const keys = new Set([
        await router.paymentKey(REF, merchant.address, PAID),
        await router.paymentKey(REF, otherMerchant.address, PAID),
        await router.paymentKey(REF, merchant.address, PAID + 1n),
        await router.paymentKey(ethers.id("order-2"), merchant.address, PAID),
      ]);
      expect(keys.size).to.equal(4);
    });

    it("finds a payment only by its three terms", async () => {
      const f = await loadPaid();
      expect(await paidTuple(f)).to.deep.equal([f.payer.address, f.merchant.address, PAID, USDC(1), 0n]);
      expect(await paymentTuple(f, REF, f.otherMerchant.address, PAID)).to.deep.equal(UNPAID);
      expect(await paymentTuple(f, REF, f.merchant.address, PAID - 1n)).to.deep.equal(UNPAID);
      expect(await paymentTuple(f, ethers.id("order-2"), f.merchant.address, PAID)).to.deep.equal(UNPAID);
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

    it("records the payment, as a direct one without loans", async () => {
      const f = await load();
      expect(await paymentTuple(f, REF, f.merchant.address, USDC(250))).to.deep.equal(UNPAID);
      await f.router.connect(f.payer).pay(REF, f.merchant.address, USDC(250));
      expect(await paymentTuple(f, REF, f.merchant.address, USDC(250))).to.deep.equal([
        f.payer.address,
        f.merchant.address,
        USDC(250),
        2_500_000n,
        0n,
      ]);
      expect((await f.router.paymentOf(REF, f.merchant.address, USDC(250))).method).to.equal(0n); // Direct
      expect(await f.router.loansOf(REF, f.merchant.address, USDC(250))).to.deep.equal([]);
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
        expect((await router.paymentOf(ref, merchant.address, amount)).fee).to.equal(fee);
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
      expect((await router.paymentOf(REF, merchant.address, MAX_UINT128)).amount).to.equal(MAX_UINT128);
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

    it("reverts when the same payment (ref, merchant and amount) was already paid, by the same or another payer, and moves nothing", async () => {
      const f = await loadPaid();
      const { router, usdc, payer, otherPayer, merchant, otherMerchant, treasury } = f;
      const before = await balancesOf(usdc, [payer, otherPayer, merchant, otherMerchant, treasury]);
      await expect(router.connect(payer).pay(REF, merchant.address, PAID))
        .to.be.revertedWithCustomError(router, "PaymentRouterAlreadyPaid")
        .withArgs(REF, merchant.address, PAID);
      await expect(router.connect(otherPayer).pay(REF, merchant.address, PAID))
        .to.be.revertedWithCustomError(router, "PaymentRouterAlreadyPaid")
        .withArgs(REF, merchant.address, PAID);
      expect(await balancesOf(usdc, [payer, otherPayer, merchant, otherMerchant, treasury])).to.deep.equal(before);
      expect(await paidTuple(f)).to.deep.equal([payer.address, merchant.address, PAID, USDC(1), 0n]);
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

    it("leaves the payment unpaid when a check fails, so it can be paid afterwards", async () => {
      const f = await load();
      await expect(f.router.connect(f.payer).pay(REF, f.merchant.address, 0n)).to.be.revertedWithCustomError(
        f.router,
        "PaymentRouterInvalidAmount",
      );
      // The same terms, refused by the token (carol approved nothing): nothing is recorded.
      await expect(f.router.connect(f.carol).pay(REF, f.merchant.address, PAID)).to.be.revertedWithCustomError(
        f.usdc,
        "ERC20InsufficientAllowance",
      );
      expect(await paidTuple(f)).to.deep.equal(UNPAID);
      await expect(f.router.connect(f.payer).pay(REF, f.merchant.address, PAID))
        .to.emit(f.router, "PaymentPaid")
        .withArgs(REF, f.payer.address, f.merchant.address, PAID, USDC(1));
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
      expect(await paymentTuple(f, REF, merchant.address, USDC(20_000))).to.deep.equal(UNPAID);
      expect(await paymentTuple(f, REF, merchant.address, amount)).to.deep.equal(UNPAID);
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

    it("reverts like pay for a paid payment, a zero ref, a zero merchant, the router as merchant or an invalid amount, and applies no permit", async () => {
      const { router, usdc, carol, merchant } = await loadPaid();
      const { deadline, v, r, s } = await signPermit(usdc, carol, router, USDC(100));
      await expect(router.connect(carol).payWithPermit(REF, merchant.address, PAID, deadline, v, r, s))
        .to.be.revertedWithCustomError(router, "PaymentRouterAlreadyPaid")
        .withArgs(REF, merchant.address, PAID);
      const fresh = ethers.id("order-2");
      await expect(
        router.connect(carol).payWithPermit(ethers.ZeroHash, merchant.address, USDC(100), deadline, v, r, s),
      ).to.be.revertedWithCustomError(router, "PaymentRouterEmptyRef");
      await expect(
        router.connect(carol).payWithPermit(fresh, ethers.ZeroAddress, USDC(100), deadline, v, r, s),
      ).to.be.revertedWithCustomError(router, "PaymentRouterZeroAddress");
      await expect(
        router.connect(carol).payWithPermit(fresh, await router.getAddress(), USDC(100), deadline, v, r, s),
      ).to.be.revertedWithCustomError(router, "PaymentRouterSelfAddress");
      await expect(router.connect(carol).payWithPermit(fresh, merchant.address, 0n, deadline, v, r, s))
        .to.be.revertedWithCustomError(router, "PaymentRouterInvalidAmount")
        .withArgs(0n);
      expect(await usdc.nonces(carol.address)).to.equal(0n);
    });
  });

  describe("payWithAuthorization (EIP-3009, D-120)", () => {
    /** carol's authorization of `amount` to the router, bound to the payment (ref, merchant, amount) by its nonce. */
    async function authorize(f: PaymentsFixture, ref: string, amount: bigint, options: { nonce?: string; validBefore?: bigint } = {}) {
      const nonce = options.nonce ?? paymentKeyOf(ref, f.merchant.address, amount);
      return signReceiveAuthorization(f.usdc, f.carol, f.router, amount, nonce, options);
    }
    const submit = (f: PaymentsFixture, ref: string, amount: bigint, auth: Awaited<ReturnType<typeof authorize>>, caller = f.stranger) =>
      f.router
        .connect(caller)
        .payWithAuthorization(ref, f.merchant.address, amount, f.carol.address, auth.validAfter, auth.validBefore, auth.v, auth.r, auth.s);

    it("pays from the payer's one signature, submitted by anyone, through the router and out in the same call", async () => {
      const f = await load();
      const { router, usdc, carol, merchant, treasury, stranger } = f;
      const auth = await authorize(f, REF, USDC(100));
      const changes = await balanceChanges(usdc, [carol, merchant, treasury, router, stranger], async () => {
        await expect(submit(f, REF, USDC(100), auth))
          .to.emit(router, "PaymentPaid")
          .withArgs(REF, carol.address, merchant.address, USDC(100), USDC(1))
          .and.to.emit(usdc, "AuthorizationUsed")
          .withArgs(carol.address, paymentKeyOf(REF, merchant.address, USDC(100)));
      });
      expect(changes).to.deep.equal([-USDC(100), USDC(99), USDC(1), 0n, 0n]);
      expect(await paymentTuple(f, REF, merchant.address, USDC(100))).to.deep.equal([
        carol.address,
        merchant.address,
        USDC(100),
        USDC(1),
        0n,
      ]);
      // Nothing was approved: no allowance is left behind.
      expect(await usdc.allowance(carol.address, await router.getAddress())).to.equal(0n);
    });

    it("pays only the payment its nonce names: another ref, merchant or amount is refused, and a payment once", async () => {
      const f = await load();
      const { router, usdc, carol, merchant, otherMerchant } = f;
      const auth = await authorize(f, REF, USDC(100));
      // The same signature for another payment: the nonce the router derives differs, so the token refuses it.
      await expect(submit(f, ethers.id("order-2"), USDC(100), auth))
        .to.be.revertedWithCustomError(usdc, "ERC3009InvalidSignature")
        .withArgs(carol.address);
      await expect(
        router.payWithAuthorization(REF, otherMerchant.address, USDC(100), carol.address, 0n, auth.validBefore, auth.v, auth.r, auth.s),
      ).to.be.revertedWithCustomError(usdc, "ERC3009InvalidSignature");
      // An authorization with another nonce (not this payment's key) serves no payment.
      const unbound = await authorize(f, REF, USDC(100), { nonce: ethers.id("any nonce") });
      await expect(submit(f, REF, USDC(100), unbound)).to.be.revertedWithCustomError(usdc, "ERC3009InvalidSignature");
      await submit(f, REF, USDC(100), auth);
      await expect(submit(f, REF, USDC(100), auth))
        .to.be.revertedWithCustomError(router, "PaymentRouterAlreadyPaid")
        .withArgs(REF, merchant.address, USDC(100));
    });

    it("cannot be taken by another route: the token pays the router only when the router submits it", async () => {
      const f = await load();
      const { usdc, carol, router, stranger } = f;
      const auth = await authorize(f, REF, USDC(100));
      await expect(
        usdc
          .connect(stranger)
          .receiveWithAuthorization(
            carol.address,
            await router.getAddress(),
            USDC(100),
            0n,
            auth.validBefore,
            auth.nonce,
            auth.v,
            auth.r,
            auth.s,
          ),
      )
        .to.be.revertedWithCustomError(usdc, "ERC3009CallerNotPayee")
        .withArgs(stranger.address, await router.getAddress());
    });

    it("is refused after its validBefore, and for another payer's address", async () => {
      const f = await load();
      const { router, usdc, carol, merchant, payer } = f;
      const auth = await authorize(f, REF, USDC(10), { validBefore: await inSeconds(ethers, 5) });
      await networkHelpers.time.increase(10);
      await expect(submit(f, REF, USDC(10), auth)).to.be.revertedWithCustomError(usdc, "ERC3009AuthorizationExpired");
      const fresh = await authorize(f, REF, USDC(10));
      await expect(
        router.payWithAuthorization(REF, merchant.address, USDC(10), payer.address, 0n, fresh.validBefore, fresh.v, fresh.r, fresh.s),
      )
        .to.be.revertedWithCustomError(usdc, "ERC3009InvalidSignature")
        .withArgs(payer.address);
      await expect(
        router.payWithAuthorization(REF, merchant.address, USDC(10), ethers.ZeroAddress, 0n, fresh.validBefore, fresh.v, fresh.r, fresh.s),
      ).to.be.revertedWithCustomError(router, "PaymentRouterZeroAddress");
      await expect(
        router.payWithAuthorization(
          REF,
          merchant.address,
          USDC(10),
          await router.getAddress(),
          0n,
          fresh.validBefore,
          fresh.v,
          fresh.r,
          fresh.s,
        ),
      ).to.be.revertedWithCustomError(router, "PaymentRouterSelfAddress");
      expect(await usdc.balanceOf(carol.address)).to.equal(USDC(10_000));
    });

    it("is refunded as a direct payment: from the merchant to the payer", async () => {
      const f = await load();
      const { router, usdc, carol, merchant } = f;
      await submit(f, REF, USDC(100), await authorize(f, REF, USDC(100)));
      const changes = await balanceChanges(usdc, [carol, merchant], async () => {
        await expect(router.connect(merchant).refund(REF, USDC(100), REFUND_REF, USDC(30)))
          .to.emit(router, "PaymentRefunded")
          .withArgs(REF, REFUND_REF, merchant.address, carol.address, USDC(100), USDC(30), USDC(30));
      });
      expect(changes).to.deep.equal([USDC(30), -USDC(30)]);
    });
  });

  describe("refund", () => {
    it("pulls the amount from the merchant to the payer, records it and emits PaymentRefunded", async () => {
      const f = await loadPaid();
      const { router, usdc, payer, merchant, treasury } = f;
      const changes = await balanceChanges(usdc, [payer, merchant, treasury, router], async () => {
        await expect(router.connect(merchant).refund(REF, PAID, REFUND_REF, USDC(40)))
          .to.emit(router, "PaymentRefunded")
          .withArgs(REF, REFUND_REF, merchant.address, payer.address, PAID, USDC(40), USDC(40))
          .and.to.emit(usdc, "Transfer")
          .withArgs(merchant.address, payer.address, USDC(40));
      });
      // The treasury keeps its fee: the merchant bears it.
      expect(changes).to.deep.equal([USDC(40), -USDC(40), 0n, 0n]);
      expect(await paidTuple(f)).to.deep.equal([payer.address, merchant.address, PAID, USDC(1), USDC(40)]);
      expect(await router.refundMade(merchant.address, REFUND_REF)).to.equal(true);
      expect(await router.refundMade(merchant.address, ethers.id("refund-2"))).to.equal(false);
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
          await expect(router.connect(merchant).refund(REF, PAID, ethers.id(`part-${i}`), part))
            .to.emit(router, "PaymentRefunded")
            .withArgs(REF, ethers.id(`part-${i}`), merchant.address, payer.address, PAID, part, total);
        }
      });
      expect(total).to.equal(USDC(100));
      expect(changes).to.deep.equal([USDC(100), -USDC(100)]);
      expect((await router.paymentOf(REF, merchant.address, PAID)).refunded).to.equal(USDC(100));
      await expect(router.connect(merchant).refund(REF, PAID, ethers.id("one-more"), 1n))
        .to.be.revertedWithCustomError(router, "PaymentRouterRefundTooLarge")
        .withArgs(REF, 1n, 0n);
    });

    it("reverts when the amount is above what is left of the payment", async () => {
      const { router, merchant } = await loadPaid();
      await expect(router.connect(merchant).refund(REF, PAID, REFUND_REF, USDC(100) + 1n))
        .to.be.revertedWithCustomError(router, "PaymentRouterRefundTooLarge")
        .withArgs(REF, USDC(100) + 1n, USDC(100));
      await router.connect(merchant).refund(REF, PAID, REFUND_REF, USDC(60));
      await expect(router.connect(merchant).refund(REF, PAID, ethers.id("refund-2"), USDC(40) + 1n))
        .to.be.revertedWithCustomError(router, "PaymentRouterRefundTooLarge")
        .withArgs(REF, USDC(40) + 1n, USDC(40));
      expect((await router.paymentOf(REF, merchant.address, PAID)).refunded).to.equal(USDC(60));
      expect(await router.refundMade(merchant.address, ethers.id("refund-2"))).to.equal(false);
    });

    it("reverts with PaymentRouterInvalidAmount when the amount is zero, and records nothing", async () => {
      const f = await loadPaid();
      const { router, merchant } = f;
      await expect(router.connect(merchant).refund(REF, PAID, REFUND_REF, 0n))
        .to.be.revertedWithCustomError(router, "PaymentRouterInvalidAmount")
        .withArgs(0n);
      expect(await router.refundMade(merchant.address, REFUND_REF)).to.equal(false);
      expect(await paidTuple(f)).to.deep.equal([f.payer.address, merchant.address, PAID, USDC(1), 0n]);
    });

    it("reverts with PaymentRouterNotPaid for anyone but the payment's merchant, the payer included, and changes nothing", async () => {
      const f = await loadPaid();
      const { router, usdc, payer, merchant, otherMerchant, treasury, stranger } = f;
      const before = await balancesOf(usdc, [payer, merchant, otherMerchant, treasury, stranger]);
      for (const caller of [otherMerchant, payer, treasury, stranger]) {
        await expect(router.connect(caller).refund(REF, PAID, REFUND_REF, USDC(1)))
          .to.be.revertedWithCustomError(router, "PaymentRouterNotPaid")
          .withArgs(REF, caller.address, PAID);
        expect(await router.refundMade(caller.address, REFUND_REF)).to.equal(false);
      }
      expect(await router.refundMade(merchant.address, REFUND_REF)).to.equal(false);
      expect(await balancesOf(usdc, [payer, merchant, otherMerchant, treasury, stranger])).to.deep.equal(before);
      expect(await paidTuple(f)).to.deep.equal([payer.address, merchant.address, PAID, USDC(1), 0n]);
    });

    it("reverts with PaymentRouterNotPaid when the merchant has no such payment: a ref never paid, the zero ref, another amount", async () => {
      const { router, merchant } = await loadPaid();
      const unknown = ethers.id("unknown");
      await expect(router.connect(merchant).refund(unknown, PAID, REFUND_REF, USDC(1)))
        .to.be.revertedWithCustomError(router, "PaymentRouterNotPaid")
        .withArgs(unknown, merchant.address, PAID);
      await expect(router.connect(merchant).refund(ethers.ZeroHash, PAID, REFUND_REF, USDC(1)))
        .to.be.revertedWithCustomError(router, "PaymentRouterNotPaid")
        .withArgs(ethers.ZeroHash, merchant.address, PAID);
      for (const paymentAmount of [PAID - 1n, PAID + 1n, 0n]) {
        await expect(router.connect(merchant).refund(REF, paymentAmount, REFUND_REF, USDC(1)))
          .to.be.revertedWithCustomError(router, "PaymentRouterNotPaid")
          .withArgs(REF, merchant.address, paymentAmount);
      }
      expect(await router.refundMade(merchant.address, REFUND_REF)).to.equal(false);
    });

    it("reverts when the refundRef is zero", async () => {
      const { router, merchant } = await loadPaid();
      await expect(router.connect(merchant).refund(REF, PAID, ethers.ZeroHash, USDC(1))).to.be.revertedWithCustomError(
        router,
        "PaymentRouterEmptyRef",
      );
    });

    it("reverts when the merchant used the refundRef, on this payment or another, and refunds nothing twice", async () => {
      const { router, usdc, payer, otherPayer, merchant } = await loadPaid();
      await router.connect(otherPayer).pay(ethers.id("order-2"), merchant.address, USDC(50));
      await router.connect(merchant).refund(REF, PAID, REFUND_REF, USDC(10));
      const before = await balancesOf(usdc, [payer, otherPayer, merchant]);
      await expect(router.connect(merchant).refund(REF, PAID, REFUND_REF, USDC(10)))
        .to.be.revertedWithCustomError(router, "PaymentRouterRefundExists")
        .withArgs(merchant.address, REFUND_REF);
      await expect(router.connect(merchant).refund(ethers.id("order-2"), USDC(50), REFUND_REF, USDC(10)))
        .to.be.revertedWithCustomError(router, "PaymentRouterRefundExists")
        .withArgs(merchant.address, REFUND_REF);
      expect(await balancesOf(usdc, [payer, otherPayer, merchant])).to.deep.equal(before);
      expect((await router.paymentOf(REF, merchant.address, PAID)).refunded).to.equal(USDC(10));
      expect((await router.paymentOf(ethers.id("order-2"), merchant.address, USDC(50))).refunded).to.equal(0n);
    });

    it("reverts with the token's ERC20InsufficientBalance when the merchant lacks the amount, and records nothing", async () => {
      const f = await loadPaid();
      const { router, usdc, merchant, stranger } = f;
      // A full refund needs 100 USDC; the merchant received 99 (it bears the fee).
      await expect(router.connect(merchant).refund(REF, PAID, REFUND_REF, USDC(100)))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientBalance")
        .withArgs(merchant.address, USDC(99), USDC(100));
      await usdc.connect(merchant).transfer(stranger.address, USDC(99));
      await expect(router.connect(merchant).refund(REF, PAID, REFUND_REF, USDC(1)))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientBalance")
        .withArgs(merchant.address, 0n, USDC(1));
      expect(await router.refundMade(merchant.address, REFUND_REF)).to.equal(false);
      expect((await router.paymentOf(REF, merchant.address, PAID)).refunded).to.equal(0n);
    });

    it("reverts with the token's ERC20InsufficientAllowance when the merchant approved nothing", async () => {
      const { router, usdc, merchant } = await loadPaid();
      await usdc.connect(merchant).approve(await router.getAddress(), 0n);
      await expect(router.connect(merchant).refund(REF, PAID, REFUND_REF, USDC(10)))
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
        await expect(router.connect(merchant).refundWithPermit(REF, PAID, REFUND_REF, USDC(30), deadline, v, r, s))
          .to.emit(router, "PaymentRefunded")
          .withArgs(REF, REFUND_REF, merchant.address, payer.address, PAID, USDC(30), USDC(30));
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
      await expect(router.connect(merchant).refundWithPermit(REF, PAID, REFUND_REF, USDC(30), deadline, v, r, s))
        .to.emit(router, "PaymentRefunded")
        .withArgs(REF, REFUND_REF, merchant.address, payer.address, PAID, USDC(30), USDC(30));
    });

    it("reverts like refund for another caller, another amount, a used refundRef, a zero or too large an amount, and applies no permit", async () => {
      const { router, usdc, merchant, otherMerchant } = await loadPaid();
      const permit = await signPermit(usdc, otherMerchant, router, USDC(30));
      await expect(
        router.connect(otherMerchant).refundWithPermit(REF, PAID, REFUND_REF, USDC(30), permit.deadline, permit.v, permit.r, permit.s),
      )
        .to.be.revertedWithCustomError(router, "PaymentRouterNotPaid")
        .withArgs(REF, otherMerchant.address, PAID);
      expect(await usdc.nonces(otherMerchant.address)).to.equal(0n);

      await router.connect(merchant).refund(REF, PAID, REFUND_REF, USDC(10));
      const { deadline, v, r, s } = await signPermit(usdc, merchant, router, USDC(91));
      await expect(router.connect(merchant).refundWithPermit(REF, PAID + 1n, ethers.id("refund-2"), USDC(10), deadline, v, r, s))
        .to.be.revertedWithCustomError(router, "PaymentRouterNotPaid")
        .withArgs(REF, merchant.address, PAID + 1n);
      await expect(router.connect(merchant).refundWithPermit(REF, PAID, REFUND_REF, USDC(10), deadline, v, r, s))
        .to.be.revertedWithCustomError(router, "PaymentRouterRefundExists")
        .withArgs(merchant.address, REFUND_REF);
      await expect(router.connect(merchant).refundWithPermit(REF, PAID, ethers.id("refund-2"), 0n, deadline, v, r, s))
        .to.be.revertedWithCustomError(router, "PaymentRouterInvalidAmount")
        .withArgs(0n);
      await expect(router.connect(merchant).refundWithPermit(REF, PAID, ethers.id("refund-2"), USDC(91), deadline, v, r, s))
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
      expect((await router.paymentOf(REF, merchant.address, PAID)).fee).to.equal(USDC(1));
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
      expect((await router.paymentOf(REF, merchant.address, USDC(100))).payer).to.equal(user.address);
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
      const data = router.interface.encodeFunctionData("refundWithPermit", [REF, PAID, REFUND_REF, USDC(60), deadline, v, r, s]);
      const changes = await balanceChanges(usdc, [payer, shop, relayer], async () => {
        await expect(relay(f, shop, data))
          .to.emit(router, "PaymentRefunded")
          .withArgs(REF, REFUND_REF, shop.address, payer.address, PAID, USDC(60), USDC(60));
      });
      expect(changes).to.deep.equal([USDC(60), -USDC(60), 0n]);
      expect(await ethers.provider.getBalance(shop.address)).to.equal(0n);
      expect(await router.refundMade(shop.address, REFUND_REF)).to.equal(true);
    });

    it("relays a plain refund for a Hardhat merchant", async () => {
      const f = await loadPaid();
      const { router, usdc, payer, merchant } = f;
      const data = router.interface.encodeFunctionData("refund", [REF, PAID, REFUND_REF, USDC(25)]);
      const changes = await balanceChanges(usdc, [payer, merchant], async () => {
        await expect(relay(f, merchant, data))
          .to.emit(router, "PaymentRefunded")
          .withArgs(REF, REFUND_REF, merchant.address, payer.address, PAID, USDC(25), USDC(25));
      });
      expect(changes).to.deep.equal([USDC(25), -USDC(25)]);
    });

    it("checks the merchant against the signer: a relayed refund signed by anyone else fails", async () => {
      const f = await loadPaid();
      const { router, forwarder, relayer, user, merchant } = f;
      const data = router.interface.encodeFunctionData("refund", [REF, PAID, REFUND_REF, USDC(25)]);
      // Signed by the payer-to-be `user`, relayed by the relayer: execute reports FailedCall and keeps the nonce.
      await expect(relay(f, user, data)).to.be.revertedWithCustomError(forwarder, "FailedCall");
      expect(await forwarder.nonces(user.address)).to.equal(0n);
      // The router's own error, for the request as the forwarder sends it.
      const asForwarder = await forwarderAccount(ethers, networkHelpers, forwarder);
      await expect(asForwarder.call(router, data, user.address))
        .to.be.revertedWithCustomError(router, "PaymentRouterNotPaid")
        .withArgs(REF, user.address, PAID);
      // The relayer calling directly is not the merchant either.
      await expect(router.connect(relayer).refund(REF, PAID, REFUND_REF, USDC(25)))
        .to.be.revertedWithCustomError(router, "PaymentRouterNotPaid")
        .withArgs(REF, relayer.address, PAID);
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

  describe("review findings (regressions)", () => {
    describe("1. paying a ref first under other terms does not make its payment unpayable", () => {
      it("a payment of the ref to another merchant, even 1 micro-unit to oneself, leaves the real payment payable", async () => {
        const f = await load();
        const { router, usdc, payer, merchant, carol, treasury } = f;
        await usdc.connect(carol).approve(await router.getAddress(), 1n);
        await expect(router.connect(carol).pay(REF, carol.address, 1n))
          .to.emit(router, "PaymentPaid")
          .withArgs(REF, carol.address, carol.address, 1n, 0n);
        expect(await paidTuple(f)).to.deep.equal(UNPAID);

        const changes = await balanceChanges(usdc, [payer, merchant, treasury], async () => {
          await expect(router.connect(payer).pay(REF, merchant.address, PAID))
            .to.emit(router, "PaymentPaid")
            .withArgs(REF, payer.address, merchant.address, PAID, USDC(1));
        });
        expect(changes).to.deep.equal([-PAID, USDC(99), USDC(1)]);
        expect(await paidTuple(f)).to.deep.equal([payer.address, merchant.address, PAID, USDC(1), 0n]);
        // Each payment keeps its own record, and each of them only is paid once.
        expect(await paymentTuple(f, REF, carol.address, 1n)).to.deep.equal([carol.address, carol.address, 1n, 0n, 0n]);
        await expect(router.connect(payer).pay(REF, merchant.address, PAID))
          .to.be.revertedWithCustomError(router, "PaymentRouterAlreadyPaid")
          .withArgs(REF, merchant.address, PAID);
      });

      it("a payment of the ref to the same merchant of another amount leaves the real payment payable", async () => {
        const f = await load();
        const { router, usdc, payer, otherPayer, merchant } = f;
        await router.connect(otherPayer).pay(REF, merchant.address, PAID - 1n);
        expect(await paidTuple(f)).to.deep.equal(UNPAID);
        await expect(router.connect(payer).pay(REF, merchant.address, PAID))
          .to.emit(router, "PaymentPaid")
          .withArgs(REF, payer.address, merchant.address, PAID, USDC(1));
        expect(await paidTuple(f)).to.deep.equal([payer.address, merchant.address, PAID, USDC(1), 0n]);
        expect(await paymentTuple(f, REF, merchant.address, PAID - 1n)).to.deep.equal([
          otherPayer.address,
          merchant.address,
          PAID - 1n,
          feeOf(PAID - 1n),
          0n,
        ]);
        expect(await usdc.balanceOf(merchant.address)).to.equal(PAID - USDC(1) + PAID - 1n - feeOf(PAID - 1n));
      });

      it("payments of the ref under other terms after the real payment leave its record and its refunds alone", async () => {
        const f = await loadPaid();
        const { router, usdc, payer, otherPayer, merchant, otherMerchant, carol } = f;
        await router.connect(merchant).refund(REF, PAID, REFUND_REF, USDC(10));
        const real = await paidTuple(f);
        expect(real).to.deep.equal([payer.address, merchant.address, PAID, USDC(1), USDC(10)]);

        await usdc.connect(carol).approve(await router.getAddress(), ethers.MaxUint256);
        await router.connect(carol).pay(REF, otherMerchant.address, 1n); // another merchant
        await router.connect(otherPayer).pay(REF, merchant.address, USDC(5)); // another amount
        await router.connect(carol).pay(REF, carol.address, PAID); // both
        expect(await paidTuple(f)).to.deep.equal(real);
        await expect(router.connect(carol).pay(REF, merchant.address, PAID))
          .to.be.revertedWithCustomError(router, "PaymentRouterAlreadyPaid")
          .withArgs(REF, merchant.address, PAID);

        // The rest of the real payment is still refundable to its payer, and only to it.
        const changes = await balanceChanges(usdc, [payer, otherPayer, carol, merchant], async () => {
          await expect(router.connect(merchant).refund(REF, PAID, ethers.id("refund-2"), USDC(90)))
            .to.emit(router, "PaymentRefunded")
            .withArgs(REF, ethers.id("refund-2"), merchant.address, payer.address, PAID, USDC(90), PAID);
        });
        expect(changes).to.deep.equal([USDC(90), 0n, 0n, -USDC(90)]);
        expect((await router.paymentOf(REF, merchant.address, USDC(5))).refunded).to.equal(0n);
      });

      it("a relayed permit payment by a wallet without ETH goes through after the ref was paid under other terms", async () => {
        const f = await load();
        const { router, usdc, forwarder, relayer, user, merchant, carol } = f;
        await usdc.connect(carol).approve(await router.getAddress(), 2n);
        await router.connect(carol).pay(REF, carol.address, 1n);
        await router.connect(carol).pay(REF, merchant.address, 1n);
        const { deadline, v, r, s } = await signPermit(usdc, user, router, PAID);
        const data = router.interface.encodeFunctionData("payWithPermit", [REF, merchant.address, PAID, deadline, v, r, s]);
        await expect(forwarder.connect(relayer).execute(await signRequest(forwarder, user, router, data)))
          .to.emit(router, "PaymentPaid")
          .withArgs(REF, user.address, merchant.address, PAID, USDC(1));
        expect(await paidTuple(f)).to.deep.equal([user.address, merchant.address, PAID, USDC(1), 0n]);
      });
    });

    describe("2. another merchant cannot use up a merchant's refund ref", () => {
      it("a refund ref used by another merchant on its own payment stays usable by the merchant, each once", async () => {
        const f = await loadPaid();
        const { router, usdc, payer, merchant, carol } = f;
        const refundRef = ethers.id("merchant's refund");
        const own = ethers.id("carol's own order");
        // Carol makes herself a merchant for 1 micro-unit and refunds it with the merchant's refund ref.
        await usdc.connect(carol).approve(await router.getAddress(), ethers.MaxUint256);
        await router.connect(carol).pay(own, carol.address, 1n);
        await expect(router.connect(carol).refund(own, 1n, refundRef, 1n))
          .to.emit(router, "PaymentRefunded")
          .withArgs(own, refundRef, carol.address, carol.address, 1n, 1n, 1n);
        expect(await router.refundMade(carol.address, refundRef)).to.equal(true);
        expect(await router.refundMade(merchant.address, refundRef)).to.equal(false);
        expect(await paidTuple(f)).to.deep.equal([payer.address, merchant.address, PAID, USDC(1), 0n]);

        const changes = await balanceChanges(usdc, [payer, merchant], async () => {
          await expect(router.connect(merchant).refund(REF, PAID, refundRef, USDC(10)))
            .to.emit(router, "PaymentRefunded")
            .withArgs(REF, refundRef, merchant.address, payer.address, PAID, USDC(10), USDC(10));
        });
        expect(changes).to.deep.equal([USDC(10), -USDC(10)]);
        expect(await router.refundMade(merchant.address, refundRef)).to.equal(true);

        // Each merchant's refund ref is its own, used once.
        await expect(router.connect(merchant).refund(REF, PAID, refundRef, USDC(1)))
          .to.be.revertedWithCustomError(router, "PaymentRouterRefundExists")
          .withArgs(merchant.address, refundRef);
        await router.connect(carol).pay(ethers.id("carol's second order"), carol.address, 1n);
        await expect(router.connect(carol).refund(ethers.id("carol's second order"), 1n, refundRef, 1n))
          .to.be.revertedWithCustomError(router, "PaymentRouterRefundExists")
          .withArgs(carol.address, refundRef);
      });

      it("two merchants paid under the same ref and amount refund their own payments, with the same refund ref", async () => {
        const f = await loadPaid();
        const { router, usdc, payer, otherPayer, merchant, otherMerchant } = f;
        await router.connect(otherPayer).pay(REF, otherMerchant.address, PAID);
        // The other merchant's refund of "REF of PAID" is a refund of its own payment, to its own payer.
        let changes = await balanceChanges(usdc, [payer, otherPayer, merchant, otherMerchant], async () => {
          await expect(router.connect(otherMerchant).refund(REF, PAID, REFUND_REF, USDC(30)))
            .to.emit(router, "PaymentRefunded")
            .withArgs(REF, REFUND_REF, otherMerchant.address, otherPayer.address, PAID, USDC(30), USDC(30));
        });
        expect(changes).to.deep.equal([0n, USDC(30), 0n, -USDC(30)]);
        expect(await paidTuple(f)).to.deep.equal([payer.address, merchant.address, PAID, USDC(1), 0n]);
        expect(await router.refundMade(merchant.address, REFUND_REF)).to.equal(false);

        changes = await balanceChanges(usdc, [payer, otherPayer, merchant, otherMerchant], async () => {
          await expect(router.connect(merchant).refund(REF, PAID, REFUND_REF, USDC(40)))
            .to.emit(router, "PaymentRefunded")
            .withArgs(REF, REFUND_REF, merchant.address, payer.address, PAID, USDC(40), USDC(40));
        });
        expect(changes).to.deep.equal([USDC(40), 0n, -USDC(40), 0n]);
        expect((await router.paymentOf(REF, merchant.address, PAID)).refunded).to.equal(USDC(40));
        expect((await router.paymentOf(REF, otherMerchant.address, PAID)).refunded).to.equal(USDC(30));
        expect(await router.refundMade(merchant.address, REFUND_REF)).to.equal(true);
        expect(await router.refundMade(otherMerchant.address, REFUND_REF)).to.equal(true);
        // Refund refs are the merchants' only: the payers' stay free.
        expect(await router.refundMade(payer.address, REFUND_REF)).to.equal(false);
        expect(await router.refundMade(otherPayer.address, REFUND_REF)).to.equal(false);
      });

      it("a merchant with a payment of the same ref of another amount gets PaymentRouterNotPaid for the real one", async () => {
        const f = await loadPaid();
        const { router, usdc, payer, otherPayer, merchant, otherMerchant } = f;
        await router.connect(otherPayer).pay(REF, otherMerchant.address, USDC(5));
        const before = await balancesOf(usdc, [payer, otherPayer, merchant, otherMerchant]);
        await expect(router.connect(otherMerchant).refund(REF, PAID, REFUND_REF, USDC(1)))
          .to.be.revertedWithCustomError(router, "PaymentRouterNotPaid")
          .withArgs(REF, otherMerchant.address, PAID);
        expect(await balancesOf(usdc, [payer, otherPayer, merchant, otherMerchant])).to.deep.equal(before);
        expect(await paidTuple(f)).to.deep.equal([payer.address, merchant.address, PAID, USDC(1), 0n]);
        expect(await router.refundMade(otherMerchant.address, REFUND_REF)).to.equal(false);
        expect(await router.refundMade(merchant.address, REFUND_REF)).to.equal(false);
      });
    });

    describe("3. the router is never the merchant or the treasury", () => {
      it("reverts a payment to the router with PaymentRouterSelfAddress, and moves nothing", async () => {
        const f = await load();
        const { router, usdc, payer, treasury } = f;
        const self = await router.getAddress();
        const before = await balancesOf(usdc, [payer, treasury, router]);
        await expect(router.connect(payer).pay(REF, self, PAID)).to.be.revertedWithCustomError(router, "PaymentRouterSelfAddress");
        expect(await balancesOf(usdc, [payer, treasury, router])).to.deep.equal(before);
        expect(await paymentTuple(f, REF, self, PAID)).to.deep.equal(UNPAID);
      });

      it("reverts a deployment with the router's own address as the treasury with PaymentRouterSelfAddress", async () => {
        const { router, usdc, book, forwarder, admin, treasury } = await load();
        const [asset, loans, trusted] = [await usdc.getAddress(), await book.getAddress(), await forwarder.getAddress()];
        // `deployContract` deploys from the first account, the admin: the router's address follows from its nonce.
        const next = ethers.getCreateAddress({ from: admin.address, nonce: await admin.getNonce() });
        await expect(ethers.deployContract("PaymentRouter", [asset, loans, admin.address, next, trusted])).to.be.revertedWithCustomError(
          router,
          "PaymentRouterSelfAddress",
        );
        // The same deployment with the real treasury lands at that address: the refused treasury was the router.
        const deployed = await ethers.deployContract("PaymentRouter", [asset, loans, admin.address, treasury.address, trusted]);
        expect(await deployed.getAddress()).to.equal(next);
      });

      it("reverts setFee with the router as the treasury with PaymentRouterSelfAddress, and keeps the fee and the treasury", async () => {
        const { router, usdc, admin, payer, merchant, treasury } = await load();
        await expect(router.connect(admin).setFee(200n, await router.getAddress())).to.be.revertedWithCustomError(
          router,
          "PaymentRouterSelfAddress",
        );
        expect(await router.feeBps()).to.equal(DEFAULT_FEE_BPS);
        expect(await router.treasury()).to.equal(treasury.address);
        // Later fees still go to the treasury; the router holds nothing.
        const changes = await balanceChanges(usdc, [treasury, router], () => router.connect(payer).pay(REF, merchant.address, PAID));
        expect(changes).to.deep.equal([USDC(1), 0n]);
      });
    });
  });
});
