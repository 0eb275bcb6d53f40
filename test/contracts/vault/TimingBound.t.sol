// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ILoanBook} from "../../../contracts/interfaces/ILoanBook.sol";
import {LendingSetup} from "../lending/LendingSetup.sol";

/// The bound of issue "Depositors bear only the risk they are paid for", item 1: for a loan that is repaid (on time,
/// late and untouched, or after its impairment), no sequence of deposits and withdrawals timed around its funding, its
/// due date, its marking and its repayment ends more than 1 % of its principal better off than holding throughout.
/// The review's capture took 463.85 USDC of a 500 USDC loan's release (D-121, D-123).
contract TimingBoundTest is LendingSetup {
    address internal constant STAYER = address(0x5747);
    address internal constant TIMER = address(0x7133);
    address internal constant BORROWER = address(0xB0AA0);

    uint256 internal constant UNLOCK = 7 days;
    uint256 internal constant CHECKPOINTS = 6;

    function setUp() public {
        _deploy();
    }

    struct Scenario {
        uint256 principal;
        uint256 interest;
        uint256 fee;
        uint32 durationDays;
        /// 0: repaid before its due date; 1: repaid late, untouched; 2: marked overdue, then repaid in its grace.
        uint256 outcome;
        uint256 lateBy;
    }

    function _scenario(uint256 principal, uint256 terms, uint256 outcome) internal pure returns (Scenario memory s) {
        s.principal = bound(principal, 1 * USDC, 500 * USDC);
        s.interest = s.principal * bound(terms, 0, 2_000) / 10_000;
        s.fee = s.principal * bound(terms >> 16, 0, 2_000) / 10_000;
        s.durationDays = uint32(bound(terms >> 32, 7, 90));
        s.outcome = bound(outcome, 0, 2);
        s.lateBy = bound(outcome >> 8, 1 hours, 6 days);
    }

    /// @dev The timer's move at checkpoint `at`: 0 nothing, 1 leaves with everything it may, 2 puts all its USDC in.
    function _move(uint256 moves, uint256 at) internal {
        uint256 move = (moves >> (at * 2)) % 3;
        if (move == 1) {
            uint256 shares = vault.maxRedeem(TIMER);
            if (shares == 0) return;
            vm.prank(TIMER);
            vault.redeem(shares, TIMER, TIMER);
        } else if (move == 2) {
            uint256 cash = usdc.balanceOf(TIMER);
            if (cash < vault.minDeposit()) return;
            vm.startPrank(TIMER);
            usdc.approve(address(vault), cash);
            vault.deposit(cash, TIMER);
            vm.stopPrank();
        }
    }

    /// @dev Funds the loan, lets it run to its outcome, repays it, and waits out the unlock; the timer moves at each of
    /// the checkpoints (none when `timed` is false); returns the timer's USDC and the value of its shares then.
    function _run(Scenario memory s, uint256 moves, bool timed) internal returns (uint256 wealth) {
        if (timed) _move(moves, 0);
        uint256 loanId = book.fundLoan("timed", BORROWER, s.principal, s.interest, s.fee, s.durationDays);
        ILoanBook.Loan memory loan = book.getLoan(loanId);
        if (timed) _move(moves, 1);
        vm.warp(uint256(loan.dueDate) - (s.outcome == 0 ? 1 days : 1));
        if (timed) _move(moves, 2);
        if (s.outcome != 0) {
            vm.warp(uint256(loan.dueDate) + s.lateBy);
            if (timed) _move(moves, 3);
            if (s.outcome == 2) {
                book.markOverdue(loanId);
                if (timed) _move(moves, 4);
            }
        }
        uint256 owed = book.payoffAmount(loanId);
        usdc.mint(BORROWER, owed);
        vm.startPrank(BORROWER);
        usdc.approve(address(book), owed);
        book.repay(loanId, owed);
        vm.stopPrank();
        if (timed) _move(moves, 5);
        vm.warp(block.timestamp + UNLOCK + 1);
        wealth = usdc.balanceOf(TIMER) + vault.previewRedeem(vault.balanceOf(TIMER));
    }

    function testFuzz_noTimingAroundARepaidLoanGainsMoreThanOnePercentOfIt(
        uint256 stayed,
        uint256 held,
        uint256 principal,
        uint256 terms,
        uint256 outcome,
        uint256 moves
    ) public {
        _depositAs(STAYER, bound(stayed, 1_000 * USDC, 1_000_000 * USDC));
        _depositAs(TIMER, bound(held, 1 * USDC, 1_000_000 * USDC));
        Scenario memory s = _scenario(principal, terms, outcome);

        uint256 snapshot = vm.snapshotState();
        uint256 holding = _run(s, moves, false);
        vm.revertToState(snapshot);
        uint256 timing = _run(s, moves, true);

        assertLe(timing, holding + s.principal / 100, "no timing gains more than 1 % of the loan's principal");
    }
}
