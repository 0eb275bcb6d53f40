// The payment router's payments on credit: the operator pays a merchant from the lending pool in one loan (credit)
// or 2 to 12 (split) that the payer owes; the merchant receives the amount less the installments' fees, the treasury
// the fees, the router nothing. Refunds of such payments settle the loans as buy-now-pay-later lenders do: each loan's
// principal and interest fall pro rata, the pool takes back what it has out (or wrote off), and the payer gets back
// what they paid above the smaller loans. Direct payments and their refunds: PaymentRouter.test.ts.
import { expect } from "chai";
import type { ContractTransactionResponse } from "ethers";
import { network } from "hardhat";
import { DAY, nextHour } from "../lending/lending-fixture.js";
import { forwarderAccount, signPermit, signRequest } from "../metatx/metatx-helpers.js";
import { balanceChanges, balancesOf, deployPayments, MAX_UINT128, type PaymentsFixture, POOL, USDC } from "./payments-fixture.js";

const { ethers, networkHelpers } = await network.create();
const { time } = networkHelpers;

enum Method {
  Direct,
  Credit,
  Split,
}
enum Status {
  None,
  Active,
  Overdue,
  Repaid,
  Defaulted,
}

const REF = ethers.id("order-1");
const REFUND_REF = ethers.id("refund-1");

interface Installment {
  loanRef: string;
  price: bigint;
  principal: bigint;
  interest: bigint;
  fee: bigint;
  durationDays: number;
}

/**
 * An installment under the loan ref `label` whose principal is its price (the merchant's fee its whole insurance fee);
 * `price` apart from the principal for the terms of D-127.
 */
const inst = (label: string, principal: bigint, interest: bigint, fee: bigint, durationDays: number, price = principal): Installment => ({
  loanRef: ethers.id(label),
  price,
  principal,
  interest,
  fee,
  durationDays,
});

/** A 100 USDC purchase on credit: one loan of 3 USDC interest over 30 days, a 2 % fee (2 USDC). */
const CREDIT = [inst("loan-credit", USDC(100), USDC(3), USDC(2), 30)];
/** A 100 USDC purchase in three installments (40, 30, 30 USDC) due in 30, 60 and 90 days, a 1.5 % fee each. */
const SPLIT = [
  inst("loan-split-1", USDC(40), 1_200_000n, 600_000n, 30),
  inst("loan-split-2", USDC(30), 900_000n, 450_000n, 60),
  inst("loan-split-3", USDC(30), 900_000n, 450_000n, 90),
];
const AMOUNT = USDC(100);

const load = () => networkHelpers.loadFixture(fixture);
/**
 * The payments fixture with the loan book's expected-loss rates at zero, so that these tests' terms (at or below the
 * 5 % provision of an unproven payer) pass the router's floor on interest; the floor and the gross-up of D-127 are
 * tested at the default rates in "the same loan as a P2P one" below.
 */
async function fixture() {
  const f = await deployPayments(ethers);
  await f.book.connect(f.admin).setExpectedLossRates({ unprovenBps: 0, provenBps: 0 });
  return f;
}

/** The fixture with payment REF of 100 USDC paid on credit (CREDIT) for `payer` to `merchant` at `fundedAt`. */
async function withCredit() {
  const f = await fixture();
  const fundedAt = nextHour(await time.latest());
  await time.setNextBlockTimestamp(fundedAt);
  await f.router.connect(f.operator).payWithLoans(REF, f.merchant.address, f.payer.address, CREDIT);
  return { ...f, fundedAt };
}

/** The fixture with payment REF of 100 USDC paid in three installments (SPLIT) for `payer` to `merchant`. */
async function withSplit() {
  const f = await fixture();
  const fundedAt = nextHour(await time.latest());
  await time.setNextBlockTimestamp(fundedAt);
  await f.router.connect(f.operator).payWithLoans(REF, f.merchant.address, f.payer.address, SPLIT);
  return { ...f, fundedAt };
}

/** The stored payment as a plain tuple: payer, method, merchant, amount, fee, refunded. */
async function paymentTuple(f: PaymentsFixture, ref: string, merchant: string, amount: bigint) {
  const p = await f.router.paymentOf(ref, merchant, amount);
  return [p.payer, p.method, p.merchant, p.amount, p.fee, p.refunded];
}

/** What each loan has been paid so far (principal and interest). */
async function paidOn(f: PaymentsFixture, loanIds: bigint[]) {
  return Promise.all(
    loanIds.map(async (id) => {
      const loan = await f.book.getLoan(id);
      return loan.principalRepaid + loan.interestRepaid;
    }),
  );
}

/** The router's allowance to the loan book. */
async function routerAllowance(f: PaymentsFixture) {
  return f.usdc.allowance(await f.router.getAddress(), await f.book.getAddress());
}

/** The payer's approval of the loan book, for its own repayments. */
async function approveBook(f: PaymentsFixture) {
  await f.usdc.connect(f.payer).approve(await f.book.getAddress(), ethers.MaxUint256);
}

/** The names of the router's and the loan book's events in a transaction, in order. */
async function eventNames(f: PaymentsFixture, tx: Promise<ContractTransactionResponse>) {
  const receipt = await (await tx).wait();
  const watched = [await f.router.getAddress(), await f.book.getAddress()];
  return receipt!.logs
    .filter((log) => watched.includes(log.address))
    .map((log) => (log.address === watched[0] ? f.router : f.book).interface.parseLog(log)!.name);
}

describe("PaymentRouter payments on credit", () => {
  describe("payWithLoans", () => {
    it("pays a credit payment: the vault lends the amount, the merchant gets it less the fee, the fee stays in the insurance reserve (D-101)", async () => {
      const f = await load();
      const { router, book, vault, usdc, operator, payer, merchant, treasury } = f;
      const routerAddress = await router.getAddress();
      const fundedAt = nextHour(await time.latest());
      await time.setNextBlockTimestamp(fundedAt);
      const changes = await balanceChanges(usdc, [vault, merchant, treasury, router, payer, operator, book], async () => {
        await expect(router.connect(operator).payWithLoans(REF, merchant.address, payer.address, CREDIT))
          .to.emit(router, "PaymentPaid")
          .withArgs(REF, payer.address, merchant.address, AMOUNT, USDC(2))
          .and.to.emit(router, "PaymentFinanced")
          .withArgs(REF, merchant.address, payer.address, AMOUNT, Method.Credit, [1n])
          .and.to.emit(book, "LoanFunded")
          .withArgs(1n, CREDIT[0]!.loanRef, payer.address, routerAddress, AMOUNT, USDC(98), USDC(3), USDC(2), 30n, fundedAt + 30 * DAY)
          .and.to.emit(vault, "StakingVaultFundsLent")
          .withArgs(1n, routerAddress, AMOUNT, USDC(2), AMOUNT)
          .and.to.emit(usdc, "Transfer")
          .withArgs(await vault.getAddress(), routerAddress, USDC(98))
          .and.to.emit(usdc, "Transfer")
          .withArgs(routerAddress, merchant.address, USDC(98));
      });
      // Before D-101 the treasury took the 2 and the reserve nothing.
      expect(changes).to.deep.equal([-USDC(98), USDC(98), 0n, 0n, 0n, 0n, 0n]);
      expect(await paymentTuple(f, REF, merchant.address, AMOUNT)).to.deep.equal([
        payer.address,
        BigInt(Method.Credit),
        merchant.address,
        AMOUNT,
        USDC(2),
        0n,
      ]);
      expect(await router.loansOf(REF, merchant.address, AMOUNT)).to.deep.equal([1n]);
      const loan = await book.getLoan(1n);
      expect([loan.borrower, loan.principal, loan.interest, loan.insuranceFee, loan.durationDays, loan.dueDate, loan.status]).to.deep.equal(
        [payer.address, AMOUNT, USDC(3), USDC(2), 30n, BigInt(fundedAt + 30 * DAY), BigInt(Status.Active)],
      );
      expect(await book.remainingBalance(1n)).to.equal(USDC(103));
      expect(await vault.totalBorrowed()).to.equal(AMOUNT);
      expect(await vault.insuranceReserve()).to.equal(USDC(2));
      expect(await routerAllowance(f)).to.equal(0n);
    });

    it("pays a split payment: one loan per installment, in order, each on its terms, the fee the sum of theirs, each in the insurance reserve", async () => {
      const f = await load();
      const { router, book, vault, usdc, operator, payer, merchant, treasury } = f;
      const routerAddress = await router.getAddress();
      const fundedAt = nextHour(await time.latest());
      await time.setNextBlockTimestamp(fundedAt);
      const changes = await balanceChanges(usdc, [vault, merchant, treasury, router, payer], async () => {
        const tx = router.connect(operator).payWithLoans(REF, merchant.address, payer.address, SPLIT);
        await expect(tx)
          .to.emit(router, "PaymentPaid")
          .withArgs(REF, payer.address, merchant.address, AMOUNT, USDC(1) + 500_000n)
          .and.to.emit(router, "PaymentFinanced")
          .withArgs(REF, merchant.address, payer.address, AMOUNT, Method.Split, [1n, 2n, 3n]);
        for (const [i, s] of SPLIT.entries()) {
          await expect(tx)
            .to.emit(book, "LoanFunded")
            .withArgs(
              BigInt(i + 1),
              s.loanRef,
              payer.address,
              routerAddress,
              s.principal,
              s.principal - s.fee,
              s.interest,
              s.fee,
              s.durationDays,
              fundedAt + s.durationDays * DAY,
            );
        }
      });
      expect(changes).to.deep.equal([-(USDC(98) + 500_000n), USDC(98) + 500_000n, 0n, 0n, 0n]);
      expect(await vault.insuranceReserve()).to.equal(USDC(1) + 500_000n);
      expect(await paymentTuple(f, REF, merchant.address, AMOUNT)).to.deep.equal([
        payer.address,
        BigInt(Method.Split),
        merchant.address,
        AMOUNT,
        USDC(1) + 500_000n,
        0n,
      ]);
      expect(await router.loansOf(REF, merchant.address, AMOUNT)).to.deep.equal([1n, 2n, 3n]);
      for (const [i, s] of SPLIT.entries()) {
        const loan = await book.getLoan(BigInt(i + 1));
        expect([loan.borrower, loan.ref, loan.principal, loan.interest, loan.insuranceFee, loan.dueDate]).to.deep.equal([
          payer.address,
          s.loanRef,
          s.principal,
          s.interest,
          s.fee,
          BigInt(fundedAt + s.durationDays * DAY),
        ]);
      }
      // The events come in this order: the loans (each funded in turn), then the payment's two.
      const again = await load();
      expect(
        await eventNames(again, again.router.connect(again.operator).payWithLoans(REF, again.merchant.address, again.payer.address, SPLIT)),
      ).to.deep.equal(["LoanFunded", "LoanFunded", "LoanFunded", "PaymentPaid", "PaymentFinanced"]);
    });

    it("takes up to 12 installments and refuses none or 13 with PaymentRouterInvalidInstallments", async () => {
      const { router, operator, payer, merchant } = await load();
      const many = (n: number) => Array.from({ length: n }, (_, i) => inst(`loan-${i}`, USDC(10), 0n, 0n, 7));
      await expect(router.connect(operator).payWithLoans(REF, merchant.address, payer.address, []))
        .to.be.revertedWithCustomError(router, "PaymentRouterInvalidInstallments")
        .withArgs(0n);
      await expect(router.connect(operator).payWithLoans(REF, merchant.address, payer.address, many(13)))
        .to.be.revertedWithCustomError(router, "PaymentRouterInvalidInstallments")
        .withArgs(13n);
      await expect(router.connect(operator).payWithLoans(REF, merchant.address, payer.address, many(12)))
        .to.emit(router, "PaymentFinanced")
        .withArgs(
          REF,
          merchant.address,
          payer.address,
          USDC(120),
          Method.Split,
          Array.from({ length: 12 }, (_, i) => BigInt(i + 1)),
        );
    });

    it("refuses an installment's fee above 10 % of its price with PaymentRouterInstallmentFeeTooHigh, and takes exactly 10 %", async () => {
      const { router, vault, usdc, operator, payer, merchant, treasury } = await load();
      const list = [inst("a", USDC(50), 0n, USDC(5), 30), inst("b", USDC(30) + 9n, 0n, USDC(3) + 1n, 30)];
      // 10 % of 30.000009 USDC is 3.0000009, rounded down to 3 USDC: 3.000001 is above it.
      await expect(router.connect(operator).payWithLoans(REF, merchant.address, payer.address, list))
        .to.be.revertedWithCustomError(router, "PaymentRouterInstallmentFeeTooHigh")
        .withArgs(1n, USDC(3) + 1n, USDC(3));
      list[1]!.fee = USDC(3);
      const changes = await balanceChanges(usdc, [merchant, treasury], () =>
        router.connect(operator).payWithLoans(REF, merchant.address, payer.address, list),
      );
      expect(changes).to.deep.equal([USDC(72) + 9n, 0n]);
      expect(await vault.insuranceReserve()).to.equal(USDC(8));
    });

    it("refuses an empty ref, a zero or router merchant, a zero or router payer, and a zero or too large amount", async () => {
      const { router, operator, payer, merchant } = await load();
      const self = await router.getAddress();
      const pay = (ref: string, to: string, from: string, list: Installment[] = CREDIT) =>
        router.connect(operator).payWithLoans(ref, to, from, list);
      await expect(pay(ethers.ZeroHash, merchant.address, payer.address)).to.be.revertedWithCustomError(router, "PaymentRouterEmptyRef");
      await expect(pay(REF, ethers.ZeroAddress, payer.address)).to.be.revertedWithCustomError(router, "PaymentRouterZeroAddress");
      await expect(pay(REF, self, payer.address)).to.be.revertedWithCustomError(router, "PaymentRouterSelfAddress");
      await expect(pay(REF, merchant.address, ethers.ZeroAddress)).to.be.revertedWithCustomError(router, "PaymentRouterZeroAddress");
      await expect(pay(REF, merchant.address, self)).to.be.revertedWithCustomError(router, "PaymentRouterSelfAddress");
      await expect(pay(REF, merchant.address, payer.address, [inst("zero", 0n, 0n, 0n, 30)]))
        .to.be.revertedWithCustomError(router, "PaymentRouterInvalidAmount")
        .withArgs(0n);
      // A principal above 128 bits is refused before the sum could overflow.
      await expect(pay(REF, merchant.address, payer.address, [inst("big", MAX_UINT128 + 1n, 0n, 0n, 30)]))
        .to.be.revertedWithCustomError(router, "PaymentRouterInvalidAmount")
        .withArgs(MAX_UINT128 + 1n);
      const half = (MAX_UINT128 + 1n) / 2n;
      await expect(pay(REF, merchant.address, payer.address, [inst("h1", half, 0n, 0n, 30), inst("h2", half, 0n, 0n, 30)]))
        .to.be.revertedWithCustomError(router, "PaymentRouterInvalidAmount")
        .withArgs(MAX_UINT128 + 1n);
    });

    it("refuses terms paid already, by either method, moves nothing, and pays the same ref under other terms", async () => {
      const f = await load();
      const { router, usdc, operator, payer, otherPayer, merchant, otherMerchant, vault } = f;
      const holders = [payer, otherPayer, merchant, otherMerchant, vault];
      // Paid directly first: not on credit.
      await router.connect(otherPayer).pay(REF, merchant.address, AMOUNT);
      let before = await balancesOf(usdc, holders);
      await expect(router.connect(operator).payWithLoans(REF, merchant.address, payer.address, CREDIT))
        .to.be.revertedWithCustomError(router, "PaymentRouterAlreadyPaid")
        .withArgs(REF, merchant.address, AMOUNT);
      expect(await balancesOf(usdc, holders)).to.deep.equal(before);
      expect(await router.loansOf(REF, merchant.address, AMOUNT)).to.deep.equal([]);

      // Paid on credit first: neither directly nor on credit again (in one or several installments).
      const ref2 = ethers.id("order-2");
      await router.connect(operator).payWithLoans(ref2, merchant.address, payer.address, CREDIT);
      before = await balancesOf(usdc, holders);
      await expect(router.connect(otherPayer).pay(ref2, merchant.address, AMOUNT))
        .to.be.revertedWithCustomError(router, "PaymentRouterAlreadyPaid")
        .withArgs(ref2, merchant.address, AMOUNT);
      const again = [inst("other-1", USDC(50), 0n, 0n, 30), inst("other-2", USDC(50), 0n, 0n, 30)];
      await expect(router.connect(operator).payWithLoans(ref2, merchant.address, otherPayer.address, again))
        .to.be.revertedWithCustomError(router, "PaymentRouterAlreadyPaid")
        .withArgs(ref2, merchant.address, AMOUNT);
      expect(await balancesOf(usdc, holders)).to.deep.equal(before);
      expect(await paymentTuple(f, ref2, merchant.address, AMOUNT)).to.deep.equal([
        payer.address,
        BigInt(Method.Credit),
        merchant.address,
        AMOUNT,
        USDC(2),
        0n,
      ]);
      expect(await f.book.loanCount()).to.equal(1n);

      // The same ref to another merchant is another payment.
      await expect(router.connect(operator).payWithLoans(ref2, otherMerchant.address, otherPayer.address, again))
        .to.emit(router, "PaymentFinanced")
        .withArgs(ref2, otherMerchant.address, otherPayer.address, AMOUNT, Method.Split, [2n, 3n]);
    });

    it("reverts with the loan book's errors for an installment outside its limits or a loan ref used, and records nothing", async () => {
      const f = await load();
      const { router, book, operator, payer, merchant } = f;
      const pay = (list: Installment[]) => router.connect(operator).payWithLoans(REF, merchant.address, payer.address, list);
      const ok = inst("ok", USDC(10), 0n, 0n, 30);
      await expect(pay([ok, inst("big", USDC(500) + 1n, 0n, 0n, 30)]))
        .to.be.revertedWithCustomError(book, "LoanBookInvalidPrincipal")
        .withArgs(USDC(500) + 1n, USDC(500));
      await expect(pay([ok, inst("short", USDC(10), 0n, 0n, 6)]))
        .to.be.revertedWithCustomError(book, "LoanBookInvalidDuration")
        .withArgs(6n, 7n, 90n);
      await expect(pay([inst("dear", USDC(10), USDC(2) + 1n, 0n, 30)]))
        .to.be.revertedWithCustomError(book, "LoanBookInterestTooHigh")
        .withArgs(USDC(2) + 1n, USDC(2));
      // The same loan ref twice in one payment: the second finds the first's loan, and all of it is undone.
      await expect(pay([ok, ok]))
        .to.be.revertedWithCustomError(book, "LoanBookDuplicateRef")
        .withArgs(ok.loanRef, 1n);
      expect(await book.loanCount()).to.equal(0n);
      expect(await paymentTuple(f, REF, merchant.address, USDC(20))).to.deep.equal([
        ethers.ZeroAddress,
        0n,
        ethers.ZeroAddress,
        0n,
        0n,
        0n,
      ]);
      // A loan ref the loan book used already.
      await router.connect(operator).payWithLoans(ethers.id("order-0"), merchant.address, payer.address, [ok]);
      await expect(pay([ok]))
        .to.be.revertedWithCustomError(book, "LoanBookDuplicateRef")
        .withArgs(ok.loanRef, 1n);
      await expect(pay([inst("fresh", USDC(10), 0n, 0n, 30)])).to.emit(router, "PaymentPaid");
    });

    it("reverts with the vault's StakingVaultInsufficientLiquidity when the pool cannot lend an installment, and records nothing", async () => {
      const f = await load();
      const { router, book, vault, usdc, operator, payer, merchant, depositor } = f;
      // Leave 150 USDC idle in the pool.
      await vault.connect(depositor).withdraw(POOL - USDC(150), depositor.address, depositor.address);
      expect(await vault.idleAssets()).to.equal(USDC(150));
      await expect(router.connect(operator).payWithLoans(REF, merchant.address, payer.address, [inst("big", USDC(200), 0n, 0n, 30)]))
        .to.be.revertedWithCustomError(vault, "StakingVaultInsufficientLiquidity")
        .withArgs(USDC(200), USDC(135)); // 90 % of the pool (the utilization cap, D-101)
      // The first two installments fit, the third does not: none of them stays.
      const list = [inst("s1", USDC(60), 0n, 0n, 30), inst("s2", USDC(60), 0n, 0n, 60), inst("s3", USDC(60), 0n, 0n, 90)];
      const before = await balancesOf(usdc, [vault, merchant, router]);
      await expect(router.connect(operator).payWithLoans(REF, merchant.address, payer.address, list))
        .to.be.revertedWithCustomError(vault, "StakingVaultInsufficientLiquidity")
        .withArgs(USDC(60), USDC(15));
      expect(await balancesOf(usdc, [vault, merchant, router])).to.deep.equal(before);
      expect(await book.loanCount()).to.equal(0n);
      expect((await router.paymentOf(REF, merchant.address, USDC(180))).payer).to.equal(ethers.ZeroAddress);
      // Within the liquidity, it pays.
      list.pop();
      await expect(router.connect(operator).payWithLoans(REF, merchant.address, payer.address, list)).to.emit(router, "PaymentFinanced");
      expect(await vault.idleAssets()).to.equal(USDC(30));
    });

    it("reverts with EnforcedPause while the vault is paused", async () => {
      const { router, vault, admin, operator, payer, merchant } = await load();
      await vault.connect(admin).pause();
      await expect(router.connect(operator).payWithLoans(REF, merchant.address, payer.address, CREDIT)).to.be.revertedWithCustomError(
        vault,
        "EnforcedPause",
      );
    });

    it("reverts for a caller without the router's OPERATOR_ROLE: the payer, the merchant, the admin", async () => {
      const { router, admin, payer, merchant, stranger } = await load();
      for (const caller of [payer, merchant, admin, stranger]) {
        await expect(router.connect(caller).payWithLoans(REF, merchant.address, payer.address, CREDIT))
          .to.be.revertedWithCustomError(router, "AccessControlUnauthorizedAccount")
          .withArgs(caller.address, await router.OPERATOR_ROLE());
      }
    });

    it("reverts with the loan book's AccessControlUnauthorizedAccount when the router lacks its OPERATOR_ROLE", async () => {
      const { router, book, admin, operator, payer, merchant } = await load();
      await book.connect(admin).revokeRole(await book.OPERATOR_ROLE(), await router.getAddress());
      await expect(router.connect(operator).payWithLoans(REF, merchant.address, payer.address, CREDIT))
        .to.be.revertedWithCustomError(book, "AccessControlUnauthorizedAccount")
        .withArgs(await router.getAddress(), await book.OPERATOR_ROLE());
    });

    it("takes the operator's signed request relayed by the forwarder, and checks the role against the signer", async () => {
      const { router, forwarder, relayer, operator, stranger, payer, merchant } = await load();
      const data = router.interface.encodeFunctionData("payWithLoans", [REF, merchant.address, payer.address, CREDIT]);
      const asForwarder = await forwarderAccount(ethers, networkHelpers, forwarder);
      await expect(asForwarder.call(router, data, stranger.address))
        .to.be.revertedWithCustomError(router, "AccessControlUnauthorizedAccount")
        .withArgs(stranger.address, await router.OPERATOR_ROLE());
      await expect(forwarder.connect(relayer).execute(await signRequest(forwarder, operator, router, data)))
        .to.emit(router, "PaymentPaid")
        .withArgs(REF, payer.address, merchant.address, AMOUNT, USDC(2));
    });
  });

  describe("refunds of payments on credit", () => {
    it("a full refund of a fresh credit payment closes the loan: the payer owes nothing, interest included, and the pool has its principal back", async () => {
      const f = await networkHelpers.loadFixture(withCredit);
      const { router, book, vault, usdc, admin, payer, merchant, fundedAt } = f;
      await usdc.connect(admin).mint(merchant.address, USDC(2)); // the fee it bears
      await time.setNextBlockTimestamp(fundedAt + DAY);
      const changes = await balanceChanges(usdc, [merchant, payer, vault, router], async () => {
        await expect(router.connect(merchant).refund(REF, AMOUNT, REFUND_REF, AMOUNT))
          .to.emit(router, "PaymentRefundApplied")
          .withArgs(REF, REFUND_REF, merchant.address, AMOUNT, 0n)
          .and.to.emit(book, "LoanRefunded")
          .withArgs(1n, payer.address, AMOUNT, USDC(3), AMOUNT, 0n, 0n, 0n, true);
      });
      expect(changes).to.deep.equal([-AMOUNT, 0n, AMOUNT, 0n]);
      // Before (#41): the refund repaid 100 of a 100.7 payoff and left the loan open for the interest.
      expect((await book.getLoan(1n)).status).to.equal(BigInt(Status.Repaid));
      expect([await book.payoffAmount(1n), await book.remainingBalance(1n)]).to.deep.equal([0n, 0n]);
      expect(await vault.totalBorrowed()).to.equal(0n);
      expect(await routerAllowance(f)).to.equal(0n);
    });

    it("a partial refund reduces the loan's principal and interest pro rata; nothing reaches the payer", async () => {
      const f = await networkHelpers.loadFixture(withCredit);
      const { router, book, vault, usdc, payer, merchant, fundedAt } = f;
      const routerAddress = await router.getAddress();
      await time.setNextBlockTimestamp(fundedAt + 3 * DAY);
      const changes = await balanceChanges(usdc, [merchant, payer, vault, router], async () => {
        await expect(router.connect(merchant).refund(REF, AMOUNT, REFUND_REF, USDC(40)))
          .to.emit(router, "PaymentRefunded")
          .withArgs(REF, REFUND_REF, merchant.address, payer.address, AMOUNT, USDC(40), USDC(40))
          .and.to.emit(router, "PaymentRefundApplied")
          .withArgs(REF, REFUND_REF, merchant.address, USDC(40), 0n)
          .and.to.emit(book, "LoanRefunded")
          .withArgs(1n, payer.address, USDC(40), 1_200_000n, USDC(40), 0n, 0n, USDC(61) + 800_000n, false)
          .and.to.emit(usdc, "Transfer")
          .withArgs(merchant.address, routerAddress, USDC(40))
          .and.to.emit(usdc, "Transfer")
          .withArgs(routerAddress, await vault.getAddress(), USDC(40));
      });
      expect(changes).to.deep.equal([-USDC(40), 0n, USDC(40), 0n]);
      // 60 USDC at 1.8 USDC for the 30 days: 7 days charged so far, 0.42 USDC.
      const loan = await book.getLoan(1n);
      expect([loan.principal, loan.interest, loan.status]).to.deep.equal([USDC(60), 1_800_000n, BigInt(Status.Active)]);
      expect(await book.payoffAmount(1n)).to.equal(USDC(60) + 420_000n);
      expect((await router.paymentOf(REF, merchant.address, AMOUNT)).refunded).to.equal(USDC(40));
      expect(await routerAllowance(f)).to.equal(0n);
    });

    it("after the payer repaid part, a refund gives back what they paid above the smaller loan: principal from the refund, interest from the vault", async () => {
      const f = await networkHelpers.loadFixture(withCredit);
      const { router, book, vault, usdc, payer, merchant, fundedAt } = f;
      await approveBook(f);
      await time.setNextBlockTimestamp(fundedAt + 10 * DAY); // 1 USDC of interest earned
      await book.connect(payer).repay(1n, USDC(51)); // 1 interest, 50 principal
      await time.setNextBlockTimestamp(fundedAt + 10 * DAY + 100);
      // 70 of 100 refunded: the loan is now 30 at 0.9 interest, which the payer paid over (50 and 1): the pool takes
      // back its 50 out, the payer gets 20 of principal and 0.1 of interest.
      const changes = await balanceChanges(usdc, [merchant, payer, vault, router], async () => {
        await expect(router.connect(merchant).refund(REF, AMOUNT, REFUND_REF, USDC(70)))
          .to.emit(router, "PaymentRefundApplied")
          .withArgs(REF, REFUND_REF, merchant.address, USDC(50), USDC(20))
          .and.to.emit(book, "LoanRefunded")
          .withArgs(1n, payer.address, USDC(70), 2_100_000n, USDC(50), USDC(20), 100_000n, 0n, true)
          .and.to.emit(vault, "StakingVaultInterestReturned");
      });
      expect(changes).to.deep.equal([-USDC(70), USDC(20) + 100_000n, USDC(50) - 100_000n, 0n]);
      expect((await book.getLoan(1n)).status).to.equal(BigInt(Status.Repaid));
      expect(await vault.totalBorrowed()).to.equal(0n);
      expect(await routerAllowance(f)).to.equal(0n);
    });

    it("shares a split payment's refunds in proportion to its loans' principals; two that add up to the amount leave the payer owing and out of pocket nothing", async () => {
      const f = await networkHelpers.loadFixture(withSplit);
      const { router, book, vault, usdc, admin, payer, merchant, fundedAt } = f;
      await approveBook(f);
      await time.setNextBlockTimestamp(fundedAt + 2 * DAY);
      // The payer repays 20 USDC of the third loan itself: 0.07 of interest (7 of 90 days), 19.93 of principal.
      await book.connect(payer).repay(3n, USDC(20));

      // 60 USDC: 24, 18 and 18 (in proportion to 40, 30 and 30). The third loan had 10.07 out: the pool takes
      // that, and 7.93 of what the payer paid on it comes back.
      let changes = await balanceChanges(usdc, [merchant, payer, vault, router], async () => {
        await expect(router.connect(merchant).refund(REF, AMOUNT, REFUND_REF, USDC(60)))
          .to.emit(router, "PaymentRefundApplied")
          .withArgs(REF, REFUND_REF, merchant.address, USDC(52) + 70_000n, USDC(7) + 930_000n);
      });
      expect(changes).to.deep.equal([-USDC(60), USDC(7) + 930_000n, USDC(52) + 70_000n, 0n]);
      const loans = async () => Promise.all([1n, 2n, 3n].map((id) => book.getLoan(id)));
      expect((await loans()).map((loan) => [loan.principal, loan.interest])).to.deep.equal([
        [USDC(16), 480_000n],
        [USDC(12), 360_000n],
        [USDC(12), 360_000n],
      ]);
      expect(await book.remainingBalance(3n)).to.equal(290_000n);

      // The other 40 USDC (16, 12 and 12) close every loan: the third's 12 of principal and 0.07 of interest go back.
      await usdc.connect(admin).mint(merchant.address, USDC(2)); // the fee it bears
      changes = await balanceChanges(usdc, [merchant, payer, vault, router], async () => {
        await expect(router.connect(merchant).refund(REF, AMOUNT, ethers.id("refund-2"), USDC(40)))
          .to.emit(router, "PaymentRefunded")
          .withArgs(REF, ethers.id("refund-2"), merchant.address, payer.address, AMOUNT, USDC(40), AMOUNT)
          .and.to.emit(router, "PaymentRefundApplied")
          .withArgs(REF, ethers.id("refund-2"), merchant.address, USDC(28), USDC(12));
      });
      expect(changes).to.deep.equal([-USDC(40), USDC(12) + 70_000n, USDC(28) - 70_000n, 0n]);
      expect((await loans()).map((loan) => loan.status)).to.deep.equal([
        BigInt(Status.Repaid),
        BigInt(Status.Repaid),
        BigInt(Status.Repaid),
      ]);
      expect(await Promise.all([1n, 2n, 3n].map((id) => book.remainingBalance(id)))).to.deep.equal([0n, 0n, 0n]);
      // The payer paid 20 and got 7.93 + 12.07 back; the pool has its 100 back and no interest.
      expect(await vault.totalBorrowed()).to.equal(0n);
      expect(await routerAllowance(f)).to.equal(0n);
      expect(await usdc.balanceOf(await router.getAddress())).to.equal(0n);
      // The refunds add up to the amount: one more micro-unit is refused.
      await expect(router.connect(merchant).refund(REF, AMOUNT, ethers.id("refund-3"), 1n))
        .to.be.revertedWithCustomError(router, "PaymentRouterRefundTooLarge")
        .withArgs(REF, 1n, 0n);
    });

    it("a refund of a defaulted purchase loan goes to the pool up to what it wrote off, even when the payer forced the default; only the rest reaches the payer", async () => {
      const f = await networkHelpers.loadFixture(withCredit);
      const { router, book, vault, usdc, admin, payer, merchant, fundedAt } = f;
      await approveBook(f);
      await time.setNextBlockTimestamp(fundedAt + 2 * DAY);
      await book.connect(payer).repay(1n, USDC(30) + 700_000n); // 0.7 of interest, 30 of principal
      // The payer itself marks the loan defaulted once it may, just before the merchant's refund.
      await time.increaseTo(fundedAt + 37 * DAY + 1);
      await book.connect(payer).markOverdue(1n);
      await book.connect(payer).markDefaulted(1n);
      const assets = await vault.totalAssets();
      await usdc.connect(admin).mint(merchant.address, USDC(2));
      const changes = await balanceChanges(usdc, [merchant, payer, vault, router], async () => {
        await expect(router.connect(merchant).refund(REF, AMOUNT, REFUND_REF, AMOUNT))
          .to.emit(router, "PaymentRefundApplied")
          .withArgs(REF, REFUND_REF, merchant.address, USDC(70), USDC(30))
          .and.to.emit(book, "LoanRefunded")
          .withArgs(1n, payer.address, AMOUNT, USDC(3) - 700_000n, USDC(70), USDC(30), 0n, 0n, false)
          .and.to.emit(vault, "StakingVaultLossRecovered");
      });
      // Before (#41): the whole 100 went to the defaulted payer. Now the pool's 70 of loss is made good first, and
      // the payer gets back only the principal it paid (30); the 0.7 of interest it paid stays with the pool, which
      // lost the loan's term (D-124: before, it went back too).
      expect(changes).to.deep.equal([-AMOUNT, USDC(30), USDC(70), 0n]);
      // The recovery is locked (D-95) and unlocks over the period. The reserve had covered 2 of the 70 (the merchant's
      // fee, the loan's insurance fee: D-101) and takes its 2 back; the depositors' 68 returns to them.
      expect(await vault.totalAssets()).to.equal(assets);
      await time.increase(7 * DAY);
      expect(await vault.totalAssets()).to.equal(assets + USDC(68));
      expect(await vault.insuranceReserve()).to.equal(USDC(2));
      expect((await book.getLoan(1n)).status).to.equal(BigInt(Status.Defaulted));
      expect(await routerAllowance(f)).to.equal(0n);
    });

    it("when the payer repaid everything, a full refund returns all they paid: the principal from the refund, the interest from the vault", async () => {
      const f = await networkHelpers.loadFixture(withCredit);
      const { router, book, vault, usdc, admin, payer, merchant, fundedAt } = f;
      await approveBook(f);
      await time.setNextBlockTimestamp(fundedAt + DAY);
      await book.connect(payer).repay(1n, ethers.MaxUint256); // 100.7: a week's interest
      await usdc.connect(admin).mint(merchant.address, USDC(2));
      const changes = await balanceChanges(usdc, [merchant, payer, vault, router], async () => {
        await expect(router.connect(merchant).refund(REF, AMOUNT, REFUND_REF, AMOUNT))
          .to.emit(router, "PaymentRefundApplied")
          .withArgs(REF, REFUND_REF, merchant.address, 0n, AMOUNT)
          .and.to.emit(book, "LoanRefunded")
          .withArgs(1n, payer.address, AMOUNT, USDC(3), 0n, AMOUNT, 700_000n, 0n, false)
          .and.not.to.emit(book, "LoanRepaymentMade");
      });
      expect(changes).to.deep.equal([-AMOUNT, AMOUNT + 700_000n, -700_000n, 0n]);
      expect(await routerAllowance(f)).to.equal(0n);
    });

    it("refunds with the merchant's permit and no prior allowance", async () => {
      const f = await networkHelpers.loadFixture(withCredit);
      const { router, usdc, payer, merchant } = f;
      await usdc.connect(merchant).approve(await router.getAddress(), 0n);
      const { deadline, v, r, s } = await signPermit(usdc, merchant, router, USDC(30));
      const changes = await balanceChanges(usdc, [merchant, payer, router], async () => {
        await expect(router.connect(merchant).refundWithPermit(REF, AMOUNT, REFUND_REF, USDC(30), deadline, v, r, s))
          .to.emit(router, "PaymentRefundApplied")
          .withArgs(REF, REFUND_REF, merchant.address, USDC(30), 0n);
      });
      expect(changes).to.deep.equal([-USDC(30), 0n, 0n]);
      expect(await usdc.allowance(merchant.address, await router.getAddress())).to.equal(0n);
      expect(await routerAllowance(f)).to.equal(0n);
    });

    it("settles purchase loans only through the router: the service's operator key cannot call refundLoan", async () => {
      const f = await networkHelpers.loadFixture(withCredit);
      const { book, operator, admin } = f;
      for (const caller of [operator, admin]) {
        await expect(book.connect(caller).refundLoan(1n, USDC(1)))
          .to.be.revertedWithCustomError(book, "AccessControlUnauthorizedAccount")
          .withArgs(caller.address, await book.REFUNDER_ROLE());
      }
    });

    it("keeps the checks of a direct refund: only the merchant, each refund ref once, within the amount, from its balance", async () => {
      const f = await networkHelpers.loadFixture(withCredit);
      const { router, book, usdc, payer, merchant, operator, stranger } = f;
      for (const caller of [payer, operator, stranger]) {
        await expect(router.connect(caller).refund(REF, AMOUNT, REFUND_REF, USDC(1)))
          .to.be.revertedWithCustomError(router, "PaymentRouterNotPaid")
          .withArgs(REF, caller.address, AMOUNT);
      }
      await expect(router.connect(merchant).refund(REF, AMOUNT, REFUND_REF, AMOUNT + 1n))
        .to.be.revertedWithCustomError(router, "PaymentRouterRefundTooLarge")
        .withArgs(REF, AMOUNT + 1n, AMOUNT);
      // The merchant received 98 USDC: a full refund needs 2 more.
      await expect(router.connect(merchant).refund(REF, AMOUNT, REFUND_REF, AMOUNT))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientBalance")
        .withArgs(merchant.address, USDC(98), AMOUNT);
      expect((await book.getLoan(1n)).principal).to.equal(AMOUNT);
      await router.connect(merchant).refund(REF, AMOUNT, REFUND_REF, USDC(10));
      await expect(router.connect(merchant).refund(REF, AMOUNT, REFUND_REF, USDC(10)))
        .to.be.revertedWithCustomError(router, "PaymentRouterRefundExists")
        .withArgs(merchant.address, REFUND_REF);
      expect((await book.getLoan(1n)).principal).to.equal(USDC(90));
      expect(await book.loanCount()).to.equal(1n);
    });

    it("leaves a direct payment's refund unchanged: from the merchant to the payer, no loan touched", async () => {
      const f = await networkHelpers.loadFixture(withCredit);
      const { router, usdc, otherPayer, merchant } = f;
      const ref = ethers.id("direct");
      await router.connect(otherPayer).pay(ref, merchant.address, USDC(50));
      const changes = await balanceChanges(usdc, [merchant, otherPayer, router], async () => {
        await expect(router.connect(merchant).refund(ref, USDC(50), REFUND_REF, USDC(20)))
          .to.emit(usdc, "Transfer")
          .withArgs(merchant.address, otherPayer.address, USDC(20))
          .and.not.to.emit(router, "PaymentRefundApplied");
      });
      expect(changes).to.deep.equal([-USDC(20), USDC(20), 0n]);
      expect(await paidOn(f, [1n])).to.deep.equal([0n]);
    });
  });
});
