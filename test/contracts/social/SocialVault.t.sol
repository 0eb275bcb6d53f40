// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TestBase} from "../lib/TestBase.sol";
import {MockUSDC} from "../../../contracts/mocks/MockUSDC.sol";
import {ISocialVault} from "../../../contracts/interfaces/ISocialVault.sol";
import {SocialVault} from "../../../contracts/social/SocialVault.sol";
import {SocialVaultFactory} from "../../../contracts/social/SocialVaultFactory.sol";
import {TrustMintForwarder} from "../../../contracts/metatx/TrustMintForwarder.sol";

/// @notice A smart-account guardian (ERC-1271) that approves the digests it was told to.
contract SmartAccountGuardian {
    mapping(bytes32 digest => bool) public approved;

    function approveDigest(bytes32 digest) external {
        approved[digest] = true;
    }

    function isValidSignature(bytes32 digest, bytes calldata) external view returns (bytes4) {
        return approved[digest] ? this.isValidSignature.selector : bytes4(0xffffffff);
    }

    function approveOnChain(ISocialVault vault, uint256 id) external {
        vault.approveWithdrawal(id);
    }
}

/// @notice Fuzz tests of the social vault's arithmetic and time rules (flows and events: SocialVault.test.ts).
contract SocialVaultFuzzTest is TestBase {
    uint256 internal constant START = 1_700_000_000;
    uint256 internal constant LIMIT = 1_000e6;
    uint256 internal constant TIMELOCK = 1 hours;
    bytes32 internal constant DURESS_KEY = keccak256("hmac(server secret, vault || pin)");

    address internal constant OWNER = address(0xA11CE);
    address internal constant G1 = address(0x6001);
    address internal constant G2 = address(0x6002);
    address internal constant G3 = address(0x6003);
    address internal constant RECIPIENT = address(0xB0B);
    address internal constant STRANGER = address(0xBAD);

    MockUSDC internal usdc;
    SocialVaultFactory internal factory;
    SocialVault internal vault;

    function setUp() public {
        vm.warp(START);
        usdc = new MockUSDC(address(this));
        factory = new SocialVaultFactory(usdc, address(new TrustMintForwarder()));
        vm.prank(OWNER);
        vault = SocialVault(factory.createVault(LIMIT, TIMELOCK, 2, keccak256(abi.encode(DURESS_KEY))));
        vm.startPrank(OWNER);
        vault.addGuardian(G1);
        vault.addGuardian(G2);
        vault.addGuardian(G3);
        vm.stopPrank();
        vm.warp(START + TIMELOCK);
        usdc.mint(address(this), 1_000_000e6);
        usdc.approve(address(vault), type(uint256).max);
        vault.deposit(1_000_000e6);
    }

    /// The instant-withdrawal limit matches a reference model of a rolling 24 hours (D-105): what the last 24 hours'
    /// withdrawals add up to, three remembered one by one, more added to the latest one from its time.
    function testFuzz_dailyWindowMatchesModel(uint256[12] memory amounts, uint256[12] memory waits) public {
        uint256[3] memory spentAmount;
        uint256[3] memory spentAt;
        for (uint256 i; i < amounts.length; ++i) {
            vm.warp(block.timestamp + bound(waits[i], 0, 14 hours));
            uint256 amount = bound(amounts[i], 1, LIMIT / 2);
            uint256 spent;
            uint256 latest;
            uint256 free = 3;
            for (uint256 k; k < 3; ++k) {
                bool live = spentAmount[k] != 0 && spentAt[k] + 1 days > block.timestamp;
                if (live) spent += spentAmount[k];
                else if (free == 3) free = k;
                if (free == 3 && spentAt[k] >= spentAt[latest]) latest = k;
            }
            uint256 remaining = LIMIT - spent;
            assertEq(vault.remainingDailyLimit(), remaining, "remaining before");

            if (amount > remaining) {
                vm.expectRevert(
                    abi.encodeWithSelector(ISocialVault.SocialVaultDailyLimitExceeded.selector, amount, remaining)
                );
                vm.prank(OWNER);
                vault.withdraw(amount, RECIPIENT);
                continue;
            }
            vm.prank(OWNER);
            vault.withdraw(amount, RECIPIENT);
            if (free < 3) (spentAmount[free], spentAt[free]) = (amount, block.timestamp);
            else (spentAmount[latest], spentAt[latest]) = (spentAmount[latest] + amount, block.timestamp);
            (uint256 viewSpent,, uint256 resetsAt) = vault.dailyWindow();
            assertEq(viewSpent, spent + amount, "spent");
            assertEq(resetsAt, block.timestamp + 1 days, "whole again a day after the latest");
        }
    }

    /// Before (D-105): the window was fixed, so the limit left at its end and the whole limit again right after it.
    function test_theLimitHoldsOverAnyTwentyFourHours() public {
        vm.prank(OWNER);
        vault.withdraw(1, RECIPIENT); // opens the old fixed window
        vm.warp(block.timestamp + 1 days - 60);
        vm.prank(OWNER);
        vault.withdraw(LIMIT - 1, RECIPIENT);
        vm.warp(block.timestamp + 120);
        // The first micro-USDC has left the 24 hours; the rest of the limit was spent two minutes ago.
        assertEq(vault.remainingDailyLimit(), 1);
        vm.prank(OWNER);
        vm.expectRevert(abi.encodeWithSelector(ISocialVault.SocialVaultDailyLimitExceeded.selector, LIMIT, 1));
        vault.withdraw(LIMIT, RECIPIENT);
        vm.warp(block.timestamp + 1 days - 120);
        assertEq(vault.remainingDailyLimit(), LIMIT, "whole a day after the last withdrawal");
    }

    /// Never pays more than the balance: a withdrawal above the balance reverts with the balance and the need.
    function testFuzz_instantWithdrawalNeverExceedsBalance(uint256 drain, uint256 amount) public {
        drain = bound(drain, 0, usdc.balanceOf(address(vault)));
        vm.prank(address(vault));
        usdc.transfer(STRANGER, drain); // shrink the balance behind the vault's back
        uint256 balance = usdc.balanceOf(address(vault));
        amount = bound(amount, 1, LIMIT);
        if (amount > balance) {
            vm.expectRevert(
                abi.encodeWithSelector(ISocialVault.SocialVaultInsufficientBalance.selector, balance, amount)
            );
        }
        vm.prank(OWNER);
        vault.withdraw(amount, RECIPIENT);
        assertLe(usdc.balanceOf(RECIPIENT), balance, "paid at most the balance");
    }

    /// A request is executable exactly in [executeAfter, expiresAt] once approved, for any timelock.
    function testFuzz_requestTimeWindow(uint256 timelock, uint96 amount, uint256 early, uint256 late) public {
        timelock = bound(timelock, 1 hours, 7 days);
        amount = uint96(bound(amount, 1, 1_000_000e6));
        vm.prank(OWNER);
        vault.setTimelockDuration(timelock); // lengthening applies at once
        uint256 requestedAt = block.timestamp;
        vm.prank(OWNER);
        uint256 id = vault.requestWithdrawal(amount, RECIPIENT);
        ISocialVault.Withdrawal memory w = vault.getWithdrawal(id);
        assertEq(w.executeAfter, requestedAt + vault.timelockDuration(), "executeAfter");
        assertEq(w.expiresAt, w.executeAfter + 7 days, "expiresAt");
        vm.prank(G1);
        vault.approveWithdrawal(id);
        vm.prank(G2);
        vault.approveWithdrawal(id);

        vm.warp(bound(early, requestedAt, w.executeAfter - 1));
        vm.expectRevert(abi.encodeWithSelector(ISocialVault.SocialVaultTimelockActive.selector, w.executeAfter));
        vault.executeWithdrawal(id);

        uint256 snapshotTime = bound(late, w.executeAfter, w.expiresAt + 30 days);
        vm.warp(snapshotTime);
        if (snapshotTime > w.expiresAt) {
            vm.expectRevert(
                abi.encodeWithSelector(ISocialVault.SocialVaultWithdrawalPastExpiry.selector, id, w.expiresAt)
            );
            vault.executeWithdrawal(id);
        } else {
            vault.executeWithdrawal(id);
            assertEq(usdc.balanceOf(RECIPIENT), amount, "paid");
        }
    }

    /// Approvals below the requirement never execute, whatever the time.
    function testFuzz_unapprovedNeverExecutes(uint256 wait, bool oneApproval) public {
        vm.prank(OWNER);
        uint256 id = vault.requestWithdrawal(5_000e6, RECIPIENT);
        if (oneApproval) {
            vm.prank(G3);
            vault.approveWithdrawal(id);
        }
        ISocialVault.Withdrawal memory w = vault.getWithdrawal(id);
        vm.warp(bound(wait, block.timestamp, w.expiresAt));
        vm.expectRevert(
            abi.encodeWithSelector(
                ISocialVault.SocialVaultWithdrawalNotApproved.selector, id, oneApproval ? 1 : 0, 2
            )
        );
        vault.executeWithdrawal(id);
    }

    /// The timelock accepts exactly [3600, 604800].
    function testFuzz_timelockBounds(uint256 duration) public {
        vm.prank(OWNER);
        if (duration < 1 hours || duration > 7 days) {
            vm.expectRevert(
                abi.encodeWithSelector(
                    ISocialVault.SocialVaultInvalidTimelockDuration.selector, duration, 1 hours, 7 days
                )
            );
        }
        vault.setTimelockDuration(duration);
    }

    /// Lowering the daily limit applies at once; raising it waits for the timelock.
    function testFuzz_dailyLimitRiskRule(uint96 newLimit, uint256 wait) public {
        vm.prank(OWNER);
        vault.setDailyLimit(newLimit);
        if (newLimit <= LIMIT) {
            assertEq(vault.dailyLimit(), newLimit, "applied at once");
            return;
        }
        assertEq(vault.dailyLimit(), LIMIT, "not yet");
        (uint256 value, uint256 validAt) = vault.pendingConfigChange(ISocialVault.ConfigParameter.DailyLimit);
        assertEq(value, newLimit, "pending value");
        assertEq(validAt, block.timestamp + TIMELOCK, "validAt");
        vm.warp(bound(wait, block.timestamp, validAt + 1 days));
        if (block.timestamp < validAt) {
            vm.expectRevert(abi.encodeWithSelector(ISocialVault.SocialVaultTimelockActive.selector, validAt));
        }
        vault.acceptConfigChange(ISocialVault.ConfigParameter.DailyLimit);
        if (block.timestamp >= validAt) assertEq(vault.dailyLimit(), newLimit, "accepted");
    }

    /// A guardian is pending strictly before `activeAt` and active from it, with no transaction in between.
    function testFuzz_guardianActivatesByTime(address guardian, uint256 wait) public {
        vm.assume(guardian != address(0) && guardian != OWNER && guardian != address(vault));
        vm.assume(guardian != G1 && guardian != G2 && guardian != G3);
        vm.prank(OWNER);
        vault.addGuardian(guardian);
        uint256 activeAt = block.timestamp + TIMELOCK;
        vm.warp(bound(wait, block.timestamp, activeAt + 1 days));
        (ISocialVault.GuardianStatus status, uint256 at,) = vault.guardianInfo(guardian);
        assertEq(at, activeAt, "activeAt");
        bool active = block.timestamp >= activeAt;
        assertTrue(status == (active ? ISocialVault.GuardianStatus.Active : ISocialVault.GuardianStatus.Pending), "status");
        assertEq(vault.activeGuardianCount(), active ? 4 : 3, "active count");
    }

    /// Only the committed key locks; a wrong key never does.
    function testFuzz_duressKey(bytes32 key) public {
        if (key != DURESS_KEY) {
            vm.expectRevert(ISocialVault.SocialVaultInvalidDuressKey.selector);
            vm.prank(STRANGER);
            vault.duressLock(key);
            assertTrue(!vault.isLocked(), "still unlocked");
        }
        vm.prank(STRANGER);
        vault.duressLock(DURESS_KEY);
        assertTrue(vault.isLocked(), "locked");
        assertTrue(vault.duressCommitment() == bytes32(0), "key consumed");
    }

    /// Ids are unique and increasing, name their slot, and the ring caps open requests at 20.
    function testFuzz_idsAndRing(uint8 closeMask, uint8 extra) public {
        uint256 last;
        uint256[] memory ids = new uint256[](20);
        vm.startPrank(OWNER);
        for (uint256 i; i < 20; ++i) {
            ids[i] = vault.requestWithdrawal(1e6, RECIPIENT);
            assertGe(ids[i], last + 1, "increasing");
            assertEq(ids[i] % 100, i, "slot");
            last = ids[i];
        }
        vm.expectRevert(abi.encodeWithSelector(ISocialVault.SocialVaultTooManyOpenWithdrawals.selector, 20));
        vault.requestWithdrawal(1e6, RECIPIENT);
        // Cancel some, then new requests take the lowest freed slots.
        uint256 freed;
        for (uint256 i; i < 8; ++i) {
            if (closeMask & (1 << i) != 0) {
                vault.cancelWithdrawal(ids[i]);
                ++freed;
            }
        }
        uint256 count = bound(extra, 0, freed);
        uint256 lowestFree;
        for (uint256 n; n < count; ++n) {
            while (closeMask & (1 << lowestFree) == 0) ++lowestFree;
            uint256 id = vault.requestWithdrawal(1e6, RECIPIENT);
            assertGe(id, last + 1, "increasing");
            assertEq(id % 100, lowestFree, "lowest free slot");
            last = id;
            ++lowestFree;
        }
        vm.stopPrank();
        assertEq(vault.openWithdrawalIds().length, 20 - freed + count, "open count");
    }

    /// Smart-account guardians approve on-chain as `msg.sender` or by ERC-1271 signature.
    function testFuzz_smartAccountGuardian(uint96 amount) public {
        amount = uint96(bound(amount, 1, 1_000_000e6));
        SmartAccountGuardian account = new SmartAccountGuardian();
        vm.prank(OWNER);
        vault.addGuardian(address(account));
        vm.warp(block.timestamp + TIMELOCK);
        vm.prank(OWNER);
        uint256 id = vault.requestWithdrawal(amount, RECIPIENT);

        ISocialVault.GuardianSignature[] memory sigs = new ISocialVault.GuardianSignature[](1);
        sigs[0] = ISocialVault.GuardianSignature({guardian: address(account), signature: ""});
        vm.expectRevert(abi.encodeWithSelector(ISocialVault.SocialVaultInvalidSignature.selector, address(account)));
        vault.approveWithdrawalWithSignatures(id, sigs);

        account.approveDigest(vault.withdrawalApprovalDigest(id));
        vault.approveWithdrawalWithSignatures(id, sigs);
        assertTrue(vault.hasApproved(id, address(account)), "approved by signature");

        vm.prank(OWNER);
        uint256 second = vault.requestWithdrawal(amount, RECIPIENT);
        account.approveOnChain(vault, second);
        assertTrue(vault.hasApproved(second, address(account)), "approved on-chain");
    }
}
