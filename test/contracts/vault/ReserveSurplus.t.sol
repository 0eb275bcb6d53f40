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
        // Two loans repaid leave their 50 USDC fees in the reserve.
        for (uint256 i; i < 2; ++i) {
            uint256 loanId = book.fundLoan(keccak256(abi.encode("repaid", i)), BORROWER, 500 * USDC, 0, 25 * USDC, 30);
            usdc.mint(address(this), 500 * USDC);
            book.repay(loanId, 500 * USDC);
        }
    }

    function test_theSurplusLeavesToTheTreasuryAndNoMore() public {
        // 80 % of a 200 loan out is 160, more than the 50 held: no surplus.
        book.fundLoan("out", BORROWER, 200 * USDC, 0, 0, 30);
        assertEq(vault.insuranceReserve(), 50 * USDC);
        assertEq(vault.reserveSurplus(), 0);
        vm.expectRevert(abi.encodeWithSelector(IStakingVault.StakingVaultExceedsReserveSurplus.selector, 1, 0));
        vault.releaseReserveSurplus(TREASURY, 1);
        usdc.mint(address(this), 200 * USDC);
        book.repay(3, 200 * USDC);

        // A loan funded at 20 % coverage needs 40 of the 50: 10 can leave.
        vault.setInsuranceCoverage(2_000);
        book.fundLoan("out at 20 %", BORROWER, 200 * USDC, 0, 0, 30);
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

    /// Issue #43 item 2 (D-100): a loan keeps the coverage it was funded with. Before, lowering the coverage freed
    /// the reserve that covered the loans already out (and an impairment took the new, lower cover).
    function test_aLoanKeepsItsCoverage() public {
        vault.setInsuranceCoverage(2_000);
        book.fundLoan("out at 20 %", BORROWER, 200 * USDC, 0, 0, 30);
        vault.setInsuranceCoverage(0);
        assertEq(vault.reserveSurplus(), 10 * USDC, "the 40 the loan out counts on stay");
        vault.setInsuranceCoverage(10_000);
        assertEq(vault.reserveSurplus(), 10 * USDC, "and a higher coverage asks no more of it");
        vm.warp(block.timestamp + 30 days + 1);
        book.markOverdue(3);
        (,, uint256 cover,) = vault.impairmentOf(3);
        assertEq(cover, 40 * USDC, "impaired at its own 20 %");
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
