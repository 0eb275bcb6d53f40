// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TestBase, Vm} from "../lib/TestBase.sol";
import {MockUSDC} from "../../../contracts/mocks/MockUSDC.sol";
import {ISocialVault} from "../../../contracts/interfaces/ISocialVault.sol";
import {SocialVault} from "../../../contracts/social/SocialVault.sol";
import {SocialVaultFactory} from "../../../contracts/social/SocialVaultFactory.sol";
import {TrustMintForwarder} from "../../../contracts/metatx/TrustMintForwarder.sol";

/// @notice Drives one social vault with random actions by its owner, guardians, a pending guardian and a
/// stranger, and checks every successful call against an independent model. A success the model forbids is
/// counted in a `ghost_*` violation counter, which the invariants require to stay zero.
contract SocialVaultHandler {
    Vm internal constant vm = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    uint256 internal constant LIMIT = 1_000e6;
    uint256 internal constant TIMELOCK = 1 hours;
    uint256 internal constant REQUIRED = 2;
    bytes32 internal constant DURESS_KEY = keccak256("duress key");

    address internal constant OWNER = address(0xA11CE);
    address internal constant STRANGER = address(0xBAD);
    address internal constant RECIPIENT = address(0xB0B);
    address internal constant LATE_GUARDIAN = address(0x6004); // added late: pending for a while

    struct Request {
        uint256 amount;
        uint256 executeAfter;
        uint256 approvals;
        bool closed;
        mapping(address guardian => bool) approved;
    }

    MockUSDC public immutable usdc;
    SocialVault public immutable vault;
    address[3] internal _guardians = [address(0x6001), address(0x6002), address(0x6003)];

    uint256[] internal _ids;
    mapping(uint256 id => Request) internal _model;
    uint256 internal _lateGuardianActiveAt;
    uint256 internal _windowStart;
    uint256 internal _windowSpent;

    // Accounting.
    uint256 public ghost_deposited;
    uint256 public ghost_paidOut;
    // Violations: each must stay zero.
    uint256 public ghost_badExecutions;
    uint256 public ghost_badApprovals;
    uint256 public ghost_dailyLimitBreaches;
    uint256 public ghost_unauthorizedSuccesses;
    uint256 public ghost_openAfterLock;
    // Coverage, to see that the campaign reached the interesting states.
    uint256 public ghost_executions;
    uint256 public ghost_locks;
    uint256 public ghost_unlocks;

    constructor(MockUSDC usdc_, SocialVault vault_) {
        usdc = usdc_;
        vault = vault_;
    }

    /* ACTIONS */

    function deposit(uint256 amount) external {
        amount = _bound(amount, 1, 50_000e6);
        usdc.mint(address(this), amount);
        usdc.approve(address(vault), amount);
        vault.deposit(amount);
        ghost_deposited += amount;
    }

    function withdrawInstant(uint256 amount) external {
        amount = _bound(amount, 1, LIMIT + 100e6);
        uint256 before = usdc.balanceOf(address(vault));
        vm.prank(OWNER);
        try vault.withdraw(amount, RECIPIENT) {
            bool ended = block.timestamp >= _windowStart + 1 days;
            uint256 spent = ended ? 0 : _windowSpent;
            if (spent + amount > LIMIT || amount > before) ++ghost_dailyLimitBreaches;
            if (ended) _windowStart = block.timestamp;
            _windowSpent = spent + amount;
            ghost_paidOut += before - usdc.balanceOf(address(vault));
        } catch {}
    }

    function requestWithdrawal(uint256 amount) external {
        amount = _bound(amount, 1, 20_000e6);
        vm.prank(OWNER);
        try vault.requestWithdrawal(amount, RECIPIENT) returns (uint256 id) {
            Request storage r = _model[id];
            r.amount = amount;
            r.executeAfter = block.timestamp + TIMELOCK;
            _ids.push(id);
        } catch {}
    }

    function approveWithdrawal(uint256 idSeed, uint256 who) external {
        if (_ids.length == 0) return;
        uint256 id = _ids[idSeed % _ids.length];
        address guardian = _pickApprover(who);
        vm.prank(guardian);
        try vault.approveWithdrawal(id) {
            Request storage r = _model[id];
            bool expired = block.timestamp > r.executeAfter + 7 days;
            if (r.closed || expired || r.approved[guardian] || !_isActiveGuardian(guardian)) ++ghost_badApprovals;
            r.approved[guardian] = true;
            ++r.approvals;
        } catch {}
    }

    function executeWithdrawal(uint256 idSeed, bool byStranger) external {
        if (_ids.length == 0) return;
        uint256 id = _ids[idSeed % _ids.length];
        uint256 before = usdc.balanceOf(address(vault));
        vm.prank(byStranger ? STRANGER : OWNER); // execution is permissionless once approved
        try vault.executeWithdrawal(id) {
            Request storage r = _model[id];
            bool timelocked = block.timestamp < r.executeAfter;
            bool expired = block.timestamp > r.executeAfter + 7 days;
            if (r.closed || r.approvals < REQUIRED || timelocked || expired || r.amount > before) {
                ++ghost_badExecutions;
            }
            r.closed = true;
            ghost_paidOut += before - usdc.balanceOf(address(vault));
            ++ghost_executions;
        } catch {}
    }

    function cancelWithdrawal(uint256 idSeed) external {
        if (_ids.length == 0) return;
        uint256 id = _ids[idSeed % _ids.length];
        vm.prank(OWNER);
        try vault.cancelWithdrawal(id) {
            _model[id].closed = true;
        } catch {}
    }

    function lock(uint256 who) external {
        address caller = who % 2 == 0 ? OWNER : _guardians[who % 3];
        vm.prank(caller);
        try vault.lock() {
            _afterLock();
        } catch {}
    }

    function duressLock(bool rightKey) external {
        vm.prank(STRANGER);
        try vault.duressLock(rightKey ? DURESS_KEY : bytes32(0)) {
            if (!rightKey) ++ghost_unauthorizedSuccesses;
            _afterLock();
        } catch {}
        if (vault.duressCommitment() == bytes32(0)) {
            vm.prank(OWNER);
            vault.setDuressCommitment(keccak256(abi.encode(DURESS_KEY))); // the service derives a new key
        }
    }

    function unlockFlow(uint256 step) external {
        if (!vault.isLocked()) return;
        step %= 3;
        if (step == 0) {
            vm.prank(OWNER);
            try vault.requestUnlock() {} catch {}
        } else if (step == 1) {
            for (uint256 i; i < 3; ++i) {
                vm.prank(_guardians[i]);
                try vault.approveUnlock() {} catch {}
            }
        } else {
            try vault.unlock() {
                ++ghost_unlocks;
            } catch {}
        }
    }

    function addLateGuardian() external {
        vm.prank(OWNER);
        try vault.addGuardian(LATE_GUARDIAN) {
            _lateGuardianActiveAt = block.timestamp + TIMELOCK;
        } catch {}
    }

    /// A stranger (or the owner, for guardian-only actions) tries what it may not do.
    function unauthorizedAttempt(uint256 action, uint256 idSeed) external {
        uint256 id = _ids.length == 0 ? 100 : _ids[idSeed % _ids.length];
        action %= 8;
        bool ok;
        if (action == 0) {
            vm.prank(STRANGER);
            try vault.withdraw(1, STRANGER) { ok = true; } catch {}
        } else if (action == 1) {
            vm.prank(STRANGER);
            try vault.requestWithdrawal(1, STRANGER) { ok = true; } catch {}
        } else if (action == 2) {
            vm.prank(STRANGER);
            try vault.approveWithdrawal(id) { ok = true; } catch {}
        } else if (action == 3) {
            vm.prank(OWNER); // the owner is not a guardian
            try vault.approveWithdrawal(id) { ok = true; } catch {}
        } else if (action == 4) {
            vm.prank(STRANGER);
            try vault.cancelWithdrawal(id) { ok = true; } catch {}
        } else if (action == 5) {
            vm.prank(STRANGER);
            try vault.lock() { ok = true; } catch {}
        } else if (action == 6) {
            vm.prank(STRANGER);
            try vault.addGuardian(STRANGER) { ok = true; } catch {}
        } else {
            vm.prank(STRANGER);
            try vault.setDailyLimit(type(uint96).max) { ok = true; } catch {}
        }
        if (ok) ++ghost_unauthorizedSuccesses;
    }

    function warp(uint256 seconds_) external {
        vm.warp(block.timestamp + _bound(seconds_, 1, 3 days));
    }

    /* HELPERS */

    function _afterLock() private {
        ++ghost_locks;
        for (uint256 i; i < _ids.length; ++i) {
            _model[_ids[i]].closed = true;
        }
        if (vault.openWithdrawalIds().length != 0) ++ghost_openAfterLock;
        // The lock removes a guardian that was still pending.
        if (block.timestamp < _lateGuardianActiveAt) _lateGuardianActiveAt = 0;
    }

    function _pickApprover(uint256 who) private view returns (address) {
        who %= 5;
        if (who < 3) return _guardians[who];
        return who == 3 ? LATE_GUARDIAN : STRANGER;
    }

    function _isActiveGuardian(address account) private view returns (bool) {
        if (account == LATE_GUARDIAN) return _lateGuardianActiveAt != 0 && block.timestamp >= _lateGuardianActiveAt;
        return account != STRANGER && account != OWNER;
    }

    function _bound(uint256 value, uint256 min, uint256 max) private pure returns (uint256) {
        return min + (value % (max - min + 1));
    }
}

/// @notice Invariants of the social vault under random action sequences (see {SocialVaultHandler}).
contract SocialVaultInvariantTest is TestBase {
    SocialVaultHandler internal handler;
    MockUSDC internal usdc;
    SocialVault internal vault;

    function setUp() public {
        vm.warp(1_700_000_000);
        usdc = new MockUSDC(address(this));
        SocialVaultFactory factory = new SocialVaultFactory(usdc, address(new TrustMintForwarder()));
        vm.prank(address(0xA11CE));
        vault = SocialVault(factory.createVault(1_000e6, 1 hours, 2, keccak256(abi.encode(keccak256("duress key")))));
        vm.startPrank(address(0xA11CE));
        vault.addGuardian(address(0x6001));
        vault.addGuardian(address(0x6002));
        vault.addGuardian(address(0x6003));
        vm.stopPrank();
        vm.warp(block.timestamp + 1 hours);

        handler = new SocialVaultHandler(usdc, vault);
        usdc.grantRole(usdc.FAUCET_ROLE(), address(handler));
        targetContract(address(handler));
    }

    /// forge-config: default.invariant.runs = 48
    /// forge-config: default.invariant.depth = 60
    function invariant_neverPaysMoreThanDeposited() public view {
        assertLe(handler.ghost_paidOut(), handler.ghost_deposited(), "paid out <= deposited");
        assertEq(
            usdc.balanceOf(address(vault)) + handler.ghost_paidOut(), handler.ghost_deposited(), "exact accounting"
        );
        assertEq(handler.ghost_dailyLimitBreaches(), 0, "instant withdrawals within limit and balance");
    }

    /// forge-config: default.invariant.runs = 48
    /// forge-config: default.invariant.depth = 60
    function invariant_onlyApprovedElapsedRequestsExecute() public view {
        assertEq(handler.ghost_badExecutions(), 0, "unapproved, timelocked, expired or closed request executed");
        assertEq(handler.ghost_badApprovals(), 0, "approval by a non-active guardian or on a closed request");
    }

    /// forge-config: default.invariant.runs = 48
    /// forge-config: default.invariant.depth = 60
    function invariant_lockLeavesNoOpenRequest() public view {
        assertEq(handler.ghost_openAfterLock(), 0, "open request right after a lock");
        if (vault.isLocked()) assertEq(vault.openWithdrawalIds().length, 0, "open request while locked");
    }

    /// forge-config: default.invariant.runs = 48
    /// forge-config: default.invariant.depth = 60
    function invariant_onlyOwnerAndGuardiansAct() public view {
        assertEq(handler.ghost_unauthorizedSuccesses(), 0, "unauthorized call succeeded");
    }
}
