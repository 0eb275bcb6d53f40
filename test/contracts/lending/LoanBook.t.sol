// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {ILoanBook} from "../../../contracts/interfaces/ILoanBook.sol";
import {LendingSetup} from "./LendingSetup.sol";

/// Fuzz tests of the loan math: payoff versus full repayment, payment allocation, and the default's loss split.
contract LoanBookTest is LendingSetup {
    address internal constant SEEDER = address(0x5EED);
    address internal constant BORROWER = address(0xB0AA0);

    struct Terms {
        uint256 principal;
        uint256 interest;
        uint256 fee;
        uint32 durationDays;
    }

    function setUp() public {
        _deploy();
        _depositAs(SEEDER, 100_000 * USDC);
    }

    function _terms(uint256 principal, uint256 interestBps, uint256 feeBps, uint256 durationDays)
        internal
        pure
        returns (Terms memory t)
    {
        t.principal = bound(principal, 1, 500 * USDC);
        t.interest = t.principal * bound(interestBps, 0, 2_000) / 10_000;
        t.fee = t.principal * bound(feeBps, 0, 2_000) / 10_000;
        t.durationDays = uint32(bound(durationDays, 7, 90));
    }

    function _fund(Terms memory t) internal returns (uint256 loanId) {
        loanId = book.fundLoan(keccak256(abi.encode(book.loanCount())), BORROWER, t.principal, t.interest, t.fee, t.durationDays);
    }

    function testFuzz_payoffNeverExceedsTheFullRepayment(
        uint256 principal,
        uint256 interestBps,
        uint256 durationDays,
        uint256 firstPaymentAt,
        uint256 firstPayment,
        uint256 quoteAt
    ) public {
        Terms memory t = _terms(principal, interestBps, 0, durationDays);
        uint256 loanId = _fund(t);
        uint256 start = block.timestamp;

        vm.warp(start + bound(firstPaymentAt, 0, 120 days));
        firstPayment = bound(firstPayment, 0, book.payoffAmount(loanId));
        if (firstPayment > 0 && firstPayment < book.payoffAmount(loanId)) {
            usdc.mint(address(this), firstPayment);
            book.repay(loanId, firstPayment);
        }

        vm.warp(block.timestamp + bound(quoteAt, 0, 120 days));
        ILoanBook.PayoffQuote memory q = book.payoffQuote(loanId);
        assertLe(q.payoffAmount, q.remainingBalance, "payoff <= full repayment");
        assertEq(q.payoffAmount, book.payoffAmount(loanId), "quote = payoffAmount");
        assertEq(q.remainingBalance, book.remainingBalance(loanId), "quote = remainingBalance");
        assertEq(q.interestSaved, q.remainingBalance - q.payoffAmount, "interest saved");
        assertEq(q.originalTotal, t.principal + t.interest, "original total");
        assertLe(q.daysEarly, t.durationDays, "days early within the term");
        if (block.timestamp >= start + uint256(t.durationDays) * 1 days) {
            assertEq(q.payoffAmount, q.remainingBalance, "from the due date on, payoff = full repayment");
            assertEq(q.daysEarly, 0, "nothing early after the due date");
        }
    }

    function testFuzz_payoffGrowsWithTime(uint256 principal, uint256 interestBps, uint256 durationDays, uint256 t1, uint256 t2)
        public
    {
        uint256 loanId = _fund(_terms(principal, interestBps, 0, durationDays));
        t1 = bound(t1, 0, 120 days);
        t2 = bound(t2, t1, 120 days);
        uint256 start = block.timestamp;
        vm.warp(start + t1);
        uint256 early = book.payoffAmount(loanId);
        vm.warp(start + t2);
        assertLe(early, book.payoffAmount(loanId), "payoff non-decreasing in time");
    }

    function testFuzz_payingThePayoffClosesTheLoan(
        uint256 principal,
        uint256 interestBps,
        uint256 feeBps,
        uint256 durationDays,
        uint256 elapsed,
        uint256 extra
    ) public {
        Terms memory t = _terms(principal, interestBps, feeBps, durationDays);
        uint256 loanId = _fund(t);
        vm.warp(block.timestamp + bound(elapsed, 0, 120 days));
        uint256 payoff = book.payoffAmount(loanId);
        uint256 assetsBefore = vault.totalAssets();
        uint256 entryBefore = vault.entryAssets();
        uint256 provision = vault.provisioned();
        uint256 accrued = uint256(vault.accruedInterest()); // no payment yet: not ahead of its schedule
        uint256 interestDue = payoff - t.principal;

        usdc.mint(address(this), payoff);
        uint256 paid = book.repay(loanId, payoff + bound(extra, 0, 1_000 * USDC));

        assertEq(paid, payoff, "only the payoff is pulled");
        ILoanBook.Loan memory loan = book.getLoan(loanId);
        assertTrue(loan.status == ILoanBook.LoanStatus.Repaid, "closed");
        assertEq(loan.principalRepaid, t.principal, "principal repaid");
        assertEq(book.remainingBalance(loanId), 0, "nothing remains");
        assertEq(book.payoffAmount(loanId), 0, "no payoff for a closed loan");
        assertEq(vault.totalBorrowed(), 0, "vault principal back");
        assertEq(vault.accruedInterest(), int256(0), "nothing booked on a closed loan");
        uint256 assetsAfter = vault.totalAssets();
        uint256 locked = vault.lockedProfit();
        if (block.timestamp <= loan.dueDate) {
            // Within the term: the interest had accrued (D-96), what was charged above it is locked (D-95); the
            // provision comes back to the exit price (D-126), which the entry price never left.
            assertEq(assetsAfter, assetsBefore + provision, "the price does not jump but by the provision released");
            assertEq(vault.entryAssets(), entryBefore, "the entry price does not jump");
            assertEq(vault.provisioned(), 0, "no provision left");
            assertEq(locked, interestDue - Math.min(interestDue, accrued), "what was paid ahead of the schedule is locked");
        } else {
            // Past its due date, not marked overdue: by the clock its expected loss was out of the exit price and its
            // interest stopped at the due date (D-123); the repayment gives the loss back, what it paid above is locked.
            assertEq(vault.entryAssets(), entryBefore, "the entry price does not jump");
            assertEq(assetsAfter, vault.entryAssets(), "the exit price is back at the entry price");
            assertLe(assetsBefore, assetsAfter, "the exit price had the loss");
        }
        vm.warp(block.timestamp + vault.profitUnlockPeriod());
        assertEq(vault.totalAssets(), assetsAfter + locked, "the locked interest unlocked");
        assertEq(usdc.balanceOf(address(book)), 0, "the book holds no USDC");
    }

    function testFuzz_paymentsNeverOvercharge(
        uint256 principal,
        uint256 interestBps,
        uint256 durationDays,
        uint256[3] memory payments,
        uint256[3] memory gaps
    ) public {
        Terms memory t = _terms(principal, interestBps, 0, durationDays);
        uint256 loanId = _fund(t);
        uint256 totalPaid;
        for (uint256 i; i < 3; ++i) {
            vm.warp(block.timestamp + bound(gaps[i], 0, 40 days));
            uint256 remainingBefore = book.remainingBalance(loanId);
            if (remainingBefore == 0) break;
            uint256 amount = bound(payments[i], 1, remainingBefore);
            usdc.mint(address(this), amount);
            uint256 paid = book.repay(loanId, amount);
            totalPaid += paid;
            assertLe(paid, amount, "never pulls more than offered");
            uint256 remainingAfter = book.remainingBalance(loanId);
            if (remainingAfter > 0) {
                assertEq(remainingAfter, remainingBefore - paid, "a partial payment lowers the balance by itself");
            }
        }
        assertLe(totalPaid, t.principal + t.interest, "total paid <= principal + interest");
        ILoanBook.Loan memory loan = book.getLoan(loanId);
        assertEq(totalPaid, uint256(loan.principalRepaid) + loan.interestRepaid, "payments all accounted");
        assertEq(vault.totalBorrowed(), t.principal - loan.principalRepaid, "vault tracks the outstanding principal");
    }

    function testFuzz_defaultSplitsTheLoss(
        uint256 principal,
        uint256 feeBps,
        uint256 coverageBps,
        uint256 repaid,
        uint256 reserveTopUp
    ) public {
        Terms memory t = _terms(principal, 500, feeBps, 30);
        vault.setInsuranceCoverage(bound(coverageBps, 0, 10_000));
        // Another loan repaid in full with a reserve factor adds interest to the reserve, varying its size.
        if (bound(reserveTopUp, 0, 1) == 1) {
            model.setReserveFactor(0.5e18);
            uint256 other = _fund(Terms(500 * USDC, 100 * USDC, 0, 30));
            usdc.mint(address(this), 600 * USDC);
            vm.warp(block.timestamp + 30 days);
            book.repay(other, type(uint256).max);
        }
        uint256 loanId = _fund(t);
        repaid = bound(repaid, 0, t.principal - 1);
        if (repaid > 0) {
            usdc.mint(address(this), repaid);
            book.repay(loanId, repaid);
        }
        ILoanBook.Loan memory loan = book.getLoan(loanId);
        uint256 loss = t.principal - loan.principalRepaid;
        uint256 reserve = vault.insuranceReserve();
        uint256 expectedCovered = Math.min(loss * vault.insuranceCoverageBps() / 10_000, reserve);

        // Impaired when past due: the expected loss (the uncovered principal, and the interest its schedule counted and
        // it did not pay) leaves the exit price; the entry price and the booked interest do not move.
        vm.warp(uint256(loan.dueDate));
        uint256 assetsBefore = vault.totalAssets();
        uint256 entryBefore = vault.entryAssets();
        int256 accrued = vault.accruedInterest();
        // Out of the exit price since its funding (D-126); its expected loss takes its place from the due date.
        uint256 provision = vault.provisioned();
        vm.warp(uint256(loan.dueDate) + 1);
        // By the clock, untouched: at least the expected loss is out of the exit price already (its interest counted
        // in full, what it paid included, until the mark nets it).
        assertLe(
            vault.totalAssets() + Math.max(loss - expectedCovered, provision),
            assetsBefore + provision - (accrued > 0 ? uint256(accrued) : 0),
            "by the clock the exit price has the loss before the mark"
        );
        book.markOverdue(loanId);
        uint256 uncovered = loss - expectedCovered;
        (,,, uint256 interest) = vault.impairmentOf(loanId);
        assertEq(vault.unrealizedLosses(), uncovered + interest, "the expected loss is the uncovered part and the interest");
        assertApproxEqAbs(interest, accrued > 0 ? uint256(accrued) : 0, 1, "the interest counted and not paid");
        assertEq(vault.accruedInterest(), accrued, "still booked");
        assertEq(vault.entryAssets(), entryBefore, "the entry price does not move");
        assertEq(vault.totalAssets(), assetsBefore + provision - uncovered - interest, "exits bear it now");
        assertEq(vault.provisioned(), 0, "the impairment took the provision's place");

        vm.warp(uint256(loan.dueDate) + 7 days + 1);
        (uint256 num0, uint256 den0) = _price();
        uint256 locked = vault.lockedProfit();
        book.markDefaulted(loanId);

        assertEq(vault.insuranceReserve(), reserve - expectedCovered, "reserve pays the covered part");
        assertEq(vault.totalBorrowed(), 0, "principal written off");
        assertEq(vault.unrealizedLosses(), 0, "the impairment became the loss");
        // The exit price had the loss: the default raises it only by the locked profit that absorbs the realized loss.
        (uint256 num1, uint256 den1) = _price();
        assertGe(num1 * den0, num0 * den1, "the default does not lower the exit price");
        assertApproxEqAbs(num1 - num0, Math.min(locked, uncovered + interest), 1, "by the locked profit it absorbed");
    }
}
