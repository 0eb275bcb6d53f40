// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IAccessControl} from "@openzeppelin/contracts/access/IAccessControl.sol";
import {Pausable} from "@openzeppelin/contracts/utils/Pausable.sol";
import {LendingSetup} from "../lending/LendingSetup.sol";

/// A pause never traps depositors (Yearn V3's shutdown), only the admin lifts it, and what the last holders leave in
/// an emptied vault goes to the next ones (the review's findings of issue "Depositors bear only the risk they are
/// paid for").
contract ShutdownTest is LendingSetup {
    address internal constant HOLDER = address(0x401D);
    address internal constant NEXT = address(0x4E47);
    address internal constant LATER = address(0x1A7E);
    address internal constant BORROWER = address(0xB0AA0);
    address internal constant PAUSER = address(0x9A05E);

    uint256 internal constant UNLOCK = 7 days;

    function setUp() public {
        _deploy();
        vault.grantRole(vault.PAUSER_ROLE(), PAUSER);
    }

    function _pause() internal {
        vm.prank(PAUSER);
        vault.pause();
    }

    /// The pauser's key froze every exit for the timelock's two days; now withdrawals, redemptions, repayments and
    /// defaults go on, and only deposits and new loans stop.
    function test_aPauseStopsEntriesAndLoansButNeverExitsOrRepayments() public {
        _depositAs(HOLDER, 1_000 * USDC);
        uint256 loanId = book.fundLoan("paused", BORROWER, 100 * USDC, 5 * USDC, 10 * USDC, 30);
        _pause();

        assertEq(vault.maxDeposit(HOLDER), 0, "no deposit");
        assertApproxEqAbs(vault.previewRedeem(vault.maxRedeem(HOLDER)), vault.idleAssets(), 1, "redeemable up to the idle USDC");
        assertGt(vault.maxWithdraw(HOLDER), 0, "withdrawable");

        usdc.mint(HOLDER, 10 * USDC);
        vm.startPrank(HOLDER);
        usdc.approve(address(vault), 10 * USDC);
        vm.expectRevert(Pausable.EnforcedPause.selector);
        vault.deposit(10 * USDC, HOLDER);
        vault.withdraw(100 * USDC, HOLDER, HOLDER);
        vault.redeem(vault.balanceOf(HOLDER) / 2, HOLDER, HOLDER);
        vm.stopPrank();

        vm.expectRevert(Pausable.EnforcedPause.selector);
        book.fundLoan("not while paused", BORROWER, 100 * USDC, 5 * USDC, 10 * USDC, 30);

        usdc.mint(BORROWER, 105 * USDC);
        vm.startPrank(BORROWER);
        usdc.approve(address(book), 105 * USDC);
        book.repay(loanId, type(uint256).max);
        vm.stopPrank();

        // Everything the holder has left is idle again: it leaves whole while the vault is still paused.
        uint256 shares = vault.balanceOf(HOLDER);
        vm.prank(HOLDER);
        vault.redeem(shares, HOLDER, HOLDER);
        assertEq(vault.balanceOf(HOLDER), 0);
        assertTrue(vault.paused(), "still paused");
    }

    /// The pauser is a fast brake: a thief of its key cannot lift a defender's pause. Unpausing is the admin's (the
    /// timelock's, so it waits the delay).
    function test_onlyTheAdminUnpauses() public {
        _pause();
        bytes32 admin = vault.DEFAULT_ADMIN_ROLE();
        vm.prank(PAUSER);
        vm.expectRevert(abi.encodeWithSelector(IAccessControl.AccessControlUnauthorizedAccount.selector, PAUSER, admin));
        vault.unpause();

        vault.unpause();
        assertTrue(!vault.paused(), "the admin lifted it");
    }

    /// The review's case: 1,000 USDC still locked when the last holder left stayed in the vault for no one (the
    /// virtual shares held it). Now the next holders receive it as it unlocks, and the first of them cannot take it
    /// at once.
    function test_profitLockedWhenTheVaultEmptiesGoesToTheNextHolders() public {
        _depositAs(HOLDER, 1_000 * USDC);
        usdc.mint(address(this), 1_000 * USDC);
        vault.distributeYield(1_000 * USDC);
        vm.warp(block.timestamp + 1);
        uint256 shares = vault.balanceOf(HOLDER);
        vm.prank(HOLDER);
        uint256 out = vault.redeem(shares, HOLDER, HOLDER);
        assertLt(out, 1_001 * USDC, "the holder left with one second of the unlock");
        uint256 left = usdc.balanceOf(address(vault));

        // Days later the vault is still empty; the next holder enters at par and gains nothing at once.
        vm.warp(block.timestamp + 10 days);
        _depositAs(NEXT, 1_000 * USDC);
        assertApproxEqAbs(vault.previewRedeem(vault.balanceOf(NEXT)), 1_000 * USDC, 1, "entered at par");
        assertEq(vault.lockedProfit(), left, "what was left is locked anew");

        // A second holder joins halfway: each receives the unlock while it holds.
        vm.warp(block.timestamp + UNLOCK / 2);
        _depositAs(LATER, 1_000 * USDC);
        vm.warp(block.timestamp + UNLOCK / 2);
        uint256 next = vault.previewRedeem(vault.balanceOf(NEXT));
        uint256 later = vault.previewRedeem(vault.balanceOf(LATER));
        assertApproxEqAbs(next + later, 2_000 * USDC + left, 2, "all of it to the next holders");
        assertGt(next, later + left / 3, "the first held it longer");
    }
}
