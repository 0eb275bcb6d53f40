// A purchase on credit is the same loan a P2P borrower would take (D-127): the pool pays the merchant the price less
// its fee, and the loan's principal above that is its insurance fee, so the reserve gets the share a P2P loan gives
// it whoever pays it (the merchant's fee, then the payer's terms); its interest pays the depositors at least the
// loan's provision (D-126), at the loan book's default rates. The mechanics of payments on credit and their refunds:
// PaymentRouter.credit.test.ts.
import { expect } from "chai";
import { network } from "hardhat";
import { DAY } from "../lending/lending-fixture.js";
import { balanceChanges, deployPayments, USDC } from "./payments-fixture.js";

const { ethers, networkHelpers } = await network.create();
const { time } = networkHelpers;

const REF = ethers.id("order-terms");
const BPS = 10_000n;
/** The P2P loan's insurance fee (the service's INSURANCE_FEE_BPS). */
const INSURANCE_BPS = 1_000n;
const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b;

async function fixture() {
  return deployPayments(ethers);
}
const load = () => networkHelpers.loadFixture(fixture);

/** The service's terms for a part of `price` with the merchant's `feeBps` (domain/payments/financing.ts). */
function grossUp(label: string, price: bigint, feeBps: bigint, interestBps: bigint, durationDays: number) {
  const fee = (price * feeBps) / BPS;
  const principal = ((price - fee) * BPS) / (BPS - INSURANCE_BPS);
  return { loanRef: ethers.id(label), price, principal, interest: ceilDiv(principal * interestBps, BPS), fee, durationDays };
}

describe("PaymentRouter: a purchase on credit is the same loan as a P2P one (D-127)", () => {
  it("funds the reserve at a P2P loan's 10 %: the merchant's fee and the payer's part of the principal", async () => {
    const f = await load();
    const { router, book, vault, usdc, operator, payer, merchant } = f;
    const credit = grossUp("credit", USDC(100), 200n, 500n, 30);
    // 98 to the merchant is 90 % of 108.888888: the payer owes 8.888888 more than the price, the reserve gets 10.888888.
    expect([credit.principal, credit.interest]).to.deep.equal([108_888_888n, 5_444_445n]);
    const changes = await balanceChanges(usdc, [vault, merchant, payer], async () => {
      await expect(router.connect(operator).payWithLoans(REF, merchant.address, payer.address, [credit]))
        .to.emit(router, "PaymentPaid")
        .withArgs(REF, payer.address, merchant.address, USDC(100), USDC(2));
    });
    expect(changes).to.deep.equal([-USDC(98), USDC(98), 0n]);
    const loan = await book.getLoan(1n);
    expect([loan.principal, loan.insuranceFee, loan.interest]).to.deep.equal([108_888_888n, 10_888_888n, 5_444_445n]);
    expect(await vault.insuranceReserve()).to.equal(10_888_888n);
    // Before D-127 the reserve got the merchant's 2 USDC: a fifth of what the same P2P loan gives it.
    expect((loan.insuranceFee * BPS) / loan.principal).to.equal(INSURANCE_BPS - 1n);
    expect(await vault.totalBorrowed()).to.equal(108_888_888n);
    const payment = await router.paymentOf(REF, merchant.address, USDC(100));
    expect([payment.amount, payment.fee]).to.deep.equal([USDC(100), USDC(2)]);
  });

  it("refuses interest below the loan's provision and a principal below the price, and takes the floor exactly", async () => {
    const f = await load();
    const { router, book, operator, payer, merchant } = f;
    // A split at no interest (before D-127) leaves the depositors the 5 % provision of an unproven payer unpaid.
    const parts = [grossUp("s1", USDC(50), 150n, 0n, 7), grossUp("s2", USDC(50), 150n, 0n, 14)];
    const floor = await book.minInterestOf(payer.address, parts[0]!.principal);
    expect(floor).to.equal(ceilDiv(parts[0]!.principal * 500n, BPS));
    await expect(router.connect(operator).payWithLoans(REF, merchant.address, payer.address, parts))
      .to.be.revertedWithCustomError(router, "PaymentRouterInterestBelowExpectedLoss")
      .withArgs(0n, 0n, floor);
    const short = { ...grossUp("s1", USDC(50), 150n, 500n, 7), principal: USDC(50) - 1n };
    await expect(router.connect(operator).payWithLoans(REF, merchant.address, payer.address, [short]))
      .to.be.revertedWithCustomError(router, "PaymentRouterPrincipalBelowPrice")
      .withArgs(0n, USDC(50) - 1n, USDC(50));
    const atFloor = await Promise.all(
      parts.map(async (part) => ({ ...part, interest: await book.minInterestOf(payer.address, part.principal) })),
    );
    await expect(router.connect(operator).payWithLoans(REF, merchant.address, payer.address, atFloor)).to.emit(router, "PaymentFinanced");
  });

  it("prices the floor by the loan's class and grosses it up by the reserve factor", async () => {
    const f = await load();
    const { book, model, usdc, admin, payer } = f;
    expect(await book.minInterestOf(payer.address, USDC(100))).to.equal(USDC(5));
    // The payer proves itself up to 100 USDC: a loan of its own, held a week and repaid in full with its money.
    await book.connect(admin).grantRole(await book.OPERATOR_ROLE(), admin.address);
    await book.connect(admin).fundLoan(ethers.id("proof"), payer.address, USDC(100), USDC(2), USDC(10), 30);
    await time.increase(7 * DAY);
    await usdc.connect(payer).approve(await book.getAddress(), ethers.MaxUint256);
    await book.connect(payer).repay(1n, await book.payoffAmount(1n));
    expect(await book.provenUpTo(payer.address)).to.equal(USDC(100));
    expect(await book.minInterestOf(payer.address, USDC(100))).to.equal(USDC(1));
    expect(await book.minInterestOf(payer.address, USDC(100) + 1n)).to.equal(5_000_001n);
    // With a fifth of each interest kept for the reserve, the depositors' part still pays the provision.
    await model.connect(admin).setReserveFactor(ethers.parseEther("0.2"));
    expect(await book.minInterestOf(payer.address, USDC(100))).to.equal(1_250_000n);
  });

  it("pays the depositors the interest, at least the provision, when the payer repays a split at its terms", async () => {
    const f = await load();
    const { router, book, vault, usdc, operator, payer, merchant } = f;
    const split = [grossUp("p1", USDC(60), 150n, 500n, 7), grossUp("p2", USDC(60), 150n, 500n, 14)];
    const before = await vault.totalAssets();
    await router.connect(operator).payWithLoans(REF, merchant.address, payer.address, split);
    await usdc.connect(payer).approve(await book.getAddress(), ethers.MaxUint256);
    // Each repaid on its due date (the loan book's whole hour), when its schedule has earned all its interest.
    for (const id of [1n, 2n]) {
      const due = Number((await book.getLoan(id)).dueDate);
      const owed = await book.remainingBalance(id);
      await time.setNextBlockTimestamp(due);
      await book.connect(payer).repay(id, owed);
    }
    const interest = split.reduce((sum, part) => sum + part.interest, 0n);
    const provision = split.reduce((sum, part) => sum + (part.principal * 500n) / BPS, 0n);
    // The pool lent 118.2 in cash, kept the insurance fees as reserve and got principals and interest back.
    // (To the micro-unit of each schedule's rounding.)
    const gain = (await vault.totalAssets()) - before;
    expect(interest - gain <= 2n && gain <= interest).to.equal(true);
    expect(gain >= provision).to.equal(true);
  });

  it("a full refund repays the price: the payer still owes the insurance fee its terms added, with its interest", async () => {
    const f = await load();
    const { router, book, vault, usdc, admin, operator, payer, merchant } = f;
    const credit = grossUp("credit", USDC(100), 200n, 500n, 30);
    await router.connect(operator).payWithLoans(REF, merchant.address, payer.address, [credit]);
    await usdc.connect(admin).mint(merchant.address, USDC(2)); // the fee it bears
    await router.connect(merchant).refund(REF, USDC(100), ethers.id("refund"), USDC(100));
    const loan = await book.getLoan(1n);
    expect(loan.principal).to.equal(credit.principal - USDC(100));
    expect(loan.interest).to.equal(credit.interest - (credit.interest * USDC(100)) / credit.principal);
    expect(await book.remainingBalance(1n)).to.equal(loan.principal + loan.interest);
    // The pool has the price back; the reserve keeps the insurance fee, as on a P2P loan.
    expect(await vault.totalBorrowed()).to.equal(credit.principal - USDC(100));
    expect(await vault.insuranceReserve()).to.equal(credit.principal - USDC(98));
  });

  it("a refunded purchase's premium left to default costs the colluding pair more than the depositors (the red team's griefing)", async () => {
    const f = await load();
    const { router, book, vault, usdc, admin, operator, payer, merchant } = f;
    const depositorsBefore = await vault.totalAssets();
    const credit = grossUp("credit", USDC(100), 200n, 500n, 30);
    await router.connect(operator).payWithLoans(REF, merchant.address, payer.address, [credit]);
    await usdc.connect(admin).mint(merchant.address, USDC(2)); // the fee it bears
    await router.connect(merchant).refund(REF, USDC(100), ethers.id("refund"), USDC(100));
    const loan = await book.getLoan(1n);
    await time.increaseTo(Number(loan.dueDate) + Number(loan.gracePeriodDays) * DAY + 1);
    await book.markOverdue(1n);
    await book.markDefaulted(1n);
    // The depositors bear the uncovered fifth of the 8.888888 premium (1.777778); the pair lost the merchant's 2.
    const depositorsLost = depositorsBefore - (await vault.totalAssets());
    expect(depositorsLost).to.equal(1_777_778n);
    expect(depositorsLost < USDC(2)).to.equal(true);
  });
});
