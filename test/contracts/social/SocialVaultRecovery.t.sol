// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TestBase} from "../lib/TestBase.sol";
import {MockUSDC} from "../../../contracts/mocks/MockUSDC.sol";
import {ISocialVault} from "../../../contracts/interfaces/ISocialVault.sol";
import {ISocialVaultFactory} from "../../../contracts/interfaces/ISocialVaultFactory.sol";
import {SocialVault} from "../../../contracts/social/SocialVault.sol";
import {SocialVaultFactory} from "../../../contracts/social/SocialVaultFactory.sol";
import {TrustMintForwarder} from "../../../contracts/metatx/TrustMintForwarder.sol";

/// Issue "The pool's depositors are safe on chain", item 6 (D-106): the guardians replace a lost or stolen owner key,
/// Argent's way. Before, a stolen key could not be replaced and could unlock the vault alone after 30 days; each test
/// plays the thief who holds the owner's key.
contract SocialVaultRecoveryTest is TestBase {
    uint256 internal constant TIMELOCK = 1 days;
    uint256 internal constant FUNDS = 10_000e6;

    address internal constant OWNER = address(0xA11CE);
    address internal constant NEW_OWNER = address(0xA11CE2);
    address internal constant G1 = address(0x6001);
    address internal constant G2 = address(0x6002);
    address internal constant G3 = address(0x6003);
    address internal constant STRANGER = address(0xBAD);

    MockUSDC internal usdc;
    SocialVaultFactory internal factory;
    SocialVault internal vault;

    function setUp() public {
        usdc = new MockUSDC(address(this));
        factory = new SocialVaultFactory(usdc, address(new TrustMintForwarder()));
        vm.prank(OWNER);
        vault = SocialVault(factory.createVault(1_000e6, TIMELOCK, 2, bytes32(0)));
        vm.startPrank(OWNER);
        vault.addGuardian(G1);
        vault.addGuardian(G2);
        vault.addGuardian(G3);
        vm.stopPrank();
        usdc.mint(address(vault), FUNDS);
        vm.warp(block.timestamp + TIMELOCK);
    }

    function _approve(address guardian, address newOwner) internal {
        vm.prank(guardian);
        vault.approveRecovery(newOwner);
    }

    function test_theGuardiansReplaceAStolenOwnerKey() public {
        assertEq(vault.recoveryApprovalOf(G1), address(0));
        _approve(G1, NEW_OWNER);
        (address pending,,,) = vault.pendingRecovery();
        assertEq(pending, address(0), "one of three guardians starts nothing");
        assertTrue(!vault.isLocked(), "unlocked");
        assertEq(vault.recoveryApprovalOf(G1), NEW_OWNER);

        vm.expectEmit(address(vault));
        emit ISocialVault.SocialVaultRecoveryStarted(NEW_OWNER, block.timestamp + TIMELOCK);
        _approve(G2, NEW_OWNER);
        (address newOwner, uint256 executableAt,,) = vault.pendingRecovery();
        assertEq(newOwner, NEW_OWNER);
        assertEq(executableAt, block.timestamp + TIMELOCK);
        assertTrue(vault.isLocked(), "the stolen key can move nothing while the recovery waits");

        vm.prank(OWNER);
        vm.expectRevert(abi.encodeWithSelector(ISocialVault.SocialVaultIsLocked.selector, block.timestamp));
        vault.withdraw(1e6, OWNER);
        vm.expectRevert(abi.encodeWithSelector(ISocialVault.SocialVaultTimelockActive.selector, executableAt));
        vault.finalizeRecovery();

        vm.warp(executableAt);
        vm.expectEmit(address(vault));
        emit ISocialVault.SocialVaultRecovered(OWNER, NEW_OWNER);
        vm.prank(STRANGER);
        vault.finalizeRecovery();

        assertEq(vault.owner(), NEW_OWNER);
        assertTrue(!vault.isLocked(), "two approvals meet the two an unlock requires");
        assertEq(factory.vaultOf(NEW_OWNER), address(vault), "the factory follows the owner");
        assertEq(factory.vaultOf(OWNER), address(0));
        assertEq(vault.recoveryApprovalOf(G1), address(0), "approvals are spent");

        vm.prank(OWNER);
        vm.expectRevert(abi.encodeWithSelector(ISocialVault.SocialVaultUnauthorizedAccount.selector, OWNER));
        vault.withdraw(1e6, OWNER);
        vm.prank(NEW_OWNER);
        vault.withdraw(1_000e6, NEW_OWNER);
        assertEq(usdc.balanceOf(NEW_OWNER), 1_000e6);
        assertEq(vault.guardianCount(), 3, "the guardians stay");
    }

    /// The recovery closes what the stolen key queued: open requests and submitted changes.
    function test_aStartedRecoveryClosesWhatTheKeyQueued() public {
        vm.startPrank(OWNER);
        uint256 id = vault.requestWithdrawal(5_000e6, OWNER);
        vault.setTimelockDuration(1 hours);
        vm.stopPrank();
        vm.prank(G3);
        vault.approveWithdrawal(id);

        _approve(G1, NEW_OWNER);
        _approve(G2, NEW_OWNER);

        assertEq(uint256(vault.getWithdrawal(id).status), uint256(ISocialVault.WithdrawalStatus.Cancelled));
        (, uint256 validAt) = vault.pendingConfigChange(ISocialVault.ConfigParameter.TimelockDuration);
        assertEq(validAt, 0, "the shorter timelock was revoked");
    }

    function test_theOldKeyAloneCannotStopTheRecovery() public {
        _approve(G1, NEW_OWNER);
        _approve(G2, NEW_OWNER);

        vm.expectEmit(address(vault));
        emit ISocialVault.SocialVaultRecoveryObjected(OWNER);
        vm.prank(OWNER);
        vault.cancelRecovery();
        vm.prank(OWNER);
        vm.expectRevert(abi.encodeWithSelector(ISocialVault.SocialVaultRecoveryAlreadyVoted.selector, OWNER));
        vault.cancelRecovery();
        (address newOwner,, bool ownerObjected, uint256 guardianObjections) = vault.pendingRecovery();
        assertEq(newOwner, NEW_OWNER, "still pending");
        assertTrue(ownerObjected, "the owner objected");
        assertEq(guardianObjections, 0);

        // A stranger's objection does not count.
        vm.prank(STRANGER);
        vm.expectRevert(abi.encodeWithSelector(ISocialVault.SocialVaultNotGuardian.selector, STRANGER));
        vault.cancelRecovery();

        vm.warp(block.timestamp + TIMELOCK);
        vault.finalizeRecovery();
        assertEq(vault.owner(), NEW_OWNER);
    }

    /// With a guardian's consent the old key cancels; the guardians can start again, with a new timelock: a delay.
    function test_theOldKeyDelaysOnlyWithAGuardiansConsent() public {
        _approve(G1, NEW_OWNER);
        _approve(G2, NEW_OWNER);
        vm.prank(G3);
        vault.cancelRecovery();
        (address newOwner,,, uint256 guardianObjections) = vault.pendingRecovery();
        assertEq(newOwner, NEW_OWNER, "a guardian alone cannot stop the others either");
        assertEq(guardianObjections, 1);

        vm.warp(block.timestamp + TIMELOCK / 2);
        vm.expectEmit(address(vault));
        emit ISocialVault.SocialVaultRecoveryCancelled(NEW_OWNER);
        vm.prank(OWNER);
        vault.cancelRecovery();
        (newOwner,,,) = vault.pendingRecovery();
        assertEq(newOwner, address(0));
        assertEq(vault.recoveryApprovalOf(G1), address(0), "every approval is cleared");
        assertTrue(vault.isLocked(), "the lock stays: leaving it takes the unlock's own rules");
        vm.expectRevert(ISocialVault.SocialVaultNoRecovery.selector);
        vault.finalizeRecovery();

        _approve(G1, NEW_OWNER);
        _approve(G2, NEW_OWNER);
        (, uint256 executableAt,,) = vault.pendingRecovery();
        assertEq(executableAt, block.timestamp + TIMELOCK, "a new timelock from the new start");
    }

    /// Before: a thief with the owner's key asked for an unlock and unlocked alone 30 days later.
    function test_theOldKeyCannotUnlockAloneWhileRecovering() public {
        vm.prank(G3);
        vault.lock();
        vm.prank(OWNER);
        vault.requestUnlock();
        _approve(G1, NEW_OWNER);
        _approve(G2, NEW_OWNER);
        (, uint256 executableAt,,) = vault.pendingRecovery();

        vm.warp(block.timestamp + 30 days);
        vm.prank(OWNER);
        vm.expectRevert(abi.encodeWithSelector(ISocialVault.SocialVaultRecoveryPending.selector, NEW_OWNER, executableAt));
        vault.unlock();
    }

    /// The thief raises the approvals required at once (a risk-lowering change); the recovery still needs only a
    /// majority, and the vault then stays locked until the unlock's own approvals (or the new owner's 30 days).
    function test_raisingTheApprovalsRequiredDoesNotBlockARecovery() public {
        vm.prank(OWNER);
        vault.setRequiredSignatures(3);
        assertEq(vault.requiredSignatures(), 3);

        _approve(G1, NEW_OWNER);
        _approve(G2, NEW_OWNER);
        vm.warp(block.timestamp + TIMELOCK);
        vault.finalizeRecovery();
        assertEq(vault.owner(), NEW_OWNER);
        assertTrue(vault.isLocked(), "two approvals do not meet the three an unlock requires");

        vm.prank(NEW_OWNER);
        vault.requestUnlock();
        vm.prank(G1);
        vault.approveUnlock();
        vm.prank(G2);
        vault.approveUnlock();
        vm.prank(G3);
        vault.approveUnlock();
        vm.warp(block.timestamp + TIMELOCK);
        vm.prank(NEW_OWNER);
        vault.unlock();
        assertTrue(!vault.isLocked(), "unlocked");
    }

    /// A guardian backs one address at a time; a majority for another address replaces the pending recovery.
    function test_aMajorityForAnotherAddressReplacesThePendingRecovery() public {
        address other = address(0xA11CE3);
        _approve(G1, NEW_OWNER);
        _approve(G2, NEW_OWNER);
        vm.prank(G1);
        vm.expectRevert(abi.encodeWithSelector(ISocialVault.SocialVaultRecoveryAlreadyVoted.selector, G1));
        vault.approveRecovery(NEW_OWNER);

        vm.warp(block.timestamp + TIMELOCK / 2);
        _approve(G1, other);
        (address newOwner,,,) = vault.pendingRecovery();
        assertEq(newOwner, NEW_OWNER, "one moved approval does not replace it");
        _approve(G3, other);
        uint256 executableAt;
        (newOwner, executableAt,,) = vault.pendingRecovery();
        assertEq(newOwner, other);
        assertEq(executableAt, block.timestamp + TIMELOCK);

        vm.warp(executableAt);
        vault.finalizeRecovery();
        assertEq(vault.owner(), other);
    }

    /// A removed guardian's approval leaves with it: a later guardian at the same index does not inherit it.
    function test_aRemovedGuardiansApprovalIsForgotten() public {
        _approve(G1, NEW_OWNER);
        vm.prank(OWNER);
        vault.removeGuardian(G1);
        vm.warp(block.timestamp + TIMELOCK);
        vault.acceptGuardianRemoval(G1);
        address g4 = address(0x6004);
        vm.prank(OWNER);
        vault.addGuardian(g4);
        vm.warp(block.timestamp + TIMELOCK);
        assertEq(vault.recoveryApprovalOf(g4), address(0));

        _approve(G2, NEW_OWNER);
        (address newOwner,,,) = vault.pendingRecovery();
        assertEq(newOwner, address(0), "one approval of three guardians");
        _approve(g4, NEW_OWNER);
        (newOwner,,,) = vault.pendingRecovery();
        assertEq(newOwner, NEW_OWNER);
    }

    function test_onlyActiveGuardiansApproveAValidNewOwner() public {
        vm.prank(STRANGER);
        vm.expectRevert(abi.encodeWithSelector(ISocialVault.SocialVaultNotGuardian.selector, STRANGER));
        vault.approveRecovery(NEW_OWNER);
        vm.prank(OWNER);
        vm.expectRevert(abi.encodeWithSelector(ISocialVault.SocialVaultNotGuardian.selector, OWNER));
        vault.approveRecovery(NEW_OWNER);

        address[4] memory invalid = [address(0), address(vault), OWNER, G3];
        for (uint256 i; i < invalid.length; ++i) {
            vm.prank(G1);
            vm.expectRevert(abi.encodeWithSelector(ISocialVault.SocialVaultInvalidNewOwner.selector, invalid[i]));
            vault.approveRecovery(invalid[i]);
        }
    }

    /// The owner of another vault cannot receive this one (one vault per owner); the guardians name another address.
    function test_anOwnerOfAVaultCannotReceiveAnother() public {
        vm.prank(NEW_OWNER);
        address its = factory.createVault(1_000e6, TIMELOCK, 1, bytes32(0));
        _approve(G1, NEW_OWNER);
        _approve(G2, NEW_OWNER);
        vm.warp(block.timestamp + TIMELOCK);
        vm.expectRevert(
            abi.encodeWithSelector(ISocialVaultFactory.SocialVaultFactoryVaultExists.selector, NEW_OWNER, its)
        );
        vault.finalizeRecovery();

        address other = address(0xA11CE3);
        _approve(G1, other);
        _approve(G2, other);
        vm.warp(block.timestamp + TIMELOCK);
        vault.finalizeRecovery();
        assertEq(vault.owner(), other);
    }

    /// An owner whose vault a recovery moved cannot create another (its derived address is taken), and only a vault
    /// can move its own record in the factory.
    function test_theFactoryRecordMovesOnlyWithItsVault() public {
        vm.prank(STRANGER);
        vm.expectRevert(
            abi.encodeWithSelector(ISocialVaultFactory.SocialVaultFactoryUnauthorizedVault.selector, STRANGER)
        );
        factory.moveVault(OWNER, STRANGER);

        _approve(G1, NEW_OWNER);
        _approve(G2, NEW_OWNER);
        vm.warp(block.timestamp + TIMELOCK);
        vault.finalizeRecovery();

        vm.prank(OWNER);
        vm.expectRevert(
            abi.encodeWithSelector(ISocialVaultFactory.SocialVaultFactoryVaultExists.selector, OWNER, address(vault))
        );
        factory.createVault(1_000e6, TIMELOCK, 1, bytes32(0));
    }
}
