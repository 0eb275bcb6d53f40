// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IAccessControl} from "@openzeppelin/contracts/access/IAccessControl.sol";
import {TimelockController} from "@openzeppelin/contracts/governance/TimelockController.sol";
import {ILoanBook} from "../../../contracts/interfaces/ILoanBook.sol";
import {IPaymentRouter} from "../../../contracts/interfaces/IPaymentRouter.sol";
import {IInterestRateModel} from "../../../contracts/interfaces/IInterestRateModel.sol";
import {IStakingVault} from "../../../contracts/interfaces/IStakingVault.sol";
import {PlatformTimelock} from "../../../contracts/governance/PlatformTimelock.sol";
import {PlatformSetup} from "./PlatformSetup.sol";

/// Issue #43 item 2 (D-100): roles that match the risks. The review moved 1,000,000 idle USDC to the service's online
/// key in two calls (it was every contract's admin: grant itself the vault's LENDER_ROLE, then `lend` to itself).
/// Now the online key operates and nothing else; every admin power waits the timelock's delay.
contract OnlineKeyTest is PlatformSetup {
    address internal constant DEPOSITOR = address(0xD0);
    address internal constant BORROWER = address(0xB0AA0);
    address internal constant MERCHANT = address(0x3E5C4A);

    function setUp() public {
        _deployPlatform();
        _depositAs(DEPOSITOR, 1_000_000 * USDC);
    }

    function _unauthorized(address account, bytes32 role) internal pure returns (bytes memory) {
        return abi.encodeWithSelector(IAccessControl.AccessControlUnauthorizedAccount.selector, account, role);
    }

    function test_theReviewsTwoCallsNoLongerMoveThePool() public {
        bytes32 lender = vault.LENDER_ROLE();
        vm.prank(ONLINE_KEY);
        vm.expectRevert(_unauthorized(ONLINE_KEY, bytes32(0)));
        vault.grantRole(lender, ONLINE_KEY);
        vm.prank(ONLINE_KEY);
        vm.expectRevert(_unauthorized(ONLINE_KEY, lender));
        vault.lend(1, ONLINE_KEY, 1_000_000 * USDC, 0, 0, block.timestamp + 30 days, 0);
        assertEq(usdc.balanceOf(address(vault)), 1_000_000 * USDC, "the pool's USDC stays");
        assertEq(usdc.balanceOf(ONLINE_KEY), 0);
    }

    function test_theOnlineKeyChangesNoParameterAndGrantsNoRole() public {
        bytes32 admin = bytes32(0);
        uint256[5] memory rates;
        ILoanBook.LoanLimits memory limits = book.limits();
        bytes[] memory calls = new bytes[](10);
        address[] memory targets = new address[](10);
        (targets[0], calls[0]) = (address(vault), abi.encodeCall(IStakingVault.setInterestRateModel, (model)));
        (targets[1], calls[1]) = (address(vault), abi.encodeCall(IStakingVault.setInsuranceCoverage, (0)));
        (targets[2], calls[2]) = (address(vault), abi.encodeCall(IStakingVault.setMinDeposit, (0)));
        (targets[3], calls[3]) = (address(vault), abi.encodeCall(IStakingVault.setProfitUnlockPeriod, (0)));
        (targets[4], calls[4]) = (address(vault), abi.encodeCall(IStakingVault.releaseReserveSurplus, (ONLINE_KEY, 1)));
        (targets[5], calls[5]) = (address(model), abi.encodeCall(IInterestRateModel.setBorrowRates, (rates)));
        (targets[6], calls[6]) = (address(model), abi.encodeCall(IInterestRateModel.setReserveFactor, (0)));
        (targets[7], calls[7]) = (address(book), abi.encodeCall(ILoanBook.setLimits, (limits)));
        (targets[8], calls[8]) = (address(router), abi.encodeCall(IPaymentRouter.setFee, (0, ONLINE_KEY)));
        (targets[9], calls[9]) = (address(book), abi.encodeCall(IAccessControl.grantRole, (admin, ONLINE_KEY)));
        for (uint256 i; i < calls.length; ++i) {
            vm.prank(ONLINE_KEY);
            (bool ok, bytes memory reason) = targets[i].call(calls[i]);
            assertTrue(!ok, "an admin call from the online key went through");
            assertTrue(keccak256(reason) == keccak256(_unauthorized(ONLINE_KEY, admin)), "refused for the admin role");
        }
        IAccessControl[4] memory administered = _administered();
        for (uint256 i; i < administered.length; ++i) {
            assertTrue(administered[i].hasRole(admin, address(timelock)), "the timelock administers");
            assertTrue(!administered[i].hasRole(admin, ONLINE_KEY), "the online key does not");
            assertTrue(!administered[i].hasRole(admin, address(this)), "the deployer gave it up");
        }
        // Nor can it propose through the timelock.
        bytes32 proposer = timelock.PROPOSER_ROLE();
        vm.prank(ONLINE_KEY);
        vm.expectRevert(_unauthorized(ONLINE_KEY, proposer));
        timelock.schedule(address(vault), 0, calls[1], bytes32(0), bytes32(0), DELAY);
    }

    function test_anAdminChangeWaitsTheDelayInPublic() public {
        bytes memory data = abi.encodeCall(IStakingVault.setInsuranceCoverage, (5_000));
        bytes32 id = timelock.hashOperation(address(vault), 0, data, bytes32(0), bytes32(0));
        vm.expectEmit(address(timelock));
        emit TimelockController.CallScheduled(id, 0, address(vault), 0, data, bytes32(0), DELAY);
        vm.prank(ADMIN_KEY);
        timelock.schedule(address(vault), 0, data, bytes32(0), bytes32(0), DELAY);
        // A shorter delay is refused, and so is running it early.
        vm.prank(ADMIN_KEY);
        vm.expectRevert(abi.encodeWithSelector(TimelockController.TimelockInsufficientDelay.selector, DELAY - 1, DELAY));
        timelock.schedule(address(vault), 0, data, bytes32(0), bytes32("other"), DELAY - 1);
        vm.warp(block.timestamp + DELAY - 1);
        vm.prank(ADMIN_KEY);
        vm.expectRevert();
        timelock.execute(address(vault), 0, data, bytes32(0), bytes32(0));
        assertEq(vault.insuranceCoverageBps(), 8_000);
        vm.warp(block.timestamp + 1);
        vm.prank(ADMIN_KEY);
        timelock.execute(address(vault), 0, data, bytes32(0), bytes32(0));
        assertEq(vault.insuranceCoverageBps(), 5_000, "applied once the delay passed");
    }

    function test_theTimelockAdministersItself() public {
        assertTrue(timelock.hasRole(bytes32(0), address(timelock)), "its own admin");
        assertTrue(!timelock.hasRole(bytes32(0), address(this)), "not the deployer's");
        assertTrue(timelock.hasRole(timelock.PROPOSER_ROLE(), ADMIN_KEY), "the admin key proposes");
        assertTrue(timelock.hasRole(timelock.EXECUTOR_ROLE(), ADMIN_KEY), "and executes");
        assertTrue(!timelock.hasRole(timelock.EXECUTOR_ROLE(), address(0)), "execution is not open");
        // The delay changes only through the timelock.
        vm.prank(ADMIN_KEY);
        vm.expectRevert(abi.encodeWithSelector(TimelockController.TimelockUnauthorizedCaller.selector, ADMIN_KEY));
        timelock.updateDelay(0);
        _throughTimelock(address(timelock), abi.encodeCall(TimelockController.updateDelay, (3 days)));
        assertEq(timelock.getMinDelay(), 3 days);
        vm.expectRevert(PlatformTimelock.PlatformTimelockZeroAddress.selector);
        new PlatformTimelock(DELAY, address(0));
    }

    /// The online key keeps the operational calls: loans within the book's limits, yield, pause, purchases.
    function test_theOnlineKeyStillOperatesWithinTheLimits() public {
        vm.startPrank(ONLINE_KEY);
        vm.expectRevert(abi.encodeWithSelector(ILoanBook.LoanBookInvalidPrincipal.selector, 501 * USDC, 500 * USDC));
        book.fundLoan("too big", BORROWER, 501 * USDC, 0, 0, 30);
        book.fundLoan("loan", BORROWER, 500 * USDC, 25 * USDC, 50 * USDC, 30);
        book.extend(1, 10, 5 * USDC);
        IPaymentRouter.Installment[] memory installments = new IPaymentRouter.Installment[](1);
        installments[0] = IPaymentRouter.Installment("purchase", 100 * USDC, 100 * USDC, 5 * USDC, 2 * USDC, 30);
        router.payWithLoans("order", MERCHANT, BORROWER, installments);
        vault.pause();
        // A pause is a fast brake; lifting it waits the timelock, so a thief of this key cannot undo a defender's.
        vm.expectRevert(
            abi.encodeWithSelector(IAccessControl.AccessControlUnauthorizedAccount.selector, ONLINE_KEY, bytes32(0))
        );
        vault.unpause();
        vm.stopPrank();
        vm.prank(address(timelock));
        vault.unpause();
        usdc.mint(ONLINE_KEY, 10 * USDC);
        vm.startPrank(ONLINE_KEY);
        usdc.approve(address(vault), 10 * USDC);
        vault.distributeYield(10 * USDC);
        vm.stopPrank();
        assertEq(book.loanCount(), 2);
        assertEq(usdc.balanceOf(MERCHANT), 98 * USDC);
    }
}
