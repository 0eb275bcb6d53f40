// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {IStakingVault} from "../../../contracts/interfaces/IStakingVault.sol";
import {LendingSetup} from "../lending/LendingSetup.sol";

/// Fuzz tests of the vault's conversions and limits, from random states with deposits, yield, loans and defaults.
contract StakingVaultTest is LendingSetup {
    address internal constant SEEDER = address(0x5EED);
    address internal constant USER = address(0xA11CE);
    address internal constant ATTACKER = address(0xBAD);
    address internal constant VICTIM = address(0xB0B);
    address internal constant BORROWER = address(0xB0AA0);

    function setUp() public {
        _deploy();
    }

    /// @dev A live vault: a first deposit, maybe yield, maybe a loan, maybe a default of that loan.
    function _randomState(uint256 seedAssets, uint256 yield, uint256 principal, bool defaulted) internal {
        seedAssets = bound(seedAssets, USDC, 1_000_000 * USDC);
        _depositAs(SEEDER, seedAssets);
        yield = bound(yield, 0, seedAssets);
        if (yield > 0) {
            usdc.mint(address(this), yield);
            vault.distributeYield(yield);
        }
        principal = bound(principal, 0, Math.min(500 * USDC, vault.lendableAssets()));
        if (principal > 0) {
            book.fundLoan(keccak256("loan"), BORROWER, principal, principal / 20, principal / 10, 30);
            if (defaulted) {
                vm.warp(block.timestamp + 38 days);
                book.markOverdue(1);
                book.markDefaulted(1);
            }
        }
    }

    function testFuzz_depositThenRedeemNeverProfits(
        uint256 seedAssets,
        uint256 yield,
        uint256 principal,
        bool defaulted,
        uint256 assets
    ) public {
        _randomState(seedAssets, yield, principal, defaulted);
        assets = bound(assets, USDC, 1_000_000 * USDC);
        (uint256 num0, uint256 den0) = _price();
        // Entries pay the entry price (the exit price, less the provisions and expected losses, is for exits: D-121, D-126).
        uint256 entryNum0 = vault.entryAssets() + 1;

        uint256 shares = _depositAs(USER, assets);
        assertEq(shares, Math.mulDiv(assets, den0, entryNum0), "shares rounded down");
        (uint256 num1, uint256 den1) = _price();
        assertGe(num1 * den0, num0 * den1, "a deposit never lowers the share price");

        vm.prank(USER);
        uint256 received = vault.redeem(shares, USER, USER);
        assertLe(received, assets, "deposit then redeem never profits");
        (uint256 num2, uint256 den2) = _price();
        assertGe(num2 * den1, num1 * den2, "a redemption never lowers the share price");
    }

    function testFuzz_mintPaysAtLeastTheSharesWorth(uint256 seedAssets, uint256 yield, uint256 principal, uint256 shares)
        public
    {
        _randomState(seedAssets, yield, principal, false);
        shares = bound(shares, 1e18, 1_000_000e18);
        uint256 cost = vault.previewMint(shares);
        usdc.mint(USER, cost);
        vm.startPrank(USER);
        usdc.approve(address(vault), cost);
        assertEq(vault.mint(shares, USER), cost, "mint charges previewMint");
        assertLe(vault.previewRedeem(shares), cost, "minted shares are worth at most what they cost");
        vm.stopPrank();
    }

    function testFuzz_withdrawBurnsAtLeastTheAssetsWorth(uint256 seedAssets, uint256 yield, uint256 principal, uint256 assets)
        public
    {
        _randomState(seedAssets, yield, principal, false);
        _depositAs(USER, 10_000 * USDC);
        assets = bound(assets, 1, vault.maxWithdraw(USER));
        uint256 shares = vault.previewWithdraw(assets);
        assertGe(vault.convertToAssets(shares), assets, "the burned shares are worth at least the assets");
        vm.prank(USER);
        assertEq(vault.withdraw(assets, USER, USER), shares, "withdraw burns previewWithdraw");
        assertEq(usdc.balanceOf(USER), assets, "assets received");
    }

    function testFuzz_conversionsRoundTowardsTheVault(
        uint256 seedAssets,
        uint256 yield,
        uint256 principal,
        bool defaulted,
        uint256 amount
    ) public {
        _randomState(seedAssets, yield, principal, defaulted);
        amount = bound(amount, 0, 1e30);
        assertLe(vault.convertToAssets(vault.convertToShares(amount)), amount, "assets -> shares -> assets");
        assertLe(vault.convertToShares(vault.convertToAssets(amount)), amount, "shares -> assets -> shares");
        assertGe(vault.previewMint(amount), vault.convertToAssets(amount), "mint rounds up");
        assertGe(vault.previewWithdraw(amount), vault.convertToShares(amount), "withdraw rounds up");
        assertLe(vault.convertToAssets(vault.totalSupply()), vault.totalAssets(), "supply is covered");
        assertEq(vault.exchangeRate() / 1e12, vault.convertToAssets(1e18), "exchange rate = assets per tmUSDC");
    }

    /// @dev The classic first-depositor attack: the attacker deposits a dust amount, donates a large amount straight
    /// to the vault to inflate the share price, and hopes the victim's deposit rounds down to few shares. The 10**12
    /// virtual shares take half the donation, and the victim loses at most dust. The minimum deposit is switched off
    /// to show the virtual shares alone suffice.
    function testFuzz_inflationAttackDoesNotPay(uint256 attackerDeposit, uint256 donation, uint256 victimDeposit) public {
        vault.setMinDeposit(0);
        attackerDeposit = bound(attackerDeposit, 1, USDC);
        donation = bound(donation, 1, 1_000_000 * USDC);
        victimDeposit = bound(victimDeposit, USDC, 1_000_000 * USDC);

        uint256 attackerShares = _depositAs(ATTACKER, attackerDeposit);
        usdc.mint(ATTACKER, donation);
        vm.prank(ATTACKER);
        usdc.transfer(address(vault), donation);

        uint256 victimShares = _depositAs(VICTIM, victimDeposit);
        assertTrue(victimShares > 0, "the victim gets shares");

        uint256 victimValue = vault.previewRedeem(victimShares);
        assertGe(victimValue + donation / 1e12 + 2, victimDeposit, "the victim keeps all but dust");
        uint256 attackerValue = vault.previewRedeem(attackerShares);
        assertLe(attackerValue, attackerDeposit + donation, "the attacker does not profit");

        vm.prank(VICTIM);
        assertEq(vault.redeem(victimShares, VICTIM, VICTIM), victimValue, "the victim can redeem");
    }

    /// @dev maxRedeem and maxWithdraw tell the truth when loans leave little idle USDC: the reported maximum goes
    /// through, and a larger amount within the owner's balance fails with the liquidity error.
    function testFuzz_maxRedeemAndMaxWithdrawAreHonest(uint256 deposit, uint256 principal, bool useWithdraw) public {
        deposit = bound(deposit, USDC, 500 * USDC);
        uint256 shares = _depositAs(USER, deposit);
        principal = bound(principal, 1, vault.lendableAssets());
        book.fundLoan(keccak256("loan"), BORROWER, principal, 0, 0, 30);

        uint256 idle = vault.idleAssets();
        assertEq(idle, deposit - principal, "idle after the loan");
        uint256 maxShares = vault.maxRedeem(USER);
        uint256 maxAssets = vault.maxWithdraw(USER);
        assertLe(maxAssets, idle, "maxWithdraw within idle");
        assertLe(vault.previewRedeem(maxShares), idle, "maxRedeem within idle");

        if (maxShares < shares) {
            uint256 tooMany = shares;
            uint256 assets = vault.previewRedeem(tooMany);
            if (assets > idle) {
                vm.expectRevert(
                    abi.encodeWithSelector(IStakingVault.StakingVaultInsufficientLiquidity.selector, assets, idle)
                );
                vm.prank(USER);
                vault.redeem(tooMany, USER, USER);
            }
        }
        vm.prank(USER);
        if (useWithdraw) {
            if (maxAssets > 0) vault.withdraw(maxAssets, USER, USER);
        } else if (maxShares > 0) {
            vault.redeem(maxShares, USER, USER);
        }
    }

    function testFuzz_yieldRaisesTheExchangeRate(uint256 seedAssets, uint256 yield) public {
        _randomState(seedAssets, 0, 0, false);
        yield = bound(yield, 1, 1_000_000 * USDC);
        uint256 before = vault.exchangeRate();
        usdc.mint(address(this), yield);
        vault.distributeYield(yield);
        assertTrue(vault.exchangeRate() >= before, "yield never lowers the rate");
        assertEq(vault.totalYield(), yield, "total yield");
    }
}
