// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IAccessControl} from "@openzeppelin/contracts/access/IAccessControl.sol";
import {IStakingVault} from "../../../contracts/interfaces/IStakingVault.sol";
import {LendingSetup} from "../lending/LendingSetup.sol";

/// The pool has a utilization cap above which no loan is funded (issue "The pool's depositors are safe on chain",
/// item 3; D-101), so depositors can always leave with the cap's headroom. Before, a loan could take every idle USDC:
/// a 10,000 USDC loan on a 10,000 USDC pool was funded and left nothing for exits.
contract UtilizationCapTest is LendingSetup {
    address internal constant DEPOSITOR = address(0xD0);
    address internal constant BORROWER = address(0xB0AA0);

    function setUp() public {
        _deploy();
        // This contract lends as the loan book does.
        vault.grantRole(vault.LENDER_ROLE(), address(this));
        _depositAs(DEPOSITOR, 10_000 * USDC);
    }

    function test_noLoanTakesThePoolAboveTheCap() public {
        assertEq(vault.maxUtilizationBps(), 9_000, "a tenth of the pool stays idle by default");
        assertEq(vault.lendableAssets(), 9_000 * USDC);
        vm.expectRevert(
            abi.encodeWithSelector(IStakingVault.StakingVaultInsufficientLiquidity.selector, 10_000 * USDC, 9_000 * USDC)
        );
        vault.lend(1, BORROWER, 10_000 * USDC, 0, 0, block.timestamp + 30 days, 0);

        vault.lend(1, BORROWER, 9_000 * USDC, 0, 0, block.timestamp + 30 days, 0);
        assertEq(vault.lendableAssets(), 0);
        vm.expectRevert(abi.encodeWithSelector(IStakingVault.StakingVaultInsufficientLiquidity.selector, 1, 0));
        vault.lend(2, BORROWER, 1, 0, 0, block.timestamp + 30 days, 0);

        // The depositors can leave with the headroom: withdrawals are not capped, only loans.
        assertEq(vault.maxWithdraw(DEPOSITOR), 1_000 * USDC);
        vm.prank(DEPOSITOR);
        vault.withdraw(1_000 * USDC, DEPOSITOR, DEPOSITOR);
        assertEq(usdc.balanceOf(DEPOSITOR), 1_000 * USDC);
    }

    function test_aFeeKeptAsReserveDoesNotCountAsLendable() public {
        // 9,000 out with a 900 fee kept as reserve: idle is 10,000 - 9,000 = 1,000, principal out 9,000.
        vault.lend(1, BORROWER, 9_000 * USDC, 900 * USDC, 0, block.timestamp + 30 days, 0);
        assertEq(vault.idleAssets(), 1_000 * USDC);
        assertEq(vault.lendableAssets(), 0);
        // A repayment brings the pool back under the cap.
        usdc.mint(address(this), 4_500 * USDC);
        usdc.transfer(address(vault), 4_500 * USDC);
        vault.recordRepayment(1, 4_500 * USDC, 0, false);
        assertEq(vault.lendableAssets(), 4_500 * USDC, "90 % of 10,000 less the 4,500 still out");
    }

    function test_theAdminSetsTheCapWithinOneHundredPercent() public {
        vm.expectEmit(address(vault));
        emit IStakingVault.StakingVaultMaxUtilizationUpdated(5_000);
        vault.setMaxUtilization(5_000);
        assertEq(vault.lendableAssets(), 5_000 * USDC);
        vault.setMaxUtilization(10_000);
        assertEq(vault.lendableAssets(), 10_000 * USDC);
        vault.setMaxUtilization(0);
        assertEq(vault.lendableAssets(), 0, "a cap of zero stops lending");
        vm.expectRevert(abi.encodeWithSelector(IStakingVault.StakingVaultMaxUtilizationTooHigh.selector, 10_001, 10_000));
        vault.setMaxUtilization(10_001);
        bytes32 admin = vault.DEFAULT_ADMIN_ROLE();
        vm.prank(DEPOSITOR);
        vm.expectRevert(abi.encodeWithSelector(IAccessControl.AccessControlUnauthorizedAccount.selector, DEPOSITOR, admin));
        vault.setMaxUtilization(10_000);
    }
}
