// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IStakingVault} from "../../../contracts/interfaces/IStakingVault.sol";
import {LendingSetup} from "../lending/LendingSetup.sol";

/// The insurance reserve's surplus can leave (issue "The pool's depositors are safe on chain", item 4; D-98): to the
/// treasury, by the admin (the timelock), never below what covers the loans out. Before, the reserve had no way out.
contract ReserveSurplusTest is LendingSetup {
    address internal constant DEPOSITOR = address(0xD0);
    address internal constant BORROWER = address(0xB0AA0);
    address internal constant TREASURY = address(0x7EA5);

    function setUp() public {
        _deploy();
        _depositAs(DEPOSITOR, 10_000 * USDC);
        // Two loans repaid leave their 50 USDC fees in the reserve; one of 200 stays out.
        for (uint256 i; i < 2; ++i) {
            uint256 loanId = book.fundLoan(keccak256(abi.encode("repaid", i)), BORROWER, 500 * USDC, 0, 25 * USDC, 30);
            usdc.mint(address(this), 500 * USDC);
            book.repay(loanId, 500 * USDC);
        }
        book.fundLoan("out", BORROWER, 200 * USDC, 0, 0, 30);
    }

    function test_theSurplusLeavesToTheTreasuryAndNoMore() public {
        // 50 held; 80 % of the 200 out is 160, more than the reserve: no surplus yet.
        assertEq(vault.insuranceReserve(), 50 * USDC);
        assertEq(vault.reserveSurplus(), 0);
        vm.expectRevert(abi.encodeWithSelector(IStakingVault.StakingVaultExceedsReserveSurplus.selector, 1, 0));
        vault.releaseReserveSurplus(TREASURY, 1);

        // At 20 % coverage the 200 out need 40: 10 can leave.
        vault.setInsuranceCoverage(2_000);
        assertEq(vault.reserveSurplus(), 10 * USDC);
        uint256 assets = vault.totalAssets();
        vm.expectEmit(address(vault));
        emit IStakingVault.StakingVaultReserveSurplusReleased(TREASURY, 10 * USDC);
        vault.releaseReserveSurplus(TREASURY, 10 * USDC);
        assertEq(usdc.balanceOf(TREASURY), 10 * USDC, "the treasury received it");
        assertEq(vault.insuranceReserve(), 40 * USDC, "what covers the loans out stays");
        assertEq(vault.totalAssets(), assets, "the depositors' assets did not move");
        assertEq(vault.reserveSurplus(), 0);
    }

    function test_theImpairedLoansCoversStay() public {
        vault.setInsuranceCoverage(2_000);
        vm.warp(block.timestamp + 30 days + 1);
        book.markOverdue(3); // counts on 20 % of its 200: 40
        vault.setInsuranceCoverage(0);
        assertEq(vault.reserveSurplus(), 10 * USDC, "the 40 the impaired loan counts on stay");
    }

    function test_onlyTheAdminReleasesToANonZeroAddress() public {
        vault.setInsuranceCoverage(0);
        vm.prank(DEPOSITOR);
        vm.expectRevert();
        vault.releaseReserveSurplus(DEPOSITOR, 1);
        vm.expectRevert(IStakingVault.StakingVaultZeroAddress.selector);
        vault.releaseReserveSurplus(address(0), 1);
        vm.expectRevert(IStakingVault.StakingVaultZeroAmount.selector);
        vault.releaseReserveSurplus(TREASURY, 0);
    }
}
