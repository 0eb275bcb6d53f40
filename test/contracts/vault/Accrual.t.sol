// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IInterestRateModel} from "../../../contracts/interfaces/IInterestRateModel.sol";
import {ILoanBook} from "../../../contracts/interfaces/ILoanBook.sol";
import {LendingSetup} from "../lending/LendingSetup.sol";

/// Interest as it accrues (issue "The pool's depositors are safe on chain", item 1; D-96): the depositors' part of a
/// performing loan's interest enters the share price per second from funding to the due date.
contract AccrualTest is LendingSetup {
    address internal constant STAYER = address(0x5747);
    address internal constant ATTACKER = address(0xBAD);
    address internal constant BORROWER = address(0xB0AA0);

    uint256 internal constant BLOCK = 12 seconds;

    function setUp() public {
        _deploy();
        // The accrual alone, to the unit: no provision (D-126; Provisions.t.sol and the invariants have them).
        book.setExpectedLossRates(ILoanBook.ExpectedLossRates(0, 0));
        _depositAs(STAYER, 10_000 * USDC);
    }

    function _accrued() internal view returns (uint256) {
        int256 accrued = vault.accruedInterest();
        return accrued > 0 ? uint256(accrued) : 0;
    }

    function _repay(uint256 loanId, uint256 amount) internal {
        usdc.mint(address(this), amount);
        book.repay(loanId, amount);
    }

    /// 30 USDC over 30 days: a USDC a day, whether or not anything is paid.
    function test_interestAccruesPerSecondUntilTheDueDate() public {
        uint256 loanId = book.fundLoan("accrues", BORROWER, 500 * USDC, 30 * USDC, 0, 30);
        uint256 start = block.timestamp;
        vm.warp(start + 15 days);
        assertApproxEqAbs(_accrued(), 15 * USDC, 1, "half the interest at half the term");
        assertApproxEqAbs(vault.totalAssets(), 10_015 * USDC, 1, "in the depositors' assets");
        vm.warp(start + 30 days);
        assertApproxEqAbs(_accrued(), 30 * USDC, 1, "all of it at the due date");

        // Paid on schedule: the payment settles what was booked, and the price does not move at its instant.
        uint256 assetsBefore = vault.totalAssets();
        _repay(loanId, book.remainingBalance(loanId));
        assertEq(vault.totalAssets(), assetsBefore, "the payment moves nothing");
        assertEq(_accrued(), 0);
        assertLe(vault.lockedProfit(), 1, "nothing paid ahead of the schedule but rounding");
    }

    /// A deposit held for one block while loans are out earns one block of their interest, its share.
    function test_aDepositForOneBlockEarnsOneBlockOfInterest() public {
        book.fundLoan("one", BORROWER, 500 * USDC, 100 * USDC, 0, 30);
        book.fundLoan("two", BORROWER, 500 * USDC, 100 * USDC, 0, 30);
        vm.warp(block.timestamp + 10 days);
        uint256 deposited = 1_000_000 * USDC;
        _depositAs(ATTACKER, deposited);
        vm.warp(block.timestamp + BLOCK);
        uint256 shares = vault.balanceOf(ATTACKER);
        vm.prank(ATTACKER);
        uint256 received = vault.redeem(shares, ATTACKER, ATTACKER);

        uint256 blockOfInterest = 200 * USDC * BLOCK / 30 days; // 925 micro-USDC
        assertLe(received, deposited + blockOfInterest, "one block's worth at most");
        assertGe(received + 2, deposited + blockOfInterest * 1_000_000 / 1_010_000, "its share of the block's worth");
    }

    /// An early payoff pays the loan book's 7-day minimum: what it pays ahead of the schedule is locked.
    function test_interestPaidAheadOfTheScheduleIsLocked() public {
        uint256 loanId = book.fundLoan("early", BORROWER, 500 * USDC, 30 * USDC, 0, 30);
        vm.warp(block.timestamp + 1 days);
        uint256 assetsBefore = vault.totalAssets();
        _repay(loanId, book.payoffAmount(loanId)); // 7 of 30 days charged: 7 USDC, 1 accrued
        assertEq(vault.totalAssets(), assetsBefore, "the price does not jump");
        assertApproxEqAbs(vault.lockedProfit(), 6 * USDC, 1, "six days paid ahead, locked");
        assertEq(_accrued(), 0, "the rest of the term is forgiven, never booked");
    }

    /// A partial payment below what accrued leaves the rest booked; the schedule goes on.
    function test_aPartialPaymentSettlesPartOfTheBookedInterest() public {
        uint256 loanId = book.fundLoan("partial", BORROWER, 500 * USDC, 30 * USDC, 0, 30);
        vm.warp(block.timestamp + 20 days);
        _repay(loanId, 5 * USDC); // 20 earned by the loan book, 5 paid
        assertApproxEqAbs(_accrued(), 15 * USDC, 1, "20 accrued, 5 paid");
        vm.warp(block.timestamp + 10 days);
        assertApproxEqAbs(_accrued(), 25 * USDC, 2, "the other 10 days accrued");
    }

    /// An extension spreads the interest left and the added interest over the new term.
    function test_anExtensionAccruesTheNewInterestToTheNewDueDate() public {
        uint256 loanId = book.fundLoan("extended", BORROWER, 500 * USDC, 30 * USDC, 0, 30);
        vm.warp(block.timestamp + 10 days);
        book.extend(loanId, 10, 10 * USDC); // 40 over 40 days, 10 accrued
        vm.warp(block.timestamp + 30 days);
        assertApproxEqAbs(_accrued(), 40 * USDC, 2, "all of it at the new due date");
    }

    /// Past its due date, by the clock and untouched, the loan's schedule stops and its expected loss (principal and the
    /// interest it counted) leaves the exit price; marking it overdue then moves neither price (D-123).
    function test_pastItsDueDateTheScheduleStopsAndTheLossIsInTheExitPriceByTheClock() public {
        uint256 loanId = book.fundLoan("impaired", BORROWER, 500 * USDC, 30 * USDC, 0, 30);
        uint256 dueDate = book.getLoan(loanId).dueDate;
        vm.warp(dueDate);
        uint256 assetsBefore = vault.totalAssets();
        uint256 entryBefore = vault.entryAssets();
        uint256 accrued = _accrued();
        assertApproxEqAbs(accrued, 30 * USDC, 1, "all of it at the due date");

        vm.warp(dueDate + 1);
        assertEq(_accrued(), accrued, "not a second more");
        assertEq(vault.entryAssets(), entryBefore, "the entry price does not move");
        // No reserve covers it: 500 of principal and 30 of interest.
        assertApproxEqAbs(assetsBefore - vault.totalAssets(), 530 * USDC, 1, "the principal and the interest out, untouched");
        uint256 exitByTheClock = vault.totalAssets();

        book.markOverdue(loanId);
        assertEq(vault.totalAssets(), exitByTheClock, "the mark moves nothing");
        assertEq(vault.entryAssets(), entryBefore);
        vm.warp(block.timestamp + 10 days);
        assertEq(_accrued(), accrued, "and nothing accrues");
    }

    /// A refund that forgives part of the interest forgives what was booked of it.
    function test_aRefundForgivesTheBookedInterestInProportion() public {
        book.grantRole(book.REFUNDER_ROLE(), address(this));
        uint256 loanId = book.fundLoan("refunded", BORROWER, 500 * USDC, 30 * USDC, 0, 30);
        vm.warp(block.timestamp + 10 days);
        usdc.mint(address(this), 250 * USDC);
        book.refundLoan(loanId, 250 * USDC); // half the principal: half the interest, 15 left
        // The loan book now charges 15 over the 30 days: 5 by day 10; the 5 forgiven of what was earned are a loss.
        assertApproxEqAbs(_accrued(), 5 * USDC, 1, "the new line's 5");
        assertApproxEqAbs(vault.totalAssets(), 10_005 * USDC, 1, "the depositors lost the 5 forgiven");
        vm.warp(block.timestamp + 20 days);
        assertApproxEqAbs(_accrued(), 15 * USDC, 2, "15 by the due date");
    }

    /// The reserve factor is the loan's, fixed at funding: a later change does not touch it, and a model that
    /// reverts cannot block a repayment.
    function test_theReserveFactorIsFixedAtFundingAndAFailingModelBlocksNoRepayment() public {
        model.setReserveFactor(0.1e18);
        uint256 loanId = book.fundLoan("factor", BORROWER, 500 * USDC, 30 * USDC, 0, 30);
        model.setReserveFactor(0.5e18);
        vault.setInterestRateModel(IInterestRateModel(address(usdc))); // reverts on every model call
        vm.warp(block.timestamp + 30 days);
        uint256 reserveBefore = vault.insuranceReserve();
        _repay(loanId, book.remainingBalance(loanId));
        assertEq(vault.insuranceReserve() - reserveBefore, 3 * USDC, "10 % of 30, the factor at funding");
        assertApproxEqAbs(vault.totalAssets(), 10_027 * USDC, 1, "the depositors' 27 accrued");
    }

    /// The APY shown is what the depositors earn (#43, item 3): a loan at 0 % raised the model's figure with the
    /// utilization and earned nothing.
    function test_theApyShownIsWhatDepositorsEarn() public {
        book.fundLoan("zero", BORROWER, 500 * USDC, 0, 0, 30);
        assertEq(vault.vaultStatus().supplyRate, 0, "a loan at 0 % earns nothing, whatever the utilization");

        book.fundLoan("paying", BORROWER, 500 * USDC, 30 * USDC, 0, 30);
        // 30 USDC over 30 days on 10,000: 365 USDC a year, 3.65 %.
        assertApproxEqAbs(vault.vaultStatus().supplyRate, 0.0365e18, 1e12, "the interest accruing, a year at this pace");

        usdc.mint(address(this), 70 * USDC);
        vault.distributeYield(70 * USDC);
        // And the profit unlocking: 70 over 7 days on 10,000, 3,650 a year, 36.5 % more while it lasts.
        assertApproxEqAbs(vault.vaultStatus().supplyRate, 0.4015e18, 1e12, "and the profit unlocking");
    }
}
