// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TestBase} from "../lib/TestBase.sol";
import {MockUSDC} from "../../../contracts/mocks/MockUSDC.sol";
import {ISocialVault} from "../../../contracts/interfaces/ISocialVault.sol";
import {SocialVault} from "../../../contracts/social/SocialVault.sol";
import {SocialVaultFactory} from "../../../contracts/social/SocialVaultFactory.sol";
import {TrustMintForwarder} from "../../../contracts/metatx/TrustMintForwarder.sol";

/// Issue "The pool's depositors are safe on chain", item 6, in part (D-104): a duress commitment is used once, and the
/// approvals required never exceed the guardians who can approve. Each test failed before.
contract SocialVaultRisksTest is TestBase {
    uint256 internal constant TIMELOCK = 1 hours;
    bytes32 internal constant DURESS_KEY = keccak256("hmac(server secret, vault || pin)");

    address internal constant OWNER = address(0xA11CE);
    address internal constant G1 = address(0x6001);
    address internal constant G2 = address(0x6002);
    address internal constant G3 = address(0x6003);
    address internal constant STRANGER = address(0xBAD);

    SocialVault internal vault;

    function setUp() public {
        MockUSDC usdc = new MockUSDC(address(this));
        SocialVaultFactory factory = new SocialVaultFactory(usdc, address(new TrustMintForwarder()));
        vm.prank(OWNER);
        vault = SocialVault(factory.createVault(1_000e6, TIMELOCK, 2, keccak256(abi.encode(DURESS_KEY))));
        vm.startPrank(OWNER);
        vault.addGuardian(G1);
        vault.addGuardian(G2);
        vm.stopPrank();
        vm.warp(block.timestamp + TIMELOCK);
    }

    /// Before: the owner could set the spent commitment again (the same PIN gives the same key), and anyone who had
    /// seen the key on chain could lock the vault with it again.
    function test_aDuressCommitmentIsUsedOnce() public {
        bytes32 commitment = keccak256(abi.encode(DURESS_KEY));
        vm.prank(STRANGER);
        vault.duressLock(DURESS_KEY);
        assertTrue(vault.isLocked(), "locked under duress");
        assertTrue(vault.duressCommitment() == bytes32(0), "consumed");

        vm.prank(OWNER);
        vm.expectRevert(abi.encodeWithSelector(ISocialVault.SocialVaultDuressCommitmentSpent.selector, commitment));
        vault.setDuressCommitment(commitment);
        // A new PIN's commitment is taken.
        bytes32 fresh = keccak256(abi.encode(keccak256("another pin")));
        vm.prank(OWNER);
        vault.setDuressCommitment(fresh);
        assertTrue(vault.duressCommitment() == fresh, "the new commitment");
        vm.prank(STRANGER);
        vm.expectRevert(ISocialVault.SocialVaultInvalidDuressKey.selector);
        vault.duressLock(DURESS_KEY);
    }

    /// Before: removing a guardian left two approvals required with one guardian, and no request could be approved.
    function test_removingAGuardianLowersTheRequirementToThoseLeft() public {
        assertEq(vault.requiredSignatures(), 2);
        vm.prank(OWNER);
        vault.removeGuardian(G2);
        vm.warp(block.timestamp + TIMELOCK);
        vm.expectEmit(address(vault));
        emit ISocialVault.SocialVaultConfigUpdated(ISocialVault.ConfigParameter.RequiredSignatures, 1);
        vault.acceptGuardianRemoval(G2);
        assertEq(vault.activeGuardianCount(), 1);
        assertEq(vault.requiredSignatures(), 1, "no more than the guardians who can approve");

        // The last guardian gone, one approval stays required: nothing above the daily limit can leave.
        vm.prank(OWNER);
        vault.removeGuardian(G1);
        vm.warp(block.timestamp + TIMELOCK);
        vault.acceptGuardianRemoval(G1);
        assertEq(vault.requiredSignatures(), 1);
        vm.prank(OWNER);
        vm.expectRevert(abi.encodeWithSelector(ISocialVault.SocialVaultNotEnoughGuardians.selector, 0, 1));
        vault.requestWithdrawal(2_000e6, OWNER);
    }

    /// A lowering submitted before guardians left, now above those left, is revoked with the removal.
    function test_aSubmittedRequirementAboveTheGuardiansLeftIsRevoked() public {
        vm.prank(OWNER);
        vault.addGuardian(G3);
        vm.warp(block.timestamp + TIMELOCK);
        vm.startPrank(OWNER);
        vault.setRequiredSignatures(3);
        vault.setRequiredSignatures(2); // a lowering: submitted for the timelock
        vault.removeGuardian(G2);
        vault.removeGuardian(G3);
        vm.stopPrank();
        vm.warp(block.timestamp + TIMELOCK);
        vault.acceptGuardianRemoval(G2);
        assertEq(vault.requiredSignatures(), 2, "two left, two required");
        vault.acceptGuardianRemoval(G3);
        assertEq(vault.requiredSignatures(), 1, "lowered with the removal");
        vm.expectRevert(
            abi.encodeWithSelector(ISocialVault.SocialVaultNoPendingChange.selector, ISocialVault.ConfigParameter.RequiredSignatures)
        );
        vault.acceptConfigChange(ISocialVault.ConfigParameter.RequiredSignatures);
    }

    /// Before: a guardian still pending counted, so the requirement could exceed those able to approve.
    function test_onlyActiveGuardiansCountTowardTheRequirement() public {
        vm.startPrank(OWNER);
        vault.addGuardian(G3);
        vm.expectRevert(abi.encodeWithSelector(ISocialVault.SocialVaultInvalidRequiredSignatures.selector, 3, 2));
        vault.setRequiredSignatures(3);
        vm.stopPrank();
        vm.warp(block.timestamp + TIMELOCK);
        vm.prank(OWNER);
        vault.setRequiredSignatures(3);
        assertEq(vault.requiredSignatures(), 3);
    }
}
