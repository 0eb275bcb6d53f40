// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ILoanBook} from "../../../contracts/interfaces/ILoanBook.sol";
import {IStakingVault} from "../../../contracts/interfaces/IStakingVault.sol";
import {LendingSetup} from "../lending/LendingSetup.sol";

/// The review's attacks on the depositors (issue "The pool's depositors are safe on chain", D-95): a deposit timed
/// around a gain, a borrower's deposit timed around its own repayment, and an exit timed before a known default.
/// Each failed on the vault that counted gains when paid and losses when defaulted.
contract FairExitsTest is LendingSetup {
    address internal constant STAYER = address(0x5747);
    address internal constant ATTACKER = address(0xBAD);
    address internal constant BORROWER = address(0xB0AA0);
    address internal constant LEAVER = address(0x1EA7E);

    uint256 internal constant BLOCK = 12 seconds;
    uint256 internal constant UNLOCK = 7 days;

    function setUp() public {
        _deploy();
    }

    /// @dev What `shares` redeem for, as the vault would pay them now.
    function _valueOf(address owner) internal view returns (uint256) {
        return vault.previewRedeem(vault.balanceOf(owner));
    }

    function _redeemAll(address owner) internal returns (uint256) {
        uint256 shares = vault.balanceOf(owner);
        vm.prank(owner);
        return vault.redeem(shares, owner, owner);
    }

    /// @dev What came back above what went in (zero for a loss: rounding is in the vault's favour).
    function _gain(uint256 received, uint256 deposited) internal pure returns (uint256) {
        return received > deposited ? received - deposited : 0;
    }

    function _fund(bytes32 ref, address borrower, uint256 principal, uint256 interest) internal returns (uint256) {
        return book.fundLoan(ref, borrower, principal, interest, principal / 10, 30);
    }

    function _repayAs(address payer, uint256 loanId) internal {
        uint256 amount = book.remainingBalance(loanId);
        usdc.mint(payer, amount);
        vm.startPrank(payer);
        usdc.approve(address(book), amount);
        book.repay(loanId, amount);
        vm.stopPrank();
    }

    /// The review's case: 100,000 USDC deposited, 1,000,000 deposited for one block across a 10,000 USDC
    /// distribution took 9,091 of it. Now it takes one block's unlock of its share.
    function test_aDepositForOneBlockAcrossAYieldDistributionEarnsOneBlock() public {
        _depositAs(STAYER, 100_000 * USDC);
        uint256 deposited = 1_000_000 * USDC;
        _depositAs(ATTACKER, deposited);

        usdc.mint(address(this), 10_000 * USDC);
        vault.distributeYield(10_000 * USDC);
        vm.warp(block.timestamp + BLOCK);
        uint256 gain = _gain(_redeemAll(ATTACKER), deposited);

        // Its share (10/11) of one block of a 7-day unlock: 0.18 USDC.
        assertLe(gain, 10_000 * USDC * BLOCK / UNLOCK, "one block's worth at most");
        assertGt(gain, 0, "but the block's worth");
    }

    /// A batch of repayments is a gain like a distribution: a deposit held across it for one block earns one block.
    function test_aDepositForOneBlockAcrossRepaymentsEarnsOneBlock() public {
        _depositAs(STAYER, 100_000 * USDC);
        uint256[] memory loans = new uint256[](10);
        for (uint256 i; i < loans.length; ++i) {
            loans[i] = _fund(keccak256(abi.encode("loan", i)), BORROWER, 500 * USDC, 100 * USDC);
        }
        vm.warp(block.timestamp + 30 days);

        uint256 deposited = 1_000_000 * USDC;
        _depositAs(ATTACKER, deposited);
        for (uint256 i; i < loans.length; ++i) {
            _repayAs(BORROWER, loans[i]);
        }
        vm.warp(block.timestamp + BLOCK);
        uint256 gain = _gain(_redeemAll(ATTACKER), deposited);

        assertLe(gain, 1_000 * USDC * BLOCK / UNLOCK, "one block's worth of the interest at most");
    }

    /// A borrower who deposits just before repaying took back about 99 % of its own interest; now one block's worth.
    function test_aBorrowerCannotTakeBackItsOwnInterest() public {
        _depositAs(STAYER, 10_000 * USDC);
        uint256 loanId = _fund("own interest", BORROWER, 500 * USDC, 100 * USDC);
        vm.warp(block.timestamp + 30 days);

        uint256 deposited = 1_000_000 * USDC;
        _depositAs(BORROWER, deposited);
        _repayAs(BORROWER, loanId);
        vm.warp(block.timestamp + BLOCK);
        uint256 gain = _gain(_redeemAll(BORROWER), deposited);

        assertLe(gain, 100 * USDC * BLOCK / UNLOCK, "one block of its own interest at most");
        // The stayer receives the interest as it unlocks.
        vm.warp(block.timestamp + UNLOCK);
        assertGt(_valueOf(STAYER), 10_000 * USDC + 90 * USDC, "the depositors who lent receive it");
    }

    /// A depositor who watched the chain left at par before a default anyone could predict, and those who stayed
    /// took the whole loss. The loan is impaired when marked overdue: leaving after that leaves at the impaired price.
    function test_leavingBeforeAPredictableDefaultDoesNotMoveTheLoss() public {
        _depositAs(STAYER, 1_000 * USDC);
        _depositAs(LEAVER, 1_000 * USDC);
        uint256 loanId = _fund("will default", BORROWER, 500 * USDC, 10 * USDC);
        ILoanBook.Loan memory loan = book.getLoan(loanId);

        vm.warp(uint256(loan.dueDate) + 1);
        book.markOverdue(loanId);
        uint256 left = _redeemAll(LEAVER);

        vm.warp(uint256(loan.dueDate) + 7 days + 1);
        book.markDefaulted(loanId);
        uint256 stayed = _valueOf(STAYER);

        assertLt(left, 1_000 * USDC, "the leaver bore its share of the loss");
        assertApproxEqAbs(stayed, left, 1, "the stayer bears no more than the leaver");
    }

    /// The review's timing: the price dropped when someone sent `markOverdue`, not when the due date passed, so a holder
    /// left between the two at the unimpaired price. Now the loss is in the exit price by the clock (D-123): leaving
    /// past the due date, untouched, leaves at the impaired price.
    function test_leavingPastTheDueDateBeforeAnyMarkBearsTheLoss() public {
        _depositAs(STAYER, 1_000 * USDC);
        _depositAs(LEAVER, 1_000 * USDC);
        uint256 loanId = _fund("untouched", BORROWER, 500 * USDC, 10 * USDC);
        ILoanBook.Loan memory loan = book.getLoan(loanId);

        vm.warp(uint256(loan.dueDate) + 1);
        uint256 left = _redeemAll(LEAVER);
        assertLt(left, 800 * USDC, "half of the 450 USDC expected loss and of the 10 USDC of interest left behind");

        vm.warp(uint256(loan.dueDate) + 7 days + 1);
        book.markOverdue(loanId);
        book.markDefaulted(loanId);
        assertApproxEqAbs(_valueOf(STAYER), left, 2, "the stayer bears no more than the leaver");
    }

    /// The review's count: 21 days after a 100 USDC, 7-day loan fell due, the vault still counted interest the loan
    /// book never charges, and `currentAPY` with it. Now its interest stops at the due date, touched or not.
    function test_interestStopsAtTheDueDateUntouched() public {
        _depositAs(STAYER, 1_000 * USDC);
        uint256 loanId = book.fundLoan("stops", BORROWER, 100 * USDC, 5 * USDC, 10 * USDC, 7);
        ILoanBook.Loan memory loan = book.getLoan(loanId);
        vm.warp(uint256(loan.dueDate));
        int256 atDue = vault.accruedInterest();
        assertApproxEqAbs(uint256(atDue), 5 * USDC, 1, "the whole interest by the due date");
        assertGt(vault.vaultStatus().supplyRate, 0, "earning until then");

        vm.warp(uint256(loan.dueDate) + 21 days);
        assertEq(vault.accruedInterest(), atDue, "nothing counted past the due date");
        assertEq(vault.vaultStatus().supplyRate, 0, "and the APY shows it");
    }

    /// Default is the end of an impairment, never a surprise: a loan not marked overdue cannot default.
    function test_aLoanMustBeImpairedBeforeItDefaults() public {
        _depositAs(STAYER, 1_000 * USDC);
        uint256 loanId = _fund("not impaired", BORROWER, 500 * USDC, 10 * USDC);
        vm.warp(uint256(book.getLoan(loanId).dueDate) + 7 days + 1);

        vm.expectRevert(
            abi.encodeWithSelector(ILoanBook.LoanBookLoanNotOverdue.selector, loanId, ILoanBook.LoanStatus.Active)
        );
        book.markDefaulted(loanId);
    }

    /* UNLOCKING */

    function test_aGainUnlocksLinearlyOverThePeriod() public {
        _depositAs(STAYER, 1_000 * USDC);
        usdc.mint(address(this), 70 * USDC);
        vault.distributeYield(70 * USDC);
        assertEq(vault.totalAssets(), 1_000 * USDC, "nothing unlocked at once");
        assertEq(vault.lockedProfit(), 70 * USDC);
        assertEq(vault.fullProfitUnlockDate(), block.timestamp + UNLOCK);

        vm.warp(block.timestamp + 1 days);
        assertEq(vault.totalAssets(), 1_010 * USDC, "a seventh after a day");
        vm.warp(block.timestamp + 6 days);
        assertEq(vault.totalAssets(), 1_070 * USDC, "all of it after the period");
        assertEq(vault.lockedProfit(), 0);
    }

    /// Yearn V3's weighted end: what was locked keeps its pace, the new gain takes the whole period.
    function test_aNewGainExtendsTheUnlockByItsWeight() public {
        _depositAs(STAYER, 1_000 * USDC);
        usdc.mint(address(this), 200 * USDC);
        vault.distributeYield(100 * USDC);
        uint256 start = block.timestamp;
        vm.warp(start + UNLOCK / 2);
        vault.distributeYield(50 * USDC);

        // 50 left over 3.5 days and 50 new over 7 days: 100 over 5.25 days.
        assertEq(vault.lockedProfit(), 100 * USDC);
        assertEq(vault.fullProfitUnlockDate(), start + UNLOCK / 2 + (UNLOCK / 2 * 50 + UNLOCK * 50) / 100);
        vm.warp(vault.fullProfitUnlockDate());
        assertEq(vault.totalAssets(), 1_150 * USDC);
    }

    function test_aZeroPeriodCountsGainsAtOnce() public {
        _depositAs(STAYER, 1_000 * USDC);
        vault.setProfitUnlockPeriod(0);
        usdc.mint(address(this), 10 * USDC);
        vault.distributeYield(10 * USDC);
        assertEq(vault.totalAssets(), 1_010 * USDC);
    }

    function test_thePeriodIsBoundedAndOnlyTheAdminSetsIt() public {
        vm.expectRevert(
            abi.encodeWithSelector(IStakingVault.StakingVaultUnlockPeriodTooLong.selector, 31 days, 30 days)
        );
        vault.setProfitUnlockPeriod(31 days);

        vm.prank(STAYER);
        vm.expectRevert();
        vault.setProfitUnlockPeriod(1 days);

        vm.expectEmit(address(vault));
        emit IStakingVault.StakingVaultProfitUnlockPeriodUpdated(1 days);
        vault.setProfitUnlockPeriod(1 days);
        assertEq(vault.profitUnlockPeriod(), 1 days);
    }

    /// An impairment lowers the exit price alone: the locked profit and the entry price do not move. The default then
    /// realizes the loss, which the profit still locked absorbs first (Yearn V3).
    function test_anImpairmentLowersTheExitPriceAloneAndTheLockAbsorbsTheDefault() public {
        _depositAs(STAYER, 1_000 * USDC);
        uint256 loanId = _fund("absorbed", BORROWER, 100 * USDC, 0);
        ILoanBook.Loan memory loan = book.getLoan(loanId);
        vm.warp(uint256(loan.dueDate));
        usdc.mint(address(this), 500 * USDC);
        vault.distributeYield(500 * USDC);

        vm.warp(uint256(loan.dueDate) + 1);
        uint256 assetsBefore = vault.entryAssets();
        book.markOverdue(loanId);
        (uint256 principal, uint256 expectedLoss,,) = vault.impairmentOf(loanId);
        assertEq(principal, 100 * USDC);
        // The reserve holds the 10 USDC fee: it covers 10 of the 100, the rest is the expected loss.
        assertEq(expectedLoss, 90 * USDC);
        assertEq(vault.totalAssets(), assetsBefore - 90 * USDC, "out of the exit price");
        assertEq(vault.entryAssets(), assetsBefore, "not out of the entry price");
        assertEq(vault.lockedProfit(), 500 * USDC - 500 * USDC / UNLOCK, "the lock keeps unlocking");

        vm.warp(uint256(loan.dueDate) + 7 days + 1);
        usdc.mint(address(this), 500 * USDC);
        vault.distributeYield(500 * USDC);
        uint256 locked = vault.lockedProfit();
        uint256 entry = vault.entryAssets();
        book.markDefaulted(loanId);
        assertEq(vault.lockedProfit(), locked - 90 * USDC, "the realized loss came out of the lock");
        assertEq(vault.entryAssets(), entry, "so the entry price did not fall");
        assertEq(vault.totalAssets(), entry, "and nothing is unrealized any more");
    }

    /* IMPAIRMENT */

    /// The review's capture: a borrower's second account deposited 1,000,000 USDC at the impaired price beside
    /// 100,000, the borrower repaid in its grace period, and the account held through the unlock: it took 463.85 USDC
    /// of the 500 USDC loan's release, and those who bore the impairment ended 454 USDC below their principal. Now
    /// it enters at the entry price, which never counted the impairment, and the release restores the exit price to
    /// the depositors who bore it.
    function test_aBorrowerCannotCaptureItsOwnImpairmentRelease() public {
        uint256 stayed = 100_000 * USDC;
        _depositAs(STAYER, stayed);
        uint256 loanId = book.fundLoan("captured", BORROWER, 500 * USDC, 25 * USDC, 50 * USDC, 30);
        vm.warp(uint256(book.getLoan(loanId).dueDate) + 1);
        book.markOverdue(loanId);
        assertLt(_valueOf(STAYER), stayed, "the stayer bears the impairment");

        uint256 deposited = 1_000_000 * USDC;
        _depositAs(ATTACKER, deposited);
        vm.warp(block.timestamp + 3 days);
        _repayAs(BORROWER, loanId);
        vm.warp(block.timestamp + UNLOCK + 1);

        uint256 gain = _gain(_redeemAll(ATTACKER), deposited);
        assertLe(gain, 500 * USDC / 100, "at most 1 % of the principal (463.85 USDC before)");
        assertGe(_valueOf(STAYER), stayed + 24 * USDC, "the stayer has its principal and the loan's interest");
    }

    /// The review's sandwich: a holder redeems, marks the loan overdue and deposits again, all in one transaction, so
    /// the others bore the whole loss (50,012.5 against 49,487.5 USDC). Now the entry price does not move at the mark:
    /// the round trip ends where holding would.
    function test_redeemMarkDepositGainsNothing() public {
        _depositAs(STAYER, 50_000 * USDC);
        _depositAs(ATTACKER, 50_000 * USDC);
        uint256 loanId = book.fundLoan("sandwiched", BORROWER, 500 * USDC, 25 * USDC, 0, 30);
        vm.warp(uint256(book.getLoan(loanId).dueDate) + 1);

        uint256 held = vault.balanceOf(ATTACKER);
        uint256 out = _redeemAll(ATTACKER);
        book.markOverdue(loanId);
        vm.startPrank(ATTACKER);
        usdc.approve(address(vault), out);
        vault.deposit(out, ATTACKER);
        vm.stopPrank();
        assertLe(vault.balanceOf(ATTACKER), held, "no more shares than it held");

        vm.warp(block.timestamp + 7 days);
        book.markDefaulted(loanId);
        assertLe(_valueOf(ATTACKER), _valueOf(STAYER) + 1, "it bears the default as the stayer does");
    }

    /// An overdue loan repaid late releases its impairment into the exit price at once: a deposit made while the loan
    /// was impaired entered at the entry price, which never counted it, and earns nothing from the release.
    function test_aLateRepaymentReleasesTheImpairmentToThoseWhoBoreIt() public {
        _depositAs(STAYER, 1_000 * USDC);
        uint256 loanId = _fund("late", BORROWER, 500 * USDC, 50 * USDC);
        vm.warp(uint256(book.getLoan(loanId).dueDate) + 1);
        uint256 entry = vault.entryAssets();
        book.markOverdue(loanId);
        (,,, uint256 interest) = vault.impairmentOf(loanId);
        // 50 and the second past the due date (19 micro-USDC).
        assertApproxEqAbs(interest, 50 * USDC, 20, "the interest its schedule counted, unpaid");
        assertEq(vault.unrealizedLosses(), 450 * USDC + interest, "500 out, the 50 fee in the reserve covers 50");
        assertEq(vault.totalAssets(), entry - 450 * USDC - interest);

        uint256 deposited = 100_000 * USDC;
        _depositAs(ATTACKER, deposited);
        _repayAs(BORROWER, loanId);
        assertEq(vault.unrealizedLosses(), 0, "released");
        (uint256 principal,,,) = vault.impairmentOf(loanId);
        assertEq(principal, 0);
        assertApproxEqAbs(vault.totalAssets(), vault.entryAssets(), 0, "the exit price is back at the entry price");
        vm.warp(block.timestamp + UNLOCK + 1);
        uint256 gain = _gain(_redeemAll(ATTACKER), deposited);
        assertLe(gain, 1, "nothing of the release");
        assertGe(_valueOf(STAYER), 1_000 * USDC + 49 * USDC, "the stayer has its principal and the interest");
    }

    /// A partial repayment releases the impairment in proportion to the principal it repays.
    function test_aPartialRepaymentReleasesItsShare() public {
        _depositAs(STAYER, 1_000 * USDC);
        uint256 loanId = _fund("partial", BORROWER, 500 * USDC, 0);
        vm.warp(uint256(book.getLoan(loanId).dueDate) + 1);
        book.markOverdue(loanId);
        usdc.mint(BORROWER, 100 * USDC);
        vm.startPrank(BORROWER);
        usdc.approve(address(book), 100 * USDC);
        book.repay(loanId, 100 * USDC);
        vm.stopPrank();

        (uint256 principal, uint256 expectedLoss, uint256 cover,) = vault.impairmentOf(loanId);
        assertEq(principal, 400 * USDC);
        assertEq(expectedLoss, 360 * USDC, "four fifths of 450");
        assertEq(cover, 40 * USDC, "four fifths of 50");
        assertEq(vault.unrealizedLosses(), 360 * USDC);
    }

    /// The cover is fixed when the loan is impaired: a later change of the coverage moves nothing at default.
    function test_theCoverIsFixedWhenTheLoanIsImpaired() public {
        _depositAs(STAYER, 1_000 * USDC);
        uint256 loanId = _fund("cover", BORROWER, 100 * USDC, 0);
        vm.warp(uint256(book.getLoan(loanId).dueDate) + 1);
        book.markOverdue(loanId);
        uint256 rate = vault.exchangeRate();

        vault.setInsuranceCoverage(0);
        vm.warp(block.timestamp + 7 days);
        book.markDefaulted(loanId);
        assertEq(vault.exchangeRate(), rate, "the default moved nothing");
        assertEq(vault.insuranceReserve(), 0, "the 10 USDC cover fixed at impairment was paid");
        assertEq(vault.unrealizedLosses(), 0);
    }

    /// Two impaired loans never count on the same reserve.
    function test_impairedLoansDoNotShareACover() public {
        _depositAs(STAYER, 2_000 * USDC);
        uint256 first = book.fundLoan("first", BORROWER, 100 * USDC, 0, 20 * USDC, 30);
        uint256 second = book.fundLoan("second", BORROWER, 100 * USDC, 0, 0, 30);
        vm.warp(uint256(book.getLoan(second).dueDate) + 1);
        book.markOverdue(first);
        book.markOverdue(second);
        (,, uint256 firstCover,) = vault.impairmentOf(first);
        (,, uint256 secondCover,) = vault.impairmentOf(second);
        assertEq(firstCover + secondCover, 20 * USDC, "the 20 USDC reserve, once");
        assertEq(vault.unrealizedLosses(), 180 * USDC);
    }

    function test_onlyTheLenderImpairsAndOnlyOnce() public {
        vm.prank(STAYER);
        vm.expectRevert();
        vault.impairLoan(1, 0);

        _depositAs(STAYER, 1_000 * USDC);
        uint256 loanId = _fund("once", BORROWER, 100 * USDC, 0);
        vm.warp(uint256(book.getLoan(loanId).dueDate) + 1);
        book.markOverdue(loanId);
        vm.prank(address(book));
        vm.expectRevert(abi.encodeWithSelector(IStakingVault.StakingVaultAlreadyImpaired.selector, loanId));
        vault.impairLoan(loanId, 100 * USDC);
    }
}
