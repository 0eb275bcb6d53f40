// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {ILoanBook} from "../../../contracts/interfaces/ILoanBook.sol";
import {LendingSetup} from "./LendingSetup.sol";

/// Fuzz tests of a merchant's refund settling a purchase loan (`refundLoan`, #41): whatever the borrower paid before,
/// and whether the loan defaulted, the refund's USDC splits exactly between the pool and the borrower, the pool never
/// takes back more than it has out (or wrote off), the loan shrinks pro rata, and a full refund leaves the borrower
/// owing nothing and out of pocket by nothing.
contract LoanBookRefundTest is LendingSetup {
    address internal constant SEEDER = address(0x5EED);
    address internal constant BORROWER = address(0xB0AA0);

    struct Case {
        uint256 principal;
        uint256 interest;
        uint256 loanId;
        uint256 paid;
    }

    function setUp() public {
        _deploy();
        book.grantRole(book.REFUNDER_ROLE(), address(this));
        _depositAs(SEEDER, 100_000 * USDC);
    }

    /// @dev A loan funded for BORROWER, of which the borrower paid `paidSeed` (bounded by the payoff) after `elapsed`.
    function _loan(uint256 principal, uint256 interestBps, uint256 durationDays, uint256 elapsed, uint256 paidSeed)
        internal
        returns (Case memory c)
    {
        c.principal = bound(principal, 1, 500 * USDC);
        c.interest = c.principal * bound(interestBps, 0, 2_000) / 10_000;
        c.loanId = book.fundLoan(keccak256(abi.encode(book.loanCount())), BORROWER, c.principal, c.interest, 0, uint32(bound(durationDays, 7, 90)));
        vm.warp(block.timestamp + bound(elapsed, 0, 60 days));
        c.paid = bound(paidSeed, 0, book.payoffAmount(c.loanId));
        if (c.paid > 0) {
            usdc.mint(BORROWER, c.paid);
            vm.startPrank(BORROWER);
            usdc.approve(address(book), c.paid);
            book.repay(c.loanId, c.paid);
            vm.stopPrank();
        }
    }

    function _refund(uint256 loanId, uint256 amount)
        internal
        returns (uint256 toPool, uint256 principalReturned, uint256 interestReturned)
    {
        usdc.mint(address(this), amount);
        return book.refundLoan(loanId, amount);
    }

    function testFuzz_aRefundSplitsExactlyAndNeverOverpaysThePool(
        uint256 principal,
        uint256 interestBps,
        uint256 durationDays,
        uint256 elapsed,
        uint256 paidSeed,
        uint256 refundSeed
    ) public {
        Case memory c = _loan(principal, interestBps, durationDays, elapsed, paidSeed);
        ILoanBook.Loan memory before = book.getLoan(c.loanId);
        uint256 refund = bound(refundSeed, 1, c.principal);
        uint256 borrowed = vault.totalBorrowed();
        uint256 vaultUsdc = usdc.balanceOf(address(vault));
        uint256 borrowerUsdc = usdc.balanceOf(BORROWER);

        (uint256 toPool, uint256 principalReturned, uint256 interestReturned) = _refund(c.loanId, refund);

        ILoanBook.Loan memory loan = book.getLoan(c.loanId);
        assertEq(toPool + principalReturned, refund, "the refund splits between the pool and the borrower");
        assertLe(toPool, before.principal - before.principalRepaid, "the pool takes back at most what it has out");
        assertEq(vault.totalBorrowed(), borrowed - toPool, "the vault's principal out falls by the pool's part");
        assertEq(usdc.balanceOf(address(vault)), vaultUsdc + toPool - interestReturned, "the vault's USDC");
        assertEq(usdc.balanceOf(BORROWER), borrowerUsdc + interestReturned, "the vault paid the borrower's interest back");
        assertEq(loan.principal, c.principal - refund, "the principal falls by the refund");
        assertEq(loan.interest, c.interest - Math.mulDiv(c.interest, refund, c.principal), "the interest falls pro rata");
        assertEq(
            uint256(loan.principalRepaid) + loan.interestRepaid,
            c.paid - principalReturned - interestReturned,
            "what the borrower paid, less what came back, stays paid"
        );
        assertLe(uint256(loan.principalRepaid) + loan.interestRepaid, uint256(loan.principal) + loan.interest, "never paid above the loan");
        assertEq(usdc.balanceOf(address(book)), 0, "the book holds no USDC");
    }

    function testFuzz_aFullRefundLeavesTheBorrowerOwingAndOutOfPocketNothing(
        uint256 principal,
        uint256 interestBps,
        uint256 durationDays,
        uint256 elapsed,
        uint256 paidSeed,
        uint256 firstSeed
    ) public {
        Case memory c = _loan(principal, interestBps, durationDays, elapsed, paidSeed);
        // One refund, or two that add up to the principal.
        uint256 first = bound(firstSeed, 1, c.principal);
        (uint256 pool1, uint256 back1, uint256 interest1) = _refund(c.loanId, first);
        (uint256 pool2, uint256 back2, uint256 interest2) = first < c.principal ? _refund(c.loanId, c.principal - first) : (0, 0, 0);

        ILoanBook.Loan memory loan = book.getLoan(c.loanId);
        assertTrue(loan.status == ILoanBook.LoanStatus.Repaid, "closed");
        assertEq(book.remainingBalance(c.loanId), 0, "nothing owed");
        assertEq(uint256(loan.principal) + loan.interest, 0, "no principal, no interest");
        assertEq(back1 + back2 + interest1 + interest2, c.paid, "everything the borrower paid came back");
        assertEq(pool1 + pool2 + c.paid - interest1 - interest2, c.principal, "the pool has its principal back, no interest kept");
        assertEq(vault.totalBorrowed(), 0, "nothing out");
    }

    function testFuzz_aRefundOfADefaultedLoanGoesToThePoolUpToItsLoss(
        uint256 principal,
        uint256 interestBps,
        uint256 paidSeed,
        uint256 refundSeed
    ) public {
        Case memory c = _loan(principal, interestBps, 7, 0, paidSeed);
        ILoanBook.Loan memory before = book.getLoan(c.loanId);
        if (before.status != ILoanBook.LoanStatus.Active) return; // paid off at once: nothing defaults
        vm.warp(block.timestamp + 15 days);
        book.markOverdue(c.loanId);
        book.markDefaulted(c.loanId);
        uint256 loss = before.principal - before.principalRepaid;
        uint256 held = usdc.balanceOf(address(vault));
        uint256 refund = bound(refundSeed, 1, c.principal);

        (uint256 toPool, uint256 principalReturned, uint256 interestReturned) = _refund(c.loanId, refund);

        assertEq(toPool, Math.min(refund, loss), "the pool first, up to what it wrote off");
        assertEq(principalReturned, refund - toPool, "the rest to the borrower");
        // The review's case: a partial refund paid a defaulter back part of the interest it had paid (10 USDC). Now the
        // pool keeps it, and the interest falls pro rata no lower than what was paid (D-124).
        uint256 interestLeft = c.interest - Math.mulDiv(c.interest, refund, c.principal);
        assertEq(interestReturned, 0, "a defaulter gets no interest back");
        assertEq(book.getLoan(c.loanId).interest, Math.max(interestLeft, before.interestRepaid), "interest pro rata, not below what was paid");
        assertEq(book.getLoan(c.loanId).interestRepaid, before.interestRepaid, "what it paid stays paid");
        assertEq(usdc.balanceOf(address(vault)), held + toPool, "the vault's USDC");
        assertTrue(book.getLoan(c.loanId).status == ILoanBook.LoanStatus.Defaulted, "still defaulted");
    }

    /// The review's case (#41): a purchase loan insured by the reserve defaults; its full refund makes the reserve and
    /// the depositors good each in its share, so both end exactly where they were before the default, neither better.
    function testFuzz_aFullRecoveryRestoresTheReserveAndTheDepositorsExactly(uint256 principal, uint256 feeBps, uint256 reserveSeed)
        public
    {
        // A reserve beside the loan's own fee, from an earlier insured loan that defaulted fully covered or not.
        uint256 p = bound(principal, 1 * USDC, 500 * USDC);
        book.fundLoan(keccak256("earlier"), address(0xE), bound(reserveSeed, 1 * USDC, 500 * USDC), 0, bound(reserveSeed, 1 * USDC, 500 * USDC) / 10, 7);
        uint256 loanId = book.fundLoan(keccak256("insured"), BORROWER, p, p / 20, p * bound(feeBps, 0, 2_000) / 10_000, 7);
        uint256 reserveBefore = vault.insuranceReserve();
        // At the entry price: the earlier loan, past due and never marked, is out of the exit price by the clock.
        uint256 assetsBefore = vault.entryAssets();
        vm.warp(block.timestamp + 15 days);
        book.markOverdue(loanId);
        book.markDefaulted(loanId);
        assertLe(vault.entryAssets(), assetsBefore, "the default lowered the depositors' assets (or the reserve covered it all)");

        _refund(loanId, p);
        // The depositors' recovery unlocks like any gain.
        vm.warp(block.timestamp + vault.profitUnlockPeriod());

        assertEq(vault.insuranceReserve(), reserveBefore, "the reserve got back exactly what it covered");
        assertEq(vault.entryAssets(), assetsBefore, "the depositors got back exactly what they bore");
    }

    function test_onlyTheRefunderSettlesLoansWithRefunds() public {
        uint256 loanId = book.fundLoan(keccak256("only-refunder"), BORROWER, 100 * USDC, 3 * USDC, 0, 30);
        vm.prank(address(0xBAD));
        vm.expectRevert();
        book.refundLoan(loanId, 1);
        vm.expectRevert(abi.encodeWithSelector(ILoanBook.LoanBookInvalidRefund.selector, loanId, 0, 100 * USDC));
        book.refundLoan(loanId, 0);
        vm.expectRevert(abi.encodeWithSelector(ILoanBook.LoanBookInvalidRefund.selector, loanId, 100 * USDC + 1, 100 * USDC));
        book.refundLoan(loanId, 100 * USDC + 1);
    }
}
