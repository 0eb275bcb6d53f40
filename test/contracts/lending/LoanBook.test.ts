import { expect } from "chai";
import type { ContractTransactionResponse } from "ethers";
import { network } from "hardhat";
import { DAY, deployLending, nextHour, USDC, WAD } from "./lending-fixture.js";

const { ethers, networkHelpers } = await network.create();
const { time } = networkHelpers;

enum Status {
  None,
  Active,
  Overdue,
  Repaid,
  Defaulted,
}

const REF = ethers.id("loan-1");
const DEFAULT_LIMITS = {
  maxPrincipal: USDC(500),
  minDurationDays: 7,
  maxDurationDays: 90,
  gracePeriodDays: 7,
  maxInterestBps: 2_000,
  maxInsuranceFeeBps: 2_000,
};
const limitsTuple = (l: typeof DEFAULT_LIMITS) => [
  l.maxPrincipal,
  l.minDurationDays,
  l.maxDurationDays,
  l.gracePeriodDays,
  l.maxInterestBps,
  l.maxInsuranceFeeBps,
];

describe("LoanBook", () => {
  /** The system with 10,000 USDC deposited by Alice. */
  async function deploy() {
    const f = await deployLending(ethers);
    await f.vault.connect(f.alice).deposit(USDC(10_000), f.alice.address);
    return f;
  }

  /** Loan 1: 300 USDC, 30 USDC interest, 30 USDC fee, 30 days, funded at `fundedAt`. */
  async function withLoan() {
    const f = await deploy();
    const fundedAt = nextHour(await time.latest());
    await time.setNextBlockTimestamp(fundedAt);
    await f.book.connect(f.operator).fundLoan(REF, f.borrower.address, USDC(300), USDC(30), USDC(30), 30);
    return { ...f, fundedAt, dueDate: fundedAt + 30 * DAY };
  }

  describe("constructor", () => {
    it("wires the vault and asset, grants the admin and sets the default limits", async () => {
      const { book, vault, usdc, admin } = await networkHelpers.loadFixture(deploy);
      expect(await book.vault()).to.equal(await vault.getAddress());
      expect(await book.asset()).to.equal(await usdc.getAddress());
      expect(await book.hasRole(await book.DEFAULT_ADMIN_ROLE(), admin.address)).to.equal(true);
      expect(await book.limits()).to.deep.equal(limitsTuple(DEFAULT_LIMITS));
      expect(await book.MIN_CHARGED_DAYS()).to.equal(7n);
      expect(await book.OPERATOR_ROLE()).to.equal(ethers.id("OPERATOR_ROLE"));
      expect(await book.loanCount()).to.equal(0n);
    });

    it("emits the default limits", async () => {
      const { vault, admin, forwarder } = await networkHelpers.loadFixture(deploy);
      const book = await ethers.deployContract("LoanBook", [await vault.getAddress(), admin.address, await forwarder.getAddress()]);
      await expect(book.deploymentTransaction()).to.emit(book, "LoanLimitsUpdated").withArgs(limitsTuple(DEFAULT_LIMITS));
    });

    it("reverts when the vault or the admin is zero", async () => {
      const { book, vault, admin, forwarder } = await networkHelpers.loadFixture(deploy);
      const trusted = await forwarder.getAddress();
      await expect(ethers.deployContract("LoanBook", [ethers.ZeroAddress, admin.address, trusted])).to.be.revertedWithCustomError(
        book,
        "LoanBookZeroAddress",
      );
      await expect(
        ethers.deployContract("LoanBook", [await vault.getAddress(), ethers.ZeroAddress, trusted]),
      ).to.be.revertedWithCustomError(book, "LoanBookZeroAddress");
    });

    it("reverts when the forwarder is zero", async () => {
      const { book, vault, admin } = await networkHelpers.loadFixture(deploy);
      await expect(
        ethers.deployContract("LoanBook", [await vault.getAddress(), admin.address, ethers.ZeroAddress]),
      ).to.be.revertedWithCustomError(book, "LoanBookZeroAddress");
    });
  });

  describe("fundLoan", () => {
    it("records the loan, pays the borrower the net amount and emits LoanFunded", async () => {
      const { book, vault, usdc, operator, borrower } = await networkHelpers.loadFixture(deploy);
      const before = await usdc.balanceOf(borrower.address);
      const fundedAt = nextHour(await time.latest());
      await time.setNextBlockTimestamp(fundedAt);
      const dueDate = fundedAt + 30 * DAY;
      await expect(book.connect(operator).fundLoan(REF, borrower.address, USDC(300), USDC(30), USDC(30), 30))
        .to.emit(book, "LoanFunded")
        .withArgs(1n, REF, borrower.address, borrower.address, USDC(300), USDC(270), USDC(30), USDC(30), 30n, dueDate)
        .and.to.emit(vault, "StakingVaultFundsLent")
        .withArgs(1n, borrower.address, USDC(300), USDC(30), USDC(300));
      expect((await usdc.balanceOf(borrower.address)) - before).to.equal(USDC(270));
      expect(await book.loanCount()).to.equal(1n);
      expect(await book.loanIdOf(REF)).to.equal(1n);
      expect(await book.loanIdOf(ethers.id("unknown"))).to.equal(0n);
      const loan = await book.getLoan(1n);
      expect([loan.borrower, loan.fundedAt, loan.dueDate, loan.durationDays, loan.status, loan.ref]).to.deep.equal([
        borrower.address,
        BigInt(fundedAt),
        BigInt(dueDate),
        30n,
        BigInt(Status.Active),
        REF,
      ]);
      expect([loan.principal, loan.interest, loan.principalRepaid, loan.interestRepaid, loan.insuranceFee]).to.deep.equal([
        USDC(300),
        USDC(30),
        0n,
        0n,
        USDC(30),
      ]);
      expect(await vault.totalBorrowed()).to.equal(USDC(300));
      expect(await vault.insuranceReserve()).to.equal(USDC(30));
      expect(await usdc.balanceOf(await book.getAddress())).to.equal(0n);
    });

    it("assigns sequential ids", async () => {
      const { book, operator, borrower } = await networkHelpers.loadFixture(deploy);
      await book.connect(operator).fundLoan(REF, borrower.address, USDC(10), 0n, 0n, 7);
      await expect(book.connect(operator).fundLoan(ethers.id("loan-2"), borrower.address, USDC(10), 0n, 0n, 7))
        .to.emit(book, "LoanFunded")
        .withArgs(2n, ethers.id("loan-2"), borrower.address, borrower.address, USDC(10), USDC(10), 0n, 0n, 7n, (v: bigint) => v > 0n);
      expect(await book.loanCount()).to.equal(2n);
    });

    it("reverts for a caller without OPERATOR_ROLE", async () => {
      const { book, stranger, borrower } = await networkHelpers.loadFixture(deploy);
      await expect(book.connect(stranger).fundLoan(REF, borrower.address, USDC(10), 0n, 0n, 7))
        .to.be.revertedWithCustomError(book, "AccessControlUnauthorizedAccount")
        .withArgs(stranger.address, await book.OPERATOR_ROLE());
    });

    it("reverts on an empty ref, a zero borrower or a reused ref", async () => {
      const { book, operator, borrower } = await networkHelpers.loadFixture(deploy);
      await expect(book.connect(operator).fundLoan(ethers.ZeroHash, borrower.address, USDC(10), 0n, 0n, 7)).to.be.revertedWithCustomError(
        book,
        "LoanBookEmptyRef",
      );
      await expect(book.connect(operator).fundLoan(REF, ethers.ZeroAddress, USDC(10), 0n, 0n, 7)).to.be.revertedWithCustomError(
        book,
        "LoanBookZeroAddress",
      );
      await book.connect(operator).fundLoan(REF, borrower.address, USDC(10), 0n, 0n, 7);
      await expect(book.connect(operator).fundLoan(REF, borrower.address, USDC(10), 0n, 0n, 7))
        .to.be.revertedWithCustomError(book, "LoanBookDuplicateRef")
        .withArgs(REF, 1n);
    });

    it("reverts on terms outside the limits (INVALID_AMOUNT, INVALID_DURATION)", async () => {
      const { book, operator, borrower } = await networkHelpers.loadFixture(deploy);
      const fund = (principal: bigint, interest: bigint, fee: bigint, days: number) =>
        book.connect(operator).fundLoan(REF, borrower.address, principal, interest, fee, days);
      await expect(fund(0n, 0n, 0n, 7))
        .to.be.revertedWithCustomError(book, "LoanBookInvalidPrincipal")
        .withArgs(0n, USDC(500));
      await expect(fund(USDC(500) + 1n, 0n, 0n, 7))
        .to.be.revertedWithCustomError(book, "LoanBookInvalidPrincipal")
        .withArgs(USDC(500) + 1n, USDC(500));
      await expect(fund(USDC(100), 0n, 0n, 6))
        .to.be.revertedWithCustomError(book, "LoanBookInvalidDuration")
        .withArgs(6n, 7n, 90n);
      await expect(fund(USDC(100), 0n, 0n, 91))
        .to.be.revertedWithCustomError(book, "LoanBookInvalidDuration")
        .withArgs(91n, 7n, 90n);
      await expect(fund(USDC(100), USDC(20) + 1n, 0n, 30))
        .to.be.revertedWithCustomError(book, "LoanBookInterestTooHigh")
        .withArgs(USDC(20) + 1n, USDC(20));
      await expect(fund(USDC(100), 0n, USDC(20) + 1n, 30))
        .to.be.revertedWithCustomError(book, "LoanBookInsuranceFeeTooHigh")
        .withArgs(USDC(20) + 1n, USDC(20));
      await expect(fund(USDC(500), USDC(100), USDC(100), 90)).to.emit(book, "LoanFunded");
    });

    it("reverts with the vault's errors when it lacks liquidity or is paused", async () => {
      const { book, vault, operator, pauser, borrower, alice } = await networkHelpers.loadFixture(deploy);
      await vault.connect(alice).redeem((await vault.maxRedeem(alice.address)) - 10n ** 20n, alice.address, alice.address);
      await expect(book.connect(operator).fundLoan(REF, borrower.address, USDC(200), 0n, 0n, 7))
        .to.be.revertedWithCustomError(vault, "StakingVaultInsufficientLiquidity")
        .withArgs(USDC(200), USDC(90)); // 90 % of the 100 left (the utilization cap, D-101)
      await vault.connect(pauser).pause();
      await expect(book.connect(operator).fundLoan(REF, borrower.address, USDC(10), 0n, 0n, 7)).to.be.revertedWithCustomError(
        vault,
        "EnforcedPause",
      );
    });
  });

  describe("fundLoanFor", () => {
    const FOR_REF = ethers.id("purchase-1");

    it("pays the recipient the net amount, records the loan the borrower owes and emits LoanFunded naming both", async () => {
      const { book, vault, usdc, operator, borrower, bob } = await networkHelpers.loadFixture(deploy);
      const holders = [borrower.address, bob.address, await vault.getAddress(), await book.getAddress()];
      const before = await Promise.all(holders.map((h) => usdc.balanceOf(h)));
      const fundedAt = nextHour(await time.latest());
      await time.setNextBlockTimestamp(fundedAt);
      const dueDate = fundedAt + 30 * DAY;
      await expect(book.connect(operator).fundLoanFor(FOR_REF, borrower.address, bob.address, USDC(300), USDC(30), USDC(30), 30))
        .to.emit(book, "LoanFunded")
        .withArgs(1n, FOR_REF, borrower.address, bob.address, USDC(300), USDC(270), USDC(30), USDC(30), 30n, dueDate)
        .and.to.emit(vault, "StakingVaultFundsLent")
        .withArgs(1n, bob.address, USDC(300), USDC(30), USDC(300))
        .and.to.emit(usdc, "Transfer")
        .withArgs(await vault.getAddress(), bob.address, USDC(270));
      const after = await Promise.all(holders.map((h) => usdc.balanceOf(h)));
      // The recipient received the net amount; the borrower received nothing; the fee stays in the vault's reserve.
      expect(after.map((b, i) => b - before[i]!)).to.deep.equal([0n, USDC(270), -USDC(270), 0n]);
      expect(await book.loanIdOf(FOR_REF)).to.equal(1n);
      const loan = await book.getLoan(1n);
      expect([loan.borrower, loan.fundedAt, loan.dueDate, loan.durationDays, loan.status, loan.ref]).to.deep.equal([
        borrower.address,
        BigInt(fundedAt),
        BigInt(dueDate),
        30n,
        BigInt(Status.Active),
        FOR_REF,
      ]);
      expect([loan.principal, loan.interest, loan.principalRepaid, loan.interestRepaid, loan.insuranceFee]).to.deep.equal([
        USDC(300),
        USDC(30),
        0n,
        0n,
        USDC(30),
      ]);
      expect(await vault.totalBorrowed()).to.equal(USDC(300));
      expect(await vault.insuranceReserve()).to.equal(USDC(30));
    });

    it("makes the borrower, not the recipient, owe the loan: repayments, overdue and default name the borrower", async () => {
      const { book, vault, usdc, operator, borrower, bob, stranger } = await networkHelpers.loadFixture(deploy);
      const fundedAt = nextHour(await time.latest());
      await time.setNextBlockTimestamp(fundedAt);
      await book.connect(operator).fundLoanFor(FOR_REF, borrower.address, bob.address, USDC(300), USDC(30), 0n, 30);
      expect(await book.remainingBalance(1n)).to.equal(USDC(330));
      await time.setNextBlockTimestamp(fundedAt + 10 * DAY);
      await expect(book.connect(borrower).repay(1n, USDC(110)))
        .to.emit(book, "LoanRepaymentMade")
        .withArgs(1n, borrower.address, borrower.address, USDC(110), USDC(10), USDC(100), USDC(220), USDC(110), false);
      await time.increaseTo(fundedAt + 30 * DAY + 1);
      await expect(book.connect(stranger).markOverdue(1n))
        .to.emit(book, "LoanMarkedOverdue")
        .withArgs(1n, borrower.address, fundedAt + 30 * DAY);
      await time.increaseTo(fundedAt + 37 * DAY + 1);
      // No reserve (no insurance fee): the depositors bore the 200 USDC of principal outstanding when it was impaired.
      await expect(book.connect(stranger).markDefaulted(1n))
        .to.emit(book, "LoanDefaulted")
        .withArgs(1n, borrower.address, USDC(200), 0n, USDC(200));
      expect(await vault.totalBorrowed()).to.equal(0n);
      expect(await usdc.balanceOf(await book.getAddress())).to.equal(0n);
    });

    it("is fundLoan when the recipient is the borrower: the same record and the same events", async () => {
      const f = await networkHelpers.loadFixture(deploy);
      const watched = [await f.book.getAddress(), await f.vault.getAddress(), await f.usdc.getAddress()];
      const logsOf = async (tx: Promise<ContractTransactionResponse>) => {
        const receipt = await (await tx).wait();
        return receipt!.logs.filter((l) => watched.includes(l.address)).map((l) => [l.address, [...l.topics], l.data]);
      };
      const fundedAt = nextHour(await time.latest());
      await time.setNextBlockTimestamp(fundedAt);
      const viaFor = await logsOf(
        f.book.connect(f.operator).fundLoanFor(FOR_REF, f.borrower.address, f.borrower.address, USDC(50), USDC(2), USDC(5), 14),
      );
      const loanFor = await f.book.getLoan(1n);

      const g = await networkHelpers.loadFixture(deploy); // the same state, before the first loan
      await time.setNextBlockTimestamp(fundedAt);
      const viaFund = await logsOf(g.book.connect(g.operator).fundLoan(FOR_REF, g.borrower.address, USDC(50), USDC(2), USDC(5), 14));
      expect(viaFor).to.have.length(3); // LoanFunded, StakingVaultFundsLent, the Transfer to the borrower
      expect(viaFor).to.deep.equal(viaFund);
      expect(await g.book.getLoan(1n)).to.deep.equal(loanFor);
    });

    it("reverts for a caller without OPERATOR_ROLE", async () => {
      const { book, stranger, borrower } = await networkHelpers.loadFixture(deploy);
      await expect(book.connect(stranger).fundLoanFor(FOR_REF, borrower.address, stranger.address, USDC(10), 0n, 0n, 7))
        .to.be.revertedWithCustomError(book, "AccessControlUnauthorizedAccount")
        .withArgs(stranger.address, await book.OPERATOR_ROLE());
      // The borrower cannot have itself funded to another recipient either.
      await expect(book.connect(borrower).fundLoanFor(FOR_REF, borrower.address, stranger.address, USDC(10), 0n, 0n, 7))
        .to.be.revertedWithCustomError(book, "AccessControlUnauthorizedAccount")
        .withArgs(borrower.address, await book.OPERATOR_ROLE());
    });

    it("reverts on an empty ref, a zero borrower, a zero recipient or a reused ref, and funds nothing", async () => {
      const { book, vault, operator, borrower, bob } = await networkHelpers.loadFixture(deploy);
      const fund = (ref: string, who: string, to: string) => book.connect(operator).fundLoanFor(ref, who, to, USDC(10), 0n, 0n, 7);
      await expect(fund(ethers.ZeroHash, borrower.address, bob.address)).to.be.revertedWithCustomError(book, "LoanBookEmptyRef");
      await expect(fund(FOR_REF, ethers.ZeroAddress, bob.address)).to.be.revertedWithCustomError(book, "LoanBookZeroAddress");
      await expect(fund(FOR_REF, borrower.address, ethers.ZeroAddress)).to.be.revertedWithCustomError(book, "LoanBookZeroAddress");
      expect(await book.loanCount()).to.equal(0n);
      expect(await vault.totalBorrowed()).to.equal(0n);
      // A ref used by fundLoan or by fundLoanFor is used for both.
      await book.connect(operator).fundLoan(REF, borrower.address, USDC(10), 0n, 0n, 7);
      await expect(fund(REF, borrower.address, bob.address))
        .to.be.revertedWithCustomError(book, "LoanBookDuplicateRef")
        .withArgs(REF, 1n);
      await fund(FOR_REF, borrower.address, bob.address);
      await expect(book.connect(operator).fundLoan(FOR_REF, borrower.address, USDC(10), 0n, 0n, 7))
        .to.be.revertedWithCustomError(book, "LoanBookDuplicateRef")
        .withArgs(FOR_REF, 2n);
    });

    it("reverts on terms outside the limits, as fundLoan", async () => {
      const { book, operator, borrower, bob } = await networkHelpers.loadFixture(deploy);
      const fund = (principal: bigint, interest: bigint, fee: bigint, days: number) =>
        book.connect(operator).fundLoanFor(FOR_REF, borrower.address, bob.address, principal, interest, fee, days);
      await expect(fund(0n, 0n, 0n, 7))
        .to.be.revertedWithCustomError(book, "LoanBookInvalidPrincipal")
        .withArgs(0n, USDC(500));
      await expect(fund(USDC(500) + 1n, 0n, 0n, 7))
        .to.be.revertedWithCustomError(book, "LoanBookInvalidPrincipal")
        .withArgs(USDC(500) + 1n, USDC(500));
      await expect(fund(USDC(100), 0n, 0n, 6))
        .to.be.revertedWithCustomError(book, "LoanBookInvalidDuration")
        .withArgs(6n, 7n, 90n);
      await expect(fund(USDC(100), 0n, 0n, 91))
        .to.be.revertedWithCustomError(book, "LoanBookInvalidDuration")
        .withArgs(91n, 7n, 90n);
      await expect(fund(USDC(100), USDC(20) + 1n, 0n, 30))
        .to.be.revertedWithCustomError(book, "LoanBookInterestTooHigh")
        .withArgs(USDC(20) + 1n, USDC(20));
      await expect(fund(USDC(100), 0n, USDC(20) + 1n, 30))
        .to.be.revertedWithCustomError(book, "LoanBookInsuranceFeeTooHigh")
        .withArgs(USDC(20) + 1n, USDC(20));
      await expect(fund(USDC(500), USDC(100), USDC(100), 90)).to.emit(book, "LoanFunded");
    });

    it("reverts with the vault's errors when it lacks liquidity or is paused", async () => {
      const { book, vault, operator, pauser, borrower, bob, alice } = await networkHelpers.loadFixture(deploy);
      await vault.connect(alice).redeem((await vault.maxRedeem(alice.address)) - 10n ** 20n, alice.address, alice.address);
      await expect(book.connect(operator).fundLoanFor(FOR_REF, borrower.address, bob.address, USDC(200), 0n, 0n, 7))
        .to.be.revertedWithCustomError(vault, "StakingVaultInsufficientLiquidity")
        .withArgs(USDC(200), USDC(90));
      await vault.connect(pauser).pause();
      await expect(
        book.connect(operator).fundLoanFor(FOR_REF, borrower.address, bob.address, USDC(10), 0n, 0n, 7),
      ).to.be.revertedWithCustomError(vault, "EnforcedPause");
      expect(await book.loanCount()).to.equal(0n);
    });
  });

  describe("repay", () => {
    it("takes a partial payment for earned interest first and emits LoanRepaymentMade (loan.partial_payment)", async () => {
      const { book, vault, usdc, borrower, fundedAt } = await networkHelpers.loadFixture(withLoan);
      await time.setNextBlockTimestamp(fundedAt + 10 * DAY); // 10 days earned: 10 USDC of interest
      await expect(book.connect(borrower).repay(1n, USDC(5)))
        .to.emit(book, "LoanRepaymentMade")
        .withArgs(1n, borrower.address, borrower.address, USDC(5), USDC(5), 0n, USDC(325), USDC(5), false)
        .and.to.emit(vault, "StakingVaultRepaymentRecorded")
        .withArgs(1n, 0n, USDC(5), 0n, USDC(300))
        .and.to.emit(usdc, "Transfer")
        .withArgs(borrower.address, await vault.getAddress(), USDC(5));

      await time.setNextBlockTimestamp(fundedAt + 10 * DAY + 1); // day 11 started: 11 USDC earned, 6 due
      await expect(book.connect(borrower).repay(1n, USDC(100)))
        .to.emit(book, "LoanRepaymentMade")
        .withArgs(1n, borrower.address, borrower.address, USDC(100), USDC(6), USDC(94), USDC(225), USDC(105), false);
      const loan = await book.getLoan(1n);
      expect(loan.status).to.equal(BigInt(Status.Active));
      expect([loan.principalRepaid, loan.interestRepaid]).to.deep.equal([USDC(94), USDC(11)]);
      expect(await vault.totalBorrowed()).to.equal(USDC(206));
      // The 11 USDC paid settle the 10 accrued, the one paid ahead is locked (D-95, D-96); the rest accrues on. The
      // provision (5 % of the principal out of a borrower that never repaid in full, D-126) follows the principal.
      expect(await vault.provisioned()).to.equal((USDC(206) * 500n) / 10_000n);
      const cash = async () =>
        (await vault.totalAssets()) + (await vault.lockedProfit()) + (await vault.provisioned()) - (await vault.accruedInterest());
      expect(await cash()).to.equal(USDC(10_011));
      await time.increase(7 * DAY);
      expect(await vault.lockedProfit()).to.equal(0n);
      expect(await cash()).to.equal(USDC(10_011));
    });

    it("closes the loan at the due date with the full balance and emits closed = true (loan.repaid)", async () => {
      const { book, vault, usdc, borrower, dueDate } = await networkHelpers.loadFixture(withLoan);
      await time.setNextBlockTimestamp(dueDate);
      const before = await usdc.balanceOf(borrower.address);
      await expect(book.connect(borrower).repay(1n, ethers.MaxUint256))
        .to.emit(book, "LoanRepaymentMade")
        .withArgs(1n, borrower.address, borrower.address, USDC(330), USDC(30), USDC(300), 0n, USDC(330), true);
      expect(before - (await usdc.balanceOf(borrower.address))).to.equal(USDC(330));
      expect((await book.getLoan(1n)).status).to.equal(BigInt(Status.Repaid));
      expect(await vault.totalBorrowed()).to.equal(0n);
      expect((await vault.totalAssets()) + (await vault.lockedProfit())).to.equal(USDC(10_030));
      expect(await vault.totalYield()).to.equal(USDC(30));
      await time.increase(7 * DAY);
      expect(await vault.totalAssets()).to.equal(USDC(10_030));
    });

    it("charges only the pro-rated interest (at least 7 days) on an early payoff", async () => {
      const { book, borrower, fundedAt } = await networkHelpers.loadFixture(withLoan);
      await time.setNextBlockTimestamp(fundedAt + 2 * DAY);
      await expect(book.connect(borrower).repay(1n, USDC(1_000)))
        .to.emit(book, "LoanRepaymentMade")
        .withArgs(1n, borrower.address, borrower.address, USDC(307), USDC(7), USDC(300), 0n, USDC(307), true);
    });

    it("can be paid by anyone", async () => {
      const { book, borrower, stranger, dueDate } = await networkHelpers.loadFixture(withLoan);
      await time.setNextBlockTimestamp(dueDate);
      await expect(book.connect(stranger).repay(1n, USDC(330)))
        .to.emit(book, "LoanRepaymentMade")
        .withArgs(1n, borrower.address, stranger.address, USDC(330), USDC(30), USDC(300), 0n, USDC(330), true);
    });

    it("keeps an overdue loan Overdue on a partial payment and closes it on full payment", async () => {
      const { book, borrower, dueDate } = await networkHelpers.loadFixture(withLoan);
      await time.increaseTo(dueDate + 1);
      await book.markOverdue(1n);
      await book.connect(borrower).repay(1n, USDC(100));
      expect((await book.getLoan(1n)).status).to.equal(BigInt(Status.Overdue));
      await expect(book.connect(borrower).repay(1n, USDC(230)))
        .to.emit(book, "LoanRepaymentMade")
        .withArgs(1n, borrower.address, borrower.address, USDC(230), 0n, USDC(230), 0n, USDC(330), true);
      expect((await book.getLoan(1n)).status).to.equal(BigInt(Status.Repaid));
    });

    it("reverts for an unknown loan, a zero amount, or a closed loan (LOAN_NOT_FOUND, ALREADY_REPAID)", async () => {
      const { book, borrower } = await networkHelpers.loadFixture(withLoan);
      await expect(book.connect(borrower).repay(2n, USDC(1)))
        .to.be.revertedWithCustomError(book, "LoanBookLoanNotFound")
        .withArgs(2n);
      await expect(book.connect(borrower).repay(1n, 0n)).to.be.revertedWithCustomError(book, "LoanBookZeroRepayment").withArgs(1n);
      await book.connect(borrower).repay(1n, ethers.MaxUint256);
      await expect(book.connect(borrower).repay(1n, USDC(1)))
        .to.be.revertedWithCustomError(book, "LoanBookLoanNotOpen")
        .withArgs(1n, Status.Repaid);
    });

    it("reverts with the token's error when the payer has not approved the book", async () => {
      const { book, usdc } = await networkHelpers.loadFixture(withLoan);
      const payer = (await ethers.getSigners())[12];
      await expect(book.connect(payer).repay(1n, USDC(1)))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientAllowance")
        .withArgs(await book.getAddress(), 0n, USDC(1));
    });
  });

  describe("payoffAmount / payoffQuote / remainingBalance", () => {
    it("quote the early payoff over time", async () => {
      const { book, fundedAt, dueDate } = await networkHelpers.loadFixture(withLoan);
      await time.increaseTo(fundedAt + 3 * DAY);
      expect(await book.payoffAmount(1n)).to.equal(USDC(307));
      expect(await book.remainingBalance(1n)).to.equal(USDC(330));
      expect(await book.payoffQuote(1n)).to.deep.equal([USDC(330), USDC(307), USDC(330), USDC(23), 23n]);

      await time.increaseTo(fundedAt + 10 * DAY + 1);
      expect(await book.payoffQuote(1n)).to.deep.equal([USDC(330), USDC(311), USDC(330), USDC(19), 19n]);

      await time.increaseTo(dueDate + 5 * DAY);
      expect(await book.payoffQuote(1n)).to.deep.equal([USDC(330), USDC(330), USDC(330), 0n, 0n]);
    });

    it("round the pro-rated interest up", async () => {
      const { book, operator, borrower } = await networkHelpers.loadFixture(deploy);
      await book.connect(operator).fundLoan(REF, borrower.address, USDC(100), 10n, 0n, 30);
      // 10 micro-USDC * 7 / 30 = 2.33 -> 3
      expect(await book.payoffAmount(1n)).to.equal(USDC(100) + 3n);
    });

    it("are zero for a closed loan and revert for an unknown one", async () => {
      const { book, borrower } = await networkHelpers.loadFixture(withLoan);
      await book.connect(borrower).repay(1n, ethers.MaxUint256);
      expect(await book.payoffAmount(1n)).to.equal(0n);
      expect(await book.remainingBalance(1n)).to.equal(0n);
      expect(await book.payoffQuote(1n)).to.deep.equal([USDC(330), 0n, 0n, 0n, 0n]);
      await expect(book.payoffAmount(9n)).to.be.revertedWithCustomError(book, "LoanBookLoanNotFound").withArgs(9n);
      await expect(book.payoffQuote(9n)).to.be.revertedWithCustomError(book, "LoanBookLoanNotFound").withArgs(9n);
      await expect(book.remainingBalance(9n)).to.be.revertedWithCustomError(book, "LoanBookLoanNotFound").withArgs(9n);
      await expect(book.getLoan(9n)).to.be.revertedWithCustomError(book, "LoanBookLoanNotFound").withArgs(9n);
    });
  });

  describe("extend", () => {
    it("moves the due date, adds the interest and emits LoanExtended", async () => {
      const { book, operator, borrower, fundedAt, dueDate } = await networkHelpers.loadFixture(withLoan);
      await expect(book.connect(operator).extend(1n, 30, USDC(15)))
        .to.emit(book, "LoanExtended")
        .withArgs(1n, borrower.address, 30n, USDC(15), dueDate + 30 * DAY);
      const loan = await book.getLoan(1n);
      expect([loan.durationDays, loan.dueDate, loan.interest]).to.deep.equal([60n, BigInt(dueDate + 30 * DAY), USDC(45)]);
      // Pro-rated over the new term: 20 of 60 days of 45 USDC = 15 USDC.
      await time.increaseTo(fundedAt + 20 * DAY);
      expect(await book.payoffAmount(1n)).to.equal(USDC(315));
      expect(await book.remainingBalance(1n)).to.equal(USDC(345));
    });

    it("reverts for a caller without OPERATOR_ROLE or an unknown loan", async () => {
      const { book, operator, stranger } = await networkHelpers.loadFixture(withLoan);
      await expect(book.connect(stranger).extend(1n, 7, 0n))
        .to.be.revertedWithCustomError(book, "AccessControlUnauthorizedAccount")
        .withArgs(stranger.address, await book.OPERATOR_ROLE());
      await expect(book.connect(operator).extend(5n, 7, 0n))
        .to.be.revertedWithCustomError(book, "LoanBookLoanNotFound")
        .withArgs(5n);
    });

    it("reverts past the due date, and for an Overdue or closed loan", async () => {
      const { book, operator, borrower, dueDate } = await networkHelpers.loadFixture(withLoan);
      await time.increaseTo(dueDate + 1);
      await expect(book.connect(operator).extend(1n, 7, 0n))
        .to.be.revertedWithCustomError(book, "LoanBookPastDue")
        .withArgs(1n, dueDate);
      await book.markOverdue(1n);
      await expect(book.connect(operator).extend(1n, 7, 0n))
        .to.be.revertedWithCustomError(book, "LoanBookLoanNotActive")
        .withArgs(1n, Status.Overdue);
      await book.connect(borrower).repay(1n, ethers.MaxUint256);
      await expect(book.connect(operator).extend(1n, 7, 0n))
        .to.be.revertedWithCustomError(book, "LoanBookLoanNotActive")
        .withArgs(1n, Status.Repaid);
    });

    it("reverts on zero days, a term beyond 90 days or interest beyond the cap", async () => {
      const { book, operator } = await networkHelpers.loadFixture(withLoan);
      await expect(book.connect(operator).extend(1n, 0, 0n))
        .to.be.revertedWithCustomError(book, "LoanBookInvalidExtension")
        .withArgs(1n, 0n, 30n, 90n);
      await expect(book.connect(operator).extend(1n, 61, 0n))
        .to.be.revertedWithCustomError(book, "LoanBookInvalidExtension")
        .withArgs(1n, 61n, 91n, 90n);
      await expect(book.connect(operator).extend(1n, 60, USDC(30) + 1n))
        .to.be.revertedWithCustomError(book, "LoanBookInterestTooHigh")
        .withArgs(USDC(60) + 1n, USDC(60));
      await expect(book.connect(operator).extend(1n, 60, USDC(30))).to.emit(book, "LoanExtended");
    });
  });

  describe("markOverdue", () => {
    it("marks an Active loan past its due date and emits LoanMarkedOverdue (loan.overdue)", async () => {
      const { book, borrower, stranger, dueDate } = await networkHelpers.loadFixture(withLoan);
      await time.setNextBlockTimestamp(dueDate + 1);
      await expect(book.connect(stranger).markOverdue(1n)).to.emit(book, "LoanMarkedOverdue").withArgs(1n, borrower.address, dueDate);
      expect((await book.getLoan(1n)).status).to.equal(BigInt(Status.Overdue));
    });

    it("reverts until the due date has passed, for a loan not Active, or an unknown loan", async () => {
      const { book, dueDate } = await networkHelpers.loadFixture(withLoan);
      await time.setNextBlockTimestamp(dueDate);
      await expect(book.markOverdue(1n)).to.be.revertedWithCustomError(book, "LoanBookNotYetDue").withArgs(1n, dueDate);
      await time.increaseTo(dueDate + 1);
      await book.markOverdue(1n);
      await expect(book.markOverdue(1n)).to.be.revertedWithCustomError(book, "LoanBookLoanNotActive").withArgs(1n, Status.Overdue);
      await expect(book.markOverdue(3n)).to.be.revertedWithCustomError(book, "LoanBookLoanNotFound").withArgs(3n);
    });
  });

  describe("markDefaulted", () => {
    it("writes off the outstanding principal after the grace period and emits LoanDefaulted", async () => {
      const { book, vault, borrower, stranger, dueDate } = await networkHelpers.loadFixture(withLoan);
      await book.connect(borrower).repay(1n, USDC(107)); // 7 interest, 100 principal at the 7-day minimum
      await time.setNextBlockTimestamp(dueDate + 1);
      // Impaired first: 200 out; 80 % = 160, capped by the reserve of 30; expected loss 170, out of the price now.
      await expect(book.connect(stranger).markOverdue(1n))
        .to.emit(vault, "StakingVaultLoanImpaired")
        .withArgs(1n, USDC(200), USDC(170), USDC(30), (v: bigint) => v < WAD);
      const impairedRate = await vault.exchangeRate();
      await time.setNextBlockTimestamp(dueDate + 7 * DAY + 1);
      // Loss 200; the cover fixed at impairment, 30; uncovered 170, which the impairment took already.
      await expect(book.connect(stranger).markDefaulted(1n))
        .to.emit(book, "LoanDefaulted")
        .withArgs(1n, borrower.address, USDC(200), USDC(30), USDC(170))
        .and.to.emit(vault, "StakingVaultLossRecognized")
        .withArgs(1n, USDC(200), USDC(30), USDC(170), (v: bigint) => v < WAD);
      expect((await book.getLoan(1n)).status).to.equal(BigInt(Status.Defaulted));
      expect(await vault.totalBorrowed()).to.equal(0n);
      expect(await vault.totalAssets()).to.equal(USDC(10_007) - USDC(170));
      expect(await vault.exchangeRate()).to.equal(impairedRate);
      expect(await vault.unrealizedLosses()).to.equal(0n);
    });

    it("covers 80 % of the loss when the reserve suffices", async () => {
      const { book, vault, operator, borrower, dueDate } = await networkHelpers.loadFixture(withLoan);
      await book.connect(borrower).repay(1n, ethers.MaxUint256); // the reserve keeps loan 1's 30 USDC fee
      await book.connect(operator).fundLoan(ethers.id("loan-2"), borrower.address, USDC(20), 0n, 0n, 7);
      await time.increaseTo(dueDate + 15 * DAY);
      await book.markOverdue(2n);
      await expect(book.markDefaulted(2n)).to.emit(book, "LoanDefaulted").withArgs(2n, borrower.address, USDC(20), USDC(16), USDC(4));
      expect(await vault.insuranceReserve()).to.equal(USDC(14));
    });

    it("reverts within the grace period, for a closed loan, or an unknown loan", async () => {
      const { book, borrower, dueDate } = await networkHelpers.loadFixture(withLoan);
      const defaultableAfter = dueDate + 7 * DAY;
      await time.increaseTo(dueDate + 1);
      // Only an impaired (overdue) loan can default.
      await expect(book.markDefaulted(1n)).to.be.revertedWithCustomError(book, "LoanBookLoanNotOverdue").withArgs(1n, Status.Active);
      await book.markOverdue(1n);
      await time.setNextBlockTimestamp(defaultableAfter);
      await expect(book.markDefaulted(1n)).to.be.revertedWithCustomError(book, "LoanBookGracePeriodNotOver").withArgs(1n, defaultableAfter);
      await time.increaseTo(defaultableAfter + 1);
      await book.markDefaulted(1n);
      await expect(book.markDefaulted(1n)).to.be.revertedWithCustomError(book, "LoanBookLoanNotOpen").withArgs(1n, Status.Defaulted);
      await expect(book.connect(borrower).repay(1n, USDC(1)))
        .to.be.revertedWithCustomError(book, "LoanBookLoanNotOpen")
        .withArgs(1n, Status.Defaulted);
      await expect(book.markDefaulted(4n)).to.be.revertedWithCustomError(book, "LoanBookLoanNotFound").withArgs(4n);
    });
  });

  describe("setLimits", () => {
    const next = {
      maxPrincipal: USDC(200),
      minDurationDays: 3,
      maxDurationDays: 60,
      gracePeriodDays: 14,
      maxInterestBps: 1_000,
      maxInsuranceFeeBps: 1_500,
    };

    it("sets the limits, emits them and enforces them on new loans", async () => {
      const { book, operator, borrower } = await networkHelpers.loadFixture(deploy);
      await expect(book.setLimits(next)).to.emit(book, "LoanLimitsUpdated").withArgs(limitsTuple(next));
      expect(await book.limits()).to.deep.equal(limitsTuple(next));
      await expect(book.connect(operator).fundLoan(REF, borrower.address, USDC(201), 0n, 0n, 3))
        .to.be.revertedWithCustomError(book, "LoanBookInvalidPrincipal")
        .withArgs(USDC(201), USDC(200));
      await expect(book.connect(operator).fundLoan(REF, borrower.address, USDC(200), 0n, 0n, 3)).to.emit(book, "LoanFunded");
    });

    // Issue #43 item 2 (D-100): a parameter change is never retroactive. Before, the new grace period applied to
    // the loans already out.
    it("keeps the grace period a loan was funded with; a new one applies to the loans funded after it", async () => {
      const { book, operator, borrower, dueDate } = await networkHelpers.loadFixture(withLoan);
      await book.setLimits(next);
      expect((await book.getLoan(1n)).gracePeriodDays).to.equal(7n);
      await book.connect(operator).fundLoan(ethers.id("after"), borrower.address, USDC(100), 0n, 0n, 30);
      expect((await book.getLoan(2n)).gracePeriodDays).to.equal(14n);
      await time.setNextBlockTimestamp(dueDate + 1);
      await book.markOverdue(1n);
      await time.setNextBlockTimestamp(dueDate + 7 * DAY + 1);
      await expect(book.markDefaulted(1n)).to.emit(book, "LoanDefaulted");
    });

    it("reverts on limits outside the hard bounds", async () => {
      const { book } = await networkHelpers.loadFixture(deploy);
      const bad = [
        { ...DEFAULT_LIMITS, maxPrincipal: 0n },
        { ...DEFAULT_LIMITS, minDurationDays: 0 },
        { ...DEFAULT_LIMITS, minDurationDays: 91 },
        { ...DEFAULT_LIMITS, maxDurationDays: 366 },
        { ...DEFAULT_LIMITS, gracePeriodDays: 91 },
        { ...DEFAULT_LIMITS, maxInterestBps: 10_001 },
        { ...DEFAULT_LIMITS, maxInsuranceFeeBps: 5_001 },
      ];
      for (const limits of bad) {
        await expect(book.setLimits(limits)).to.be.revertedWithCustomError(book, "LoanBookInvalidLimits").withArgs(limitsTuple(limits));
      }
    });

    it("reverts for a caller without the admin role", async () => {
      const { book, stranger } = await networkHelpers.loadFixture(deploy);
      await expect(book.connect(stranger).setLimits(DEFAULT_LIMITS))
        .to.be.revertedWithCustomError(book, "AccessControlUnauthorizedAccount")
        .withArgs(stranger.address, await book.DEFAULT_ADMIN_ROLE());
    });
  });
});
