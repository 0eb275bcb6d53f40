// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IAccessControl} from "@openzeppelin/contracts/access/IAccessControl.sol";
import {ILoanBook} from "../../../contracts/interfaces/ILoanBook.sol";
import {IPaymentRouter} from "../../../contracts/interfaces/IPaymentRouter.sol";
import {PlatformSetup} from "./PlatformSetup.sol";

/// Issue #43 item 2 (D-107): the online key funds loans, so whoever steals it can lend the pool to addresses it
/// controls, 500 USDC at a time. Before, nothing bounded how much: it took the pool down to the utilization cap in one
/// block. Now the loan book's funding bucket bounds it per day, whoever holds the key.
contract FundingCapTest is PlatformSetup {
    address internal constant DEPOSITOR = address(0xD0);
    address internal constant MERCHANT = address(0x3E5C4A);
    uint256 internal constant LOAN = 500 * USDC;

    function setUp() public {
        _deployPlatform();
        _depositAs(DEPOSITOR, 1_000_000 * USDC);
        // The thief's mules are unproven borrowers, whom the loan book bounds tighter still (UnprovenBorrowers.t.sol):
        // opened here, so that this shows the funding cap alone; a day on, the budget is full.
        _throughTimelock(
            address(book),
            abi.encodeCall(ILoanBook.setUnprovenLimits, (ILoanBook.UnprovenLimits(10_000, type(uint96).max, type(uint96).max)))
        );
        vm.warp(block.timestamp + 1 days);
    }

    /// Lends `LOAN`s to addresses of its own until the book refuses; returns what left the pool.
    function _drainAsThief(uint256 salt) internal returns (uint256 taken) {
        vm.startPrank(ONLINE_KEY);
        for (uint256 i; i < 1_000; ++i) {
            address mule = address(uint160(0xA0000 + salt * 10_000 + i));
            try book.fundLoan(keccak256(abi.encode(salt, i)), mule, LOAN, 0, 0, 30) {
                taken += LOAN;
            } catch (bytes memory reason) {
                assertTrue(bytes4(reason) == ILoanBook.LoanBookFundingCapReached.selector, "refused by the cap");
                break;
            }
        }
        vm.stopPrank();
    }

    function test_aStolenOnlineKeyLendsAtMostTheCapADay() public {
        (uint256 dailyCap, uint256 available) = book.fundingCapacity();
        assertEq(dailyCap, book.DEFAULT_DAILY_FUNDING_CAP());
        assertEq(available, dailyCap, "a new book lends at once");

        uint256 taken = _drainAsThief(1);
        assertEq(taken, 100_000 * USDC, "one day's cap, not the pool down to its utilization cap (900,000)");
        vm.prank(ONLINE_KEY);
        vm.expectRevert(abi.encodeWithSelector(ILoanBook.LoanBookFundingCapReached.selector, LOAN, 0));
        book.fundLoan("one more", address(0xA1), LOAN, 0, 0, 30);

        // The bucket refills at the cap per day: half a day later, half of it.
        vm.warp(block.timestamp + 12 hours);
        (, available) = book.fundingCapacity();
        assertEq(available, 50_000 * USDC);
        taken += _drainAsThief(2);
        assertEq(taken, 150_000 * USDC, "at most twice the cap over any 24 hours");
        assertEq(usdc.balanceOf(address(vault)), 850_000 * USDC);
    }

    function test_purchasesDrawOnTheSameBucket() public {
        _throughTimelock(address(book), abi.encodeCall(ILoanBook.setDailyFundingCap, (1_000 * USDC)));
        IPaymentRouter.Installment[] memory installments = new IPaymentRouter.Installment[](2);
        installments[0] = IPaymentRouter.Installment("part 1", 400 * USDC, 400 * USDC, 20 * USDC, 8 * USDC, 30);
        installments[1] = IPaymentRouter.Installment("part 2", 400 * USDC, 400 * USDC, 20 * USDC, 8 * USDC, 60);
        vm.prank(ONLINE_KEY);
        router.payWithLoans("order", MERCHANT, address(0xB0), installments);
        (, uint256 available) = book.fundingCapacity();
        assertEq(available, 200 * USDC);
        installments[0].loanRef = "part 3";
        installments[1].loanRef = "part 4";
        vm.prank(ONLINE_KEY);
        vm.expectRevert(abi.encodeWithSelector(ILoanBook.LoanBookFundingCapReached.selector, 400 * USDC, 200 * USDC));
        router.payWithLoans("order 2", MERCHANT, address(0xB0), installments);
    }

    function test_theCapChangesOnlyThroughTheTimelock() public {
        vm.prank(ONLINE_KEY);
        vm.expectRevert(
            abi.encodeWithSelector(IAccessControl.AccessControlUnauthorizedAccount.selector, ONLINE_KEY, bytes32(0))
        );
        book.setDailyFundingCap(type(uint96).max);

        vm.prank(ONLINE_KEY);
        book.fundLoan("loan", address(0xB0), LOAN, 0, 0, 30);
        // Lowering clamps what is available; raising keeps it, to refill at the new rate.
        _throughTimelock(address(book), abi.encodeCall(ILoanBook.setDailyFundingCap, (300 * USDC)));
        (uint256 dailyCap, uint256 available) = book.fundingCapacity();
        assertEq(dailyCap, 300 * USDC);
        assertEq(available, 300 * USDC);
        _throughTimelock(address(book), abi.encodeCall(ILoanBook.setDailyFundingCap, (2_400 * USDC)));
        (, available) = book.fundingCapacity();
        assertEq(available, 300 * USDC, "kept");
        vm.warp(block.timestamp + 1 hours);
        (, available) = book.fundingCapacity();
        assertEq(available, 400 * USDC, "refilled at 100 an hour");

        vm.prank(address(timelock));
        vm.expectRevert(abi.encodeWithSelector(ILoanBook.LoanBookInvalidFundingCap.selector, 0));
        book.setDailyFundingCap(0);
    }

    /// Over any sequence of loans and waits, what was funded since the start never exceeds the cap plus its refill.
    function testFuzz_neverMoreThanTheCapAndItsRefill(uint16[16] calldata amounts, uint32[16] calldata waits) public {
        uint256 dailyCap = book.DEFAULT_DAILY_FUNDING_CAP();
        uint256 start = block.timestamp;
        uint256 funded;
        for (uint256 i; i < amounts.length; ++i) {
            vm.warp(block.timestamp + waits[i] % 1 days);
            uint256 principal = bound(amounts[i], 1, 500) * USDC;
            (, uint256 available) = book.fundingCapacity();
            vm.prank(ONLINE_KEY);
            try book.fundLoan(keccak256(abi.encode(i)), address(0xB0), principal, 0, 0, 30) {
                funded += principal;
                assertLe(principal, available, "funded within what was available");
            } catch {
                assertGe(principal, available + 1, "refused only above what was available");
            }
            assertLe(funded, dailyCap + dailyCap * (block.timestamp - start) / 1 days, "the bucket's bound");
        }
    }
}
