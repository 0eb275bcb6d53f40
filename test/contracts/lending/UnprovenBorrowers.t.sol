// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IAccessControl} from "@openzeppelin/contracts/access/IAccessControl.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {ILoanBook} from "../../../contracts/interfaces/ILoanBook.sol";
import {IPaymentRouter} from "../../../contracts/interfaces/IPaymentRouter.sol";
import {PlatformSetup} from "../governance/PlatformSetup.sol";

/// Issue #56 item 2 (D-125): throw-away accounts, brand new and with no money of their own, borrowed and defaulted at
/// about 60 USDC each, and nothing bounded how much of the pool went to accounts that had never repaid anything. Now
/// the loan book bounds the principal out to unproven borrowers (never repaid a loan in full with their own money) to
/// the larger of a floor and a share of the pool, and what it funds them a day to a budget, whoever holds the key.
contract UnprovenBorrowersTest is PlatformSetup {
    address internal constant DEPOSITOR = address(0xD0);
    address internal constant MERCHANT = address(0x3E5C4A);
    address internal constant FRIEND = address(0xF12E);

    uint256 internal _refs;

    function setUp() public {
        _deployPlatform();
    }

    /// @dev The online key funds `principal` to `borrower` (10 % fee, 3 % interest, 30 days); returns the loan id.
    function _fund(address borrower, uint256 principal) internal returns (uint256) {
        vm.prank(ONLINE_KEY);
        return book.fundLoan(bytes32(++_refs), borrower, principal, principal * 3 / 100, principal / 10, 30);
    }

    /// @dev Funds `principal` to fresh accounts until the loan book refuses; returns what it lent.
    function _fundThrowAways(uint256 principal, uint256 salt) internal returns (uint256 lent) {
        for (uint256 i; i < 2_000; ++i) {
            address account = address(uint160(0xA00000 + salt * 100_000 + i));
            vm.prank(ONLINE_KEY);
            try book.fundLoan(bytes32(++_refs), account, principal, 0, principal / 10, 30) {
                lent += principal;
            } catch (bytes memory reason) {
                assertTrue(bytes4(reason) == ILoanBook.LoanBookUnprovenLimitReached.selector, "refused by the limit");
                break;
            }
        }
    }

    function _repayAs(address payer, uint256 loanId, uint256 amount) internal {
        usdc.mint(payer, amount);
        vm.startPrank(payer);
        usdc.approve(address(book), amount);
        book.repay(loanId, amount);
        vm.stopPrank();
    }

    function test_throwAwayAccountsTakeAtMostTheDailyBudget() public {
        _depositAs(DEPOSITOR, 1_000_000 * USDC);
        ILoanBook.UnprovenLimits memory limits = book.unprovenLimits();
        assertEq(limits.dailyBudget, 10_000 * USDC);
        (uint256 outstanding, uint256 available) = book.unprovenExposure();
        assertEq(outstanding, 0);
        assertEq(available, 10_000 * USDC, "a new book funds its first borrowers at once");

        // New-tier loans of 20 USDC to accounts that never repaid anything: the review took 60 USDC a throw-away.
        uint256 lent = _fundThrowAways(20 * USDC, 1);
        assertEq(lent, 10_000 * USDC, "one day's budget, not the pool down to its funding cap (100,000)");
        vm.prank(ONLINE_KEY);
        vm.expectRevert(abi.encodeWithSelector(ILoanBook.LoanBookUnprovenLimitReached.selector, address(0xB1), 20 * USDC, 0));
        book.fundLoan("one more", address(0xB1), 20 * USDC, 0, 0, 30);

        // The budget refills over the day; the funding bucket still had room for proven borrowers all along.
        vm.warp(block.timestamp + 6 hours);
        (outstanding, available) = book.unprovenExposure();
        assertEq(outstanding, 10_000 * USDC);
        assertEq(available, 2_500 * USDC);
        (, uint256 fundable) = book.fundingCapacity();
        assertGt(fundable, 90_000 * USDC, "the funding bucket");
    }

    function test_theOutstandingIsCappedAtAShareOfThePool() public {
        _depositAs(DEPOSITOR, 500_000 * USDC);
        _throughTimelock(
            address(book), abi.encodeCall(ILoanBook.setUnprovenLimits, (ILoanBook.UnprovenLimits(1_000, 2_000e6, 1e12)))
        );
        vm.warp(block.timestamp + 1 days);

        uint256 lent = _fundThrowAways(500 * USDC, 2);
        // A tenth of the pool at its exit price, which each loan's provision (5 %, D-126) lowers: 99 loans, 49,500 of
        // the 50,000 a tenth of the deposits would be, whatever the daily budget.
        assertEq(lent, 49_500 * USDC, "a tenth of the pool, whatever the daily budget");
        // Days later the budget is full again, but the share is not: what is out counts until it comes back.
        vm.warp(block.timestamp + 3 days);
        assertEq(_fundThrowAways(500 * USDC, 3), 0);
    }

    function test_aSmallPoolStillLendsItsFirstBorrowers() public {
        // The README's tour: 50 USDC in the pool, a 20 USDC loan to a new account (40 % of the pool).
        _depositAs(DEPOSITOR, 50 * USDC);
        _fund(address(0xB0), 20 * USDC);
        (uint256 outstanding,) = book.unprovenExposure();
        assertEq(outstanding, 20 * USDC);
        assertTrue(book.getLoan(1).unproven, "its first loan");
    }

    function test_aBorrowerProvenByRepayingInFullIsNotHeldBack() public {
        _depositAs(DEPOSITOR, 1_000_000 * USDC);
        address borrower = address(0xB0);
        uint256 first = _fund(borrower, 100 * USDC);
        uint256 second = _fund(borrower, 100 * USDC);
        _fundThrowAways(20 * USDC, 4);
        (uint256 outstanding, uint256 available) = book.unprovenExposure();
        assertEq(outstanding, 10_000 * USDC);
        assertEq(available, 0);

        // A partial repayment gives back its principal, but proves nothing.
        vm.warp(block.timestamp + 10 days);
        _repayAs(borrower, first, 50 * USDC);
        assertEq(book.provenUpTo(borrower), 0, "a partial repayment proves nothing");
        (outstanding,) = book.unprovenExposure();
        assertEq(outstanding, 10_000 * USDC - book.getLoan(first).principalRepaid, "its principal part came back");
        assertGt(book.getLoan(first).principalRepaid, 0, "some principal");

        // The rest, in full, from its own money: proven, and its next loans are no longer limited.
        uint256 payoff = book.payoffAmount(first);
        usdc.mint(borrower, payoff);
        vm.startPrank(borrower);
        usdc.approve(address(book), payoff);
        vm.expectEmit(address(book));
        emit ILoanBook.BorrowerProven(borrower, first, 100 * USDC);
        book.repay(first, payoff);
        vm.stopPrank();
        assertEq(book.provenUpTo(borrower), 100 * USDC, "repaid in full with its own money, held 10 days");
        uint256 third = _fund(borrower, 100 * USDC);
        assertTrue(!book.getLoan(third).unproven, "funded once proven, within what it proved");
        // Its loan funded before it proved itself still counts until it comes back.
        assertTrue(book.getLoan(second).unproven, "funded before");
        (outstanding,) = book.unprovenExposure();
        assertEq(outstanding, 10_000 * USDC - 100 * USDC);
        _repayAs(borrower, second, book.payoffAmount(second));
        (outstanding,) = book.unprovenExposure();
        assertEq(outstanding, 10_000 * USDC - 200 * USDC);
        // Above what it proved, a loan is unproven still.
        assertTrue(book.getLoan(_fund(borrower, 101 * USDC)).unproven, "above its 100 USDC");
    }

    function test_onlyTheBorrowersOwnFullRepaymentProvesIt() public {
        _depositAs(DEPOSITOR, 1_000_000 * USDC);
        // A friend pays the loan off: the pool is whole, but the borrower proved nothing (D-88).
        uint256 loanId = _fund(address(0xB0), 100 * USDC);
        _repayAs(FRIEND, loanId, book.payoffAmount(loanId));
        assertEq(uint8(book.getLoan(loanId).status), uint8(ILoanBook.LoanStatus.Repaid));
        assertEq(book.provenUpTo(address(0xB0)), 0, "another payer's money");
        assertEq(book.provenUpTo(FRIEND), 0, "not its loan");

        // A colluding merchant refunds a purchase on credit the payer barely paid: closed, not proven.
        IPaymentRouter.Installment[] memory installments = new IPaymentRouter.Installment[](1);
        installments[0] = IPaymentRouter.Installment("purchase loan", 100 * USDC, 100 * USDC, 5 * USDC, 2 * USDC, 30);
        vm.prank(ONLINE_KEY);
        router.payWithLoans("order", MERCHANT, address(0xB2), installments);
        uint256 purchase = book.loanIdOf("purchase loan");
        _repayAs(address(0xB2), purchase, 1 * USDC);
        usdc.mint(MERCHANT, 100 * USDC);
        vm.startPrank(MERCHANT);
        usdc.approve(address(router), 100 * USDC);
        router.refund("order", 100 * USDC, "refund", 100 * USDC);
        vm.stopPrank();
        assertEq(uint8(book.getLoan(purchase).status), uint8(ILoanBook.LoanStatus.Repaid));
        assertEq(book.provenUpTo(address(0xB2)), 0, "closed by a refund");
        (uint256 outstanding,) = book.unprovenExposure();
        assertEq(outstanding, 0, "both came back");
    }

    function test_aDefaultLeavesTheOutstandingButNotTheBudget() public {
        _depositAs(DEPOSITOR, 1_000_000 * USDC);
        uint256 loanId = _fund(address(0xB0), 500 * USDC);
        _repayAs(address(0xB0), loanId, 100 * USDC);
        vm.warp(block.timestamp + 38 days);
        book.markOverdue(loanId);
        book.markDefaulted(loanId);
        (uint256 outstanding, uint256 available) = book.unprovenExposure();
        assertEq(outstanding, 0, "written off: no longer out");
        assertEq(available, 10_000 * USDC, "the budget refilled over the 38 days");
        assertEq(book.provenUpTo(address(0xB0)), 0, "a default proves nothing");
    }

    /// The red team's cheap proof: a 1 USDC loan repaid at once (about 0.15 USDC of fee and interest) proved an account
    /// for good, and its next loans left the cap. Now a proof takes a week held, covers only up to its own principal,
    /// needs the borrower's money alone, and a default or a refund of the loan that gave it voids it.
    function test_aProofCostsAWeekItsPrincipalAndTheBorrowersOwnMoney() public {
        _depositAs(DEPOSITOR, 1_000_000 * USDC);
        address borrower = address(0xB5);
        uint256 quick = _fund(borrower, 1 * USDC);
        _repayAs(borrower, quick, book.payoffAmount(quick));
        assertEq(book.provenUpTo(borrower), 0, "repaid at once: nothing proven");

        uint256 held = _fund(borrower, 1 * USDC);
        vm.warp(block.timestamp + 7 days);
        _repayAs(borrower, held, book.payoffAmount(held));
        assertEq(book.provenUpTo(borrower), 1 * USDC, "held a week: proven up to 1 USDC");
        assertTrue(book.getLoan(_fund(borrower, 20 * USDC)).unproven, "a 20 USDC loan is above what it proved");

        // A friend pays all but the last cent: the borrower's last payment closes it, and proves nothing.
        address other = address(0xB6);
        uint256 helped = _fund(other, 50 * USDC);
        vm.warp(block.timestamp + 7 days);
        _repayAs(FRIEND, helped, book.payoffAmount(helped) - 10_000);
        _repayAs(other, helped, book.payoffAmount(helped));
        assertEq(uint8(book.getLoan(helped).status), uint8(ILoanBook.LoanStatus.Repaid));
        assertEq(book.provenUpTo(other), 0, "another payer's money in it");

        // Proven by a purchase it repaid itself, then refunded by the merchant: the proof is void.
        IPaymentRouter.Installment[] memory installments = new IPaymentRouter.Installment[](1);
        installments[0] = IPaymentRouter.Installment("refunded later", 50 * USDC, 50 * USDC, 5 * USDC / 2, 1 * USDC, 30);
        vm.prank(ONLINE_KEY);
        router.payWithLoans("order 2", MERCHANT, other, installments);
        uint256 purchase = book.loanIdOf("refunded later");
        vm.warp(block.timestamp + 7 days);
        _repayAs(other, purchase, book.payoffAmount(purchase));
        assertEq(book.provenUpTo(other), 50 * USDC, "repaid itself, held a week");
        usdc.mint(MERCHANT, 50 * USDC);
        vm.startPrank(MERCHANT);
        usdc.approve(address(router), 50 * USDC);
        vm.expectEmit(address(book));
        emit ILoanBook.BorrowerProofRevoked(other, purchase);
        router.refund("order 2", 50 * USDC, "refund 2", 50 * USDC);
        vm.stopPrank();
        assertEq(book.provenUpTo(other), 0, "its money came back: no proof");

        // A default voids a proof too.
        uint256 defaulted = _fund(borrower, 1 * USDC);
        vm.warp(block.timestamp + 38 days);
        book.markOverdue(defaulted);
        book.markDefaulted(defaulted);
        assertEq(book.provenUpTo(borrower), 0, "a defaulter proves nothing");
    }

    function test_theLimitsChangeOnlyThroughTheTimelock() public {
        ILoanBook.UnprovenLimits memory open = ILoanBook.UnprovenLimits(10_000, type(uint96).max, type(uint96).max);
        vm.prank(ONLINE_KEY);
        vm.expectRevert(
            abi.encodeWithSelector(IAccessControl.AccessControlUnauthorizedAccount.selector, ONLINE_KEY, bytes32(0))
        );
        book.setUnprovenLimits(open);

        ILoanBook.UnprovenLimits memory tooMuch = ILoanBook.UnprovenLimits(10_001, 0, 0);
        vm.prank(address(timelock));
        vm.expectRevert(abi.encodeWithSelector(ILoanBook.LoanBookInvalidUnprovenLimits.selector, tooMuch));
        book.setUnprovenLimits(tooMuch);

        // A lower budget takes effect at once: what the bucket holds is kept, at most the new budget.
        _throughTimelock(
            address(book), abi.encodeCall(ILoanBook.setUnprovenLimits, (ILoanBook.UnprovenLimits(500, 0, uint96(100 * USDC))))
        );
        ILoanBook.UnprovenLimits memory set = book.unprovenLimits();
        assertEq(set.shareBps, 500);
        assertEq(set.floor, 0);
        assertEq(set.dailyBudget, 100 * USDC);
        _depositAs(DEPOSITOR, 10_000 * USDC);
        (, uint256 available) = book.unprovenExposure();
        assertEq(available, 100 * USDC, "5 % of 10,000 is 500; the budget holds 100");
    }

    /// @dev Whatever the loans and the time between them, the unproven principal out stays within the cap at each
    /// funding and the budget bounds each day's.
    function testFuzz_fundingNeverPassesTheLimits(uint256[12] memory principals, uint256[12] memory gaps) public {
        _depositAs(DEPOSITOR, 100_000 * USDC);
        _throughTimelock(
            address(book), abi.encodeCall(ILoanBook.setUnprovenLimits, (ILoanBook.UnprovenLimits(500, 1_000e6, 2_000e6)))
        );
        uint256 fundedToday;
        uint256 dayStart = block.timestamp;
        for (uint256 i; i < principals.length; ++i) {
            vm.warp(block.timestamp + bound(gaps[i], 0, 12 hours));
            if (block.timestamp >= dayStart + 1 days) (dayStart, fundedToday) = (block.timestamp, 0);
            uint256 principal = bound(principals[i], 1, 500 * USDC);
            (uint256 before, uint256 available) = book.unprovenExposure();
            vm.prank(ONLINE_KEY);
            try book.fundLoan(bytes32(++_refs), address(uint160(0xC000 + i)), principal, 0, 0, 30) {
                assertLe(principal, available, "funded within what was available");
                fundedToday += principal;
            } catch {
                assertGt(principal, available, "refused only above it");
            }
            (uint256 outstanding,) = book.unprovenExposure();
            assertLe(outstanding, Math.max(1_000e6, vault.totalAssets() * 500 / 10_000), "within the cap");
            assertLe(outstanding - before, principal, "at most the loan");
            // Within any day since its start, at most the budget and what refilled of it.
            assertLe(fundedToday, 2 * 2_000e6, "a day's budget and its refill");
        }
    }
}
