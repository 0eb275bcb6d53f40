// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ERC4626} from "@openzeppelin/contracts/token/ERC20/extensions/ERC4626.sol";
import {IStakingVault} from "../../../contracts/interfaces/IStakingVault.sol";
import {LendingSetup} from "../lending/LendingSetup.sol";

/// The ERC-4626 properties of a16z's erc4626-tests (github.com/a16z/erc4626-tests, `ERC4626.prop.sol`), written anew
/// for this suite's test base (the original is AGPL and needs forge-std), run against the vault in a working state: a
/// loan out accruing interest, a yield distribution unlocking, deposits of several holders. Each property quotes the
/// EIP's rule it checks. Then the vault's own limits (issue "The pool's depositors are safe on chain", item 7;
/// D-102): `maxDeposit` and `maxMint` say what a deposit or a mint may be now, including zero when the room under
/// the deposit limit is below the minimum deposit.
contract ERC4626PropertiesTest is LendingSetup {
    address internal constant ALICE = address(0xA11CE);
    address internal constant BOB = address(0xB0B);
    address internal constant BORROWER = address(0xB0AA0);

    function setUp() public {
        _deploy();
        _depositAs(ALICE, 40_000 * USDC);
        _depositAs(BOB, 10_000 * USDC);
        book.fundLoan("loan", BORROWER, 500 * USDC, 25 * USDC, 50 * USDC, 30);
        usdc.mint(address(this), 333 * USDC);
        vault.distributeYield(333 * USDC);
        // The price now has an odd ratio: interest accrued, profit partly unlocked.
        vm.warp(block.timestamp + 3 days + 17);
    }

    function _caller(uint256 seed) internal pure returns (address) {
        return seed % 2 == 0 ? ALICE : BOB;
    }

    /* CONVERSIONS: "MUST NOT show any variations depending on the caller." */

    function testFuzz_conversionsDoNotDependOnTheCaller(uint256 amount) public {
        amount = bound(amount, 0, 1e30);
        vm.prank(ALICE);
        uint256 sharesA = vault.convertToShares(amount);
        uint256 assetsA = vault.convertToAssets(amount);
        vm.prank(BOB);
        assertEq(vault.convertToShares(amount), sharesA, "convertToShares");
        vm.prank(BOB);
        assertEq(vault.convertToAssets(amount), assetsA, "convertToAssets");
    }

    /* PREVIEWS: "MUST return as close to and no more (no fewer) than the exact amount ... in the same transaction." */

    function testFuzz_previewDepositIsNoMoreThanDeposit(uint256 seed, uint256 assets) public {
        address caller = _caller(seed);
        assets = bound(assets, vault.minDeposit(), 1_000_000 * USDC);
        usdc.mint(caller, assets);
        vm.startPrank(caller);
        usdc.approve(address(vault), assets);
        uint256 preview = vault.previewDeposit(assets);
        assertLe(preview, vault.deposit(assets, caller), "previewDeposit <= shares minted");
        vm.stopPrank();
    }

    function testFuzz_previewMintIsNoLessThanMint(uint256 seed, uint256 shares) public {
        address caller = _caller(seed);
        shares = bound(shares, vault.previewDeposit(vault.minDeposit()) + 1, 1_000_000e18);
        uint256 preview = vault.previewMint(shares);
        usdc.mint(caller, preview);
        vm.startPrank(caller);
        usdc.approve(address(vault), preview);
        assertGe(preview, vault.mint(shares, caller), "previewMint >= assets paid");
        vm.stopPrank();
    }

    function testFuzz_previewWithdrawIsNoLessThanWithdraw(uint256 seed, uint256 assets) public {
        address caller = _caller(seed);
        assets = bound(assets, 0, vault.maxWithdraw(caller));
        uint256 preview = vault.previewWithdraw(assets);
        vm.prank(caller);
        assertGe(preview, vault.withdraw(assets, caller, caller), "previewWithdraw >= shares burned");
    }

    function testFuzz_previewRedeemIsNoMoreThanRedeem(uint256 seed, uint256 shares) public {
        address caller = _caller(seed);
        shares = bound(shares, 0, vault.maxRedeem(caller));
        uint256 preview = vault.previewRedeem(shares);
        vm.prank(caller);
        assertLe(preview, vault.redeem(shares, caller, caller), "previewRedeem <= assets received");
    }

    /* MAXIMA: "MUST return the maximum amount ... that would be accepted, ... not cause a revert." */

    function testFuzz_theMaximaAreAccepted(uint256 seed, uint256 limitRoom) public {
        address caller = _caller(seed);
        vm.startPrank(caller);
        uint256 maxWithdraw = vault.maxWithdraw(caller);
        if (maxWithdraw > 0) vault.withdraw(maxWithdraw, caller, caller);
        vm.stopPrank();
        _depositAs(caller, 100 * USDC);
        vm.startPrank(caller);
        uint256 maxRedeem = vault.maxRedeem(caller);
        if (maxRedeem > 0) vault.redeem(maxRedeem, caller, caller);
        vm.stopPrank();

        // Under a deposit limit, maxDeposit and maxMint are accepted, and one more is refused.
        vault.setDepositLimit(vault.totalAssets() + bound(limitRoom, vault.minDeposit(), 1_000_000 * USDC));
        uint256 maxDeposit = vault.maxDeposit(caller);
        usdc.mint(caller, maxDeposit + 1);
        vm.startPrank(caller);
        usdc.approve(address(vault), maxDeposit + 1);
        uint256 snapshot = vm.snapshotState();
        vm.expectRevert(
            abi.encodeWithSelector(ERC4626.ERC4626ExceededMaxDeposit.selector, caller, maxDeposit + 1, maxDeposit)
        );
        vault.deposit(maxDeposit + 1, caller);
        vault.deposit(maxDeposit, caller);
        assertEq(vault.maxDeposit(caller), 0, "nothing more fits");
        vm.revertToState(snapshot);
        uint256 maxMint = vault.maxMint(caller);
        vault.mint(maxMint, caller);
        vm.stopPrank();
    }

    /* ROUND TRIPS: nobody gets something for nothing. */

    function testFuzz_depositThenRedeemGivesNoMore(uint256 seed, uint256 assets) public {
        address caller = _caller(seed);
        assets = bound(assets, vault.minDeposit(), 10_000 * USDC);
        uint256 shares = _depositAs(caller, assets);
        vm.prank(caller);
        assertLe(vault.redeem(shares, caller, caller), assets, "redeem(deposit(a)) <= a");
    }

    function testFuzz_depositThenWithdrawBurnsNoFewer(uint256 seed, uint256 assets) public {
        address caller = _caller(seed);
        assets = bound(assets, vault.minDeposit(), 10_000 * USDC);
        uint256 shares = _depositAs(caller, assets);
        vm.prank(caller);
        assertGe(vault.withdraw(assets, caller, caller), shares, "withdraw(a) burns >= deposit(a)'s shares");
    }

    function testFuzz_redeemThenDepositMintsNoMore(uint256 seed, uint256 shares) public {
        address caller = _caller(seed);
        shares = bound(shares, vault.previewWithdraw(vault.minDeposit()), vault.maxRedeem(caller));
        vm.prank(caller);
        uint256 assets = vault.redeem(shares, caller, caller);
        vm.startPrank(caller);
        usdc.approve(address(vault), assets);
        assertLe(vault.deposit(assets, caller), shares, "deposit(redeem(s)) <= s");
        vm.stopPrank();
    }

    function testFuzz_redeemThenMintCostsNoLess(uint256 seed, uint256 shares) public {
        address caller = _caller(seed);
        shares = bound(shares, vault.previewWithdraw(vault.minDeposit()), vault.maxRedeem(caller));
        vm.prank(caller);
        uint256 assets = vault.redeem(shares, caller, caller);
        uint256 cost = vault.previewMint(shares);
        usdc.mint(caller, cost);
        vm.startPrank(caller);
        usdc.approve(address(vault), cost);
        assertGe(vault.mint(shares, caller), assets, "mint(s) after redeem(s) costs >= what it paid");
        vm.stopPrank();
    }

    function testFuzz_mintThenRedeemGivesNoMore(uint256 seed, uint256 shares) public {
        address caller = _caller(seed);
        shares = bound(shares, vault.previewDeposit(vault.minDeposit()) + 1, 10_000e18);
        uint256 cost = vault.previewMint(shares);
        usdc.mint(caller, cost);
        vm.startPrank(caller);
        usdc.approve(address(vault), cost);
        uint256 paid = vault.mint(shares, caller);
        assertLe(vault.redeem(shares, caller, caller), paid, "redeem(mint(s)) <= its cost");
        vm.stopPrank();
    }

    function testFuzz_withdrawThenDepositMintsNoMore(uint256 seed, uint256 assets) public {
        address caller = _caller(seed);
        assets = bound(assets, vault.minDeposit(), vault.maxWithdraw(caller));
        vm.prank(caller);
        uint256 shares = vault.withdraw(assets, caller, caller);
        vm.startPrank(caller);
        usdc.approve(address(vault), assets);
        assertLe(vault.deposit(assets, caller), shares, "deposit(a) after withdraw(a) mints <= what it burned");
        vm.stopPrank();
    }

    /* THE VAULT'S OWN LIMITS (D-102) */

    function test_maxDepositIsZeroWhenNoDepositCanSucceed() public {
        // Before: maxDeposit said "unlimited" whatever the limits, and a deposit under the minimum reverted.
        assertEq(vault.maxDeposit(ALICE), type(uint256).max, "no deposit limit by default");
        vault.setDepositLimit(vault.totalAssets() + vault.minDeposit() - 1);
        assertEq(vault.maxDeposit(ALICE), 0, "the room is below the minimum deposit");
        assertEq(vault.maxMint(ALICE), 0);
        uint256 minimum = vault.minDeposit();
        usdc.mint(ALICE, minimum);
        vm.startPrank(ALICE);
        usdc.approve(address(vault), minimum);
        vm.expectRevert(abi.encodeWithSelector(ERC4626.ERC4626ExceededMaxDeposit.selector, ALICE, minimum, 0));
        vault.deposit(minimum, ALICE);
        vm.stopPrank();

        vault.setDepositLimit(vault.totalAssets() + vault.minDeposit());
        assertEq(vault.maxDeposit(ALICE), vault.minDeposit(), "exactly one minimum deposit fits");
        vault.pause();
        assertEq(vault.maxDeposit(ALICE), 0, "nothing while paused");
        assertEq(vault.maxMint(ALICE), 0);
    }

    function test_gainsMayTakeTheAssetsAboveTheLimit() public {
        vault.setDepositLimit(vault.totalAssets());
        assertEq(vault.maxDeposit(BOB), 0);
        // Within the loan's term (past it, its expected loss would be out of the assets by the clock).
        vm.warp(block.timestamp + 20 days);
        assertGt(vault.totalAssets(), vault.depositLimit(), "the unlocked yield and the interest");
        assertEq(vault.maxDeposit(BOB), 0, "still nothing");
        vault.setDepositLimit(type(uint256).max);
        assertEq(vault.maxMint(BOB), type(uint256).max);
    }

    function test_onlyTheAdminSetsTheDepositLimit() public {
        vm.expectEmit(address(vault));
        emit IStakingVault.StakingVaultDepositLimitUpdated(1);
        vault.setDepositLimit(1);
        vm.prank(ALICE);
        vm.expectRevert();
        vault.setDepositLimit(type(uint256).max);
    }
}
