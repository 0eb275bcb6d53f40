// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ERC2771Context} from "@openzeppelin/contracts/metatx/ERC2771Context.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Initializable} from "@openzeppelin/contracts/proxy/utils/Initializable.sol";
import {Context} from "@openzeppelin/contracts/utils/Context.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {Multicall} from "@openzeppelin/contracts/utils/Multicall.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {ISocialVault} from "../interfaces/ISocialVault.sol";
import {ISocialVaultFactory} from "../interfaces/ISocialVaultFactory.sol";
import {TryPermit} from "../utils/TryPermit.sol";

/// @title SocialVault
/// @notice A per-user USDC vault protected by a daily limit, guardians, a timelock and an emergency lock.
/// @dev The implementation behind the factory's minimal-proxy clones: its constructor disables initializers and
/// fixes the token, the factory and the trusted ERC-2771 forwarder as immutables (shared by every clone, since clones
/// run this code).
///
/// Storage is packed so the hot paths touch few slots: `_config` (owner, lock flag, timelock, requirement,
/// guardian slots, request count, used ring slots) is one slot, the daily window one slot, a request two slots. Requests live in a
/// ring of `MAX_OPEN_WITHDRAWALS` entries ("slots"): a new request takes the lowest slot whose request is closed,
/// so it overwrites non-zero storage (2 x 2,900 gas instead of 2 x 22,100 for fresh storage) from the second
/// request on, and the ring bounds the number of open requests, so `lock` scans at most that many entries.
/// The slot is encoded in the id (`id = sequence * ID_SLOT_BASE + slot`): ids increase and read as the request's
/// sequence number followed by two digits naming its slot. A closed request stays readable until its slot is
/// reused; its history lives in the events.
///
/// Every open request exists only while the vault is unlocked (a lock closes them all and no request can be
/// created while locked), so approving and executing need not read the lock flag on their success path.
///
/// Meta-transactions: every actor (owner, guardian, depositor, locker) is read with `_msgSender()`, so a request the
/// user signed and a relayer submitted through the trusted forwarder acts as the user. ERC-2771 with `Multicall` is
/// safe here because OpenZeppelin's `Multicall` (5.0.1 and later) re-appends the forwarded sender to each
/// self-delegatecall: a forwarded `multicall` whose subcalls carry another address at their end still acts as the
/// signer (the December 2023 address-spoofing issue). The only raw `msg.sender` is the factory check of
/// {initialize}, which is never forwarded.
contract SocialVault is ISocialVault, Initializable, ReentrancyGuardTransient, EIP712, Multicall, ERC2771Context {
    using SafeERC20 for IERC20;
    using SafeCast for uint256;
    using TryPermit for IERC20;

    /* CONSTANTS */

    /// @notice Shortest timelock (1 hour, the spec's lower bound).
    uint256 public constant MIN_TIMELOCK_DURATION = 1 hours;
    /// @notice Longest timelock (7 days, the spec's upper bound).
    uint256 public constant MAX_TIMELOCK_DURATION = 7 days;
    /// @notice Guardians per vault, active or pending; they fit the 16-bit approval bitmaps.
    uint256 public constant MAX_GUARDIANS = 10;
    /// @notice Open requests at once; also the size of the request ring that `lock` scans.
    uint256 public constant MAX_OPEN_WITHDRAWALS = 20;
    /// @notice Request ids are `sequence * ID_SLOT_BASE + slot`; decimal so the last two digits name the slot.
    uint256 public constant ID_SLOT_BASE = 100;
    /// @notice How long an approved request stays executable after `executeAfter`.
    uint256 public constant EXECUTION_WINDOW = 7 days;
    /// @notice Length of the instant-withdrawal window: the limit holds over any 24 hours (rolling, D-105).
    uint256 public constant DAILY_WINDOW = 1 days;
    /// @notice Instant withdrawals remembered one by one; more within a window are counted with the latest, from
    /// its time (later than their own: stricter, never looser).
    uint256 public constant DAILY_SPEND_SLOTS = 3;
    /// @notice Delay after which the owner alone can unlock (liveness when guardians are missing; long enough
    /// that a coerced owner cannot undo a duress lock).
    uint256 public constant OWNER_UNLOCK_DELAY = 30 days;
    /// @notice EIP-712 type of a guardian's signed approval.
    bytes32 public constant APPROVE_WITHDRAWAL_TYPEHASH =
        keccak256("ApproveWithdrawal(uint256 id,address recipient,uint256 amount)");

    /* IMMUTABLES */

    IERC20 private immutable _asset;
    address private immutable _factory;

    /* STORAGE */

    /// @dev One slot (160 + 24 + 8 + 16 + 8 + 32 + 8 = 256 bits). The timelock fits 24 bits (604800 < 2^24),
    /// the requirement 8 bits (<= MAX_GUARDIANS); `guardianSlots` is the bitmap of used guardian indexes,
    /// `withdrawalCount` the number of requests ever made, `usedSlots` how many ring slots have ever been used
    /// (always a prefix of the ring, since a request takes the lowest free slot).
    struct Config {
        address owner;
        uint24 timelockDuration;
        uint8 requiredSignatures;
        uint16 guardianSlots;
        bool isLocked;
        uint32 withdrawalCount;
        uint8 usedSlots;
    }

    /// @dev One slot.
    struct LockState {
        uint40 lockedAt;
        uint40 unlockRequestedAt;
        uint16 unlockApprovals;
        uint8 unlockApprovalCount;
    }

    /// @dev One slot per guardian; `index` is its bit in the approval bitmaps.
    struct Guardian {
        uint40 activeAt;
        uint40 removableAt;
        uint8 index;
        bool listed;
    }

    /// @dev A request's immutable part, one slot.
    struct Target {
        address recipient;
        uint96 amount;
    }

    /// @dev A request's mutable part, one slot (40 + 40 + 8 + 8 + 8 + 16 = 120 bits; solhint's packing heuristic
    /// misreads the enum). `expiresAt` is `executeAfter + EXECUTION_WINDOW`, not stored.
    // solhint-disable-next-line gas-struct-packing
    struct State {
        uint40 id;
        uint40 executeAfter;
        WithdrawalStatus status;
        uint8 requiredApprovals;
        uint8 approvalCount;
        uint16 approvals;
    }

    /// @dev The pending recovery, one slot (160 + 40 + 8 + 16 bits); `newOwner` zero: none.
    struct Recovery {
        address newOwner;
        uint40 executableAt;
        bool ownerObjected;
        uint16 guardianObjections;
    }

    /// @dev A submitted risk-raising change (MetaMorpho `PendingUint192`).
    struct PendingValue {
        uint192 value;
        uint64 validAt;
    }

    Config private _config;
    /// @dev The daily limit (2^96 micro-USDC is far above any USDC supply) and the first of the remembered instant
    /// withdrawals share a slot, so a vault's first withdrawal writes no new slot; the other two share the next.
    /// Each is `amount << 40 | at` (88 + 40 bits); zero: none.
    uint96 private _dailyLimit;
    uint128 private _firstSpend;
    uint128[DAILY_SPEND_SLOTS - 1] private _moreSpends;
    LockState private _lock;
    bytes32 private _duressCommitment;
    PendingValue[3] private _pending;
    mapping(address guardian => Guardian) private _guardians;
    address[MAX_GUARDIANS] private _guardianAt;
    Target[MAX_OPEN_WITHDRAWALS] private _targets;
    State[MAX_OPEN_WITHDRAWALS] private _states;
    /// @dev Commitments whose key a duress lock made public: never accepted again (D-104).
    mapping(bytes32 commitment => bool) private _spentDuressCommitments;
    Recovery private _recovery;
    /// @dev The address each guardian index backs for a recovery; cleared with the guardian and after a recovery.
    address[MAX_GUARDIANS] private _recoveryApprovals;

    /* CONSTRUCTOR */

    /// @param asset_ The USDC token.
    /// @param forwarder The trusted ERC-2771 forwarder (the platform's `TrustMintForwarder`), checked by the factory.
    /// @custom:oz-upgrades-unsafe-allow constructor
    constructor(IERC20 asset_, address forwarder) EIP712("TrustMint SocialVault", "1") ERC2771Context(forwarder) {
        _asset = asset_;
        _factory = msg.sender;
        _disableInitializers();
    }

    /// @inheritdoc ISocialVault
    function initialize(
        address owner_,
        uint256 dailyLimit_,
        uint256 timelockDuration_,
        uint256 requiredSignatures_,
        bytes32 duressCommitment_
    ) external initializer {
        // The factory's own call, in the clone's creation transaction: never forwarded, so the raw caller.
        if (msg.sender != _factory) revert SocialVaultUnauthorizedAccount(msg.sender);
        _checkTimelockDuration(timelockDuration_);
        if (requiredSignatures_ == 0 || requiredSignatures_ > MAX_GUARDIANS) {
            revert SocialVaultInvalidRequiredSignatures(requiredSignatures_, MAX_GUARDIANS);
        }

        // Casts are safe: both values were bounded above.
        _config = Config({
            owner: owner_,
            timelockDuration: uint24(timelockDuration_),
            requiredSignatures: uint8(requiredSignatures_),
            guardianSlots: 0,
            isLocked: false,
            withdrawalCount: 0,
            usedSlots: 0
        });
        _dailyLimit = dailyLimit_.toUint96();
        if (duressCommitment_ != bytes32(0)) {
            _duressCommitment = duressCommitment_;
            emit SocialVaultDuressCommitmentSet(duressCommitment_);
        }
    }

    /* MONEY */

    /// @inheritdoc ISocialVault
    function deposit(uint256 amount) external nonReentrant {
        _deposit(_msgSender(), amount);
    }

    /// @inheritdoc ISocialVault
    function depositWithPermit(uint256 amount, uint256 deadline, uint8 v, bytes32 r, bytes32 s) external nonReentrant {
        address from = _msgSender();
        _asset.tryPermit(from, amount, deadline, v, r, s);
        _deposit(from, amount);
    }

    /// @inheritdoc ISocialVault
    function withdraw(uint256 amount, address recipient) external nonReentrant {
        Config memory config = _checkOwner();
        if (config.isLocked) _revertLocked();
        if (amount == 0) revert SocialVaultZeroAmount();
        if (recipient == address(0)) revert SocialVaultZeroAddress();

        uint128[DAILY_SPEND_SLOTS] memory spends = _loadSpends();
        (uint256 spent,,) = _spentInWindow(spends);
        uint256 limit = _dailyLimit;
        // The limit may have been lowered below what the window already spent.
        uint256 remaining = limit > spent ? limit - spent : 0;
        if (amount > remaining) revert SocialVaultDailyLimitExceeded(amount, remaining);
        _checkBalance(amount);

        _recordSpend(spends, amount);

        emit SocialVaultWithdrawn(recipient, amount, remaining - amount);

        _asset.safeTransfer(recipient, amount);
    }

    /// @inheritdoc ISocialVault
    function requestWithdrawal(uint256 amount, address recipient) external returns (uint256 id) {
        Config memory config = _checkOwner();
        if (config.isLocked) _revertLocked();
        if (amount == 0) revert SocialVaultZeroAmount();
        if (recipient == address(0)) revert SocialVaultZeroAddress();
        uint96 amount96 = amount.toUint96();
        uint256 guardianCount_ = _popCount(config.guardianSlots);
        if (guardianCount_ < config.requiredSignatures) {
            revert SocialVaultNotEnoughGuardians(guardianCount_, config.requiredSignatures);
        }

        // Take the lowest used slot whose request is closed (or expired, then closed here), else a new slot.
        // Bounded by the ring size: if every slot holds a live request, the vault has too many open requests.
        uint256 slot;
        for (; slot < config.usedSlots; ++slot) {
            State memory occupant = _states[slot];
            if (!_isOpen(occupant.status)) break;
            if (block.timestamp > occupant.executeAfter + EXECUTION_WINDOW) {
                // The slot is overwritten below, so only the event records the expiry.
                emit SocialVaultWithdrawalExpired(occupant.id);
                break;
            }
        }
        if (slot == MAX_OPEN_WITHDRAWALS) revert SocialVaultTooManyOpenWithdrawals(MAX_OPEN_WITHDRAWALS);
        if (slot == config.usedSlots) ++config.usedSlots;
        ++config.withdrawalCount;
        id = uint256(config.withdrawalCount) * ID_SLOT_BASE + slot;

        uint256 executeAfter = block.timestamp + config.timelockDuration;
        _config.withdrawalCount = config.withdrawalCount;
        _config.usedSlots = config.usedSlots;
        _targets[slot] = Target({recipient: recipient, amount: amount96});
        // Casts are safe: id < 2^32 * 100 < 2^40; timestamps fit 40 bits until the year 36812.
        _states[slot] = State({
            id: uint40(id),
            executeAfter: uint40(executeAfter),
            status: WithdrawalStatus.Pending,
            requiredApprovals: config.requiredSignatures,
            approvalCount: 0,
            approvals: 0
        });

        emit SocialVaultWithdrawalRequested(
            id, amount, recipient, executeAfter, executeAfter + EXECUTION_WINDOW, config.requiredSignatures
        );
    }

    /// @inheritdoc ISocialVault
    function approveWithdrawal(uint256 id) external {
        address guardian = _msgSender();
        uint256 bit = _activeGuardianBit(guardian);
        (uint256 slot, State memory state) = _loadApprovable(id);

        _recordApproval(id, state, bit, guardian);
        _storeApprovals(slot, state);
    }

    /// @inheritdoc ISocialVault
    function approveWithdrawalWithSignatures(uint256 id, GuardianSignature[] calldata signatures) external {
        (uint256 slot, State memory state) = _loadApprovable(id);
        bytes32 digest = _approvalDigest(id, _targets[slot]);

        for (uint256 i; i < signatures.length; ++i) {
            address guardian = signatures[i].guardian;
            uint256 bit = _activeGuardianBit(guardian);
            if (!SignatureChecker.isValidSignatureNowCalldata(guardian, digest, signatures[i].signature)) {
                revert SocialVaultInvalidSignature(guardian);
            }
            _recordApproval(id, state, bit, guardian);
        }
        _storeApprovals(slot, state);
    }

    /// @inheritdoc ISocialVault
    function executeWithdrawal(uint256 id) external nonReentrant {
        (uint256 slot, State memory state) = _loadApprovable(id);
        if (state.status != WithdrawalStatus.Approved) {
            revert SocialVaultWithdrawalNotApproved(id, state.approvalCount, state.requiredApprovals);
        }
        if (block.timestamp < state.executeAfter) revert SocialVaultTimelockActive(state.executeAfter);
        Target memory target = _targets[slot];
        _checkBalance(target.amount);

        _states[slot].status = WithdrawalStatus.Executed;

        emit SocialVaultWithdrawalExecuted(id, target.amount, target.recipient);

        _asset.safeTransfer(target.recipient, target.amount);
    }

    /// @inheritdoc ISocialVault
    function cancelWithdrawal(uint256 id) external {
        _checkOwner();
        (uint256 slot, State memory state) = _loadOpen(id);

        _close(slot, state);
    }

    /* LOCK */

    /// @inheritdoc ISocialVault
    function lock() external {
        (Config memory config, address sender) = _checkOwnerOrActiveGuardian();
        if (config.isLocked) _revertLocked();

        _lockVault(config, sender);
    }

    /// @inheritdoc ISocialVault
    function duressLock(bytes32 duressKey) external {
        bytes32 commitment = _duressCommitment;
        if (commitment == bytes32(0) || keccak256(abi.encode(duressKey)) != commitment) {
            revert SocialVaultInvalidDuressKey();
        }

        // The key is public from now on: consume it, for good, so it cannot lock the vault again after an unlock.
        _spentDuressCommitments[commitment] = true;
        delete _duressCommitment;
        emit SocialVaultDuressCommitmentSet(bytes32(0));

        Config memory config = _config;
        if (!config.isLocked) _lockVault(config, _msgSender());
    }

    /// @inheritdoc ISocialVault
    function requestUnlock() external {
        (Config memory config, address sender) = _checkOwnerOrActiveGuardian();
        if (!config.isLocked) revert SocialVaultNotLocked();
        LockState memory lockState = _lock;
        if (lockState.unlockRequestedAt != 0) revert SocialVaultUnlockAlreadyRequested(lockState.unlockRequestedAt);

        _lock.unlockRequestedAt = uint40(block.timestamp);

        emit SocialVaultUnlockRequested(
            sender, block.timestamp + config.timelockDuration, block.timestamp + OWNER_UNLOCK_DELAY
        );
    }

    /// @inheritdoc ISocialVault
    function approveUnlock() external {
        address guardian = _msgSender();
        uint256 bit = _activeGuardianBit(guardian);
        if (!_config.isLocked) revert SocialVaultNotLocked();
        LockState memory lockState = _lock;
        if (lockState.unlockRequestedAt == 0) revert SocialVaultUnlockNotRequested();
        if (lockState.unlockApprovals & bit != 0) revert SocialVaultUnlockAlreadyApproved(guardian);

        // Casts are safe: `bit` is below 2^MAX_GUARDIANS and the count at most MAX_GUARDIANS.
        lockState.unlockApprovals |= uint16(bit);
        ++lockState.unlockApprovalCount;
        _lock = lockState;

        emit SocialVaultUnlockApproved(guardian, lockState.unlockApprovalCount);
    }

    /// @inheritdoc ISocialVault
    function unlock() external {
        address sender = _msgSender();
        Config memory config = _config;
        if (!config.isLocked) revert SocialVaultNotLocked();
        // The guardians are replacing the owner's key: only the recovery's own end unlocks.
        if (_recovery.newOwner != address(0)) revert SocialVaultRecoveryPending(_recovery.newOwner, _recovery.executableAt);
        LockState memory lockState = _lock;
        if (lockState.unlockRequestedAt == 0) revert SocialVaultUnlockNotRequested();
        if (lockState.unlockApprovalCount >= config.requiredSignatures) {
            uint256 validAt = lockState.unlockRequestedAt + config.timelockDuration;
            if (block.timestamp < validAt) revert SocialVaultTimelockActive(validAt);
        } else {
            if (sender != config.owner) {
                revert SocialVaultUnlockNotApproved(lockState.unlockApprovalCount, config.requiredSignatures);
            }
            uint256 validAt = lockState.unlockRequestedAt + OWNER_UNLOCK_DELAY;
            if (block.timestamp < validAt) revert SocialVaultTimelockActive(validAt);
        }

        _config.isLocked = false;
        delete _lock;

        emit SocialVaultUnlocked(sender);
    }

    /* GUARDIANS */

    /// @inheritdoc ISocialVault
    function addGuardian(address guardian) external {
        Config memory config = _checkOwner();
        if (config.isLocked) _revertLocked();
        if (guardian == address(0) || guardian == config.owner || guardian == address(this)) {
            revert SocialVaultInvalidGuardian(guardian);
        }
        if (_guardians[guardian].listed) revert SocialVaultGuardianAlreadyAdded(guardian);
        uint256 index;
        while (index < MAX_GUARDIANS && config.guardianSlots & (1 << index) != 0) ++index;
        if (index == MAX_GUARDIANS) revert SocialVaultGuardianLimitReached(MAX_GUARDIANS);

        uint256 activeAt = block.timestamp + config.timelockDuration;
        // Casts are safe: index < MAX_GUARDIANS <= 16 bits; timestamps fit 40 bits.
        _config.guardianSlots = config.guardianSlots | uint16(1 << index);
        _guardianAt[index] = guardian;
        _guardians[guardian] = Guardian({activeAt: uint40(activeAt), removableAt: 0, index: uint8(index), listed: true});

        emit SocialVaultGuardianAdded(guardian, activeAt);
    }

    /// @inheritdoc ISocialVault
    function removeGuardian(address guardian) external {
        Config memory config = _checkOwner();
        if (config.isLocked) _revertLocked();
        Guardian memory info = _guardians[guardian];
        if (!info.listed) revert SocialVaultGuardianNotFound(guardian);

        if (block.timestamp < info.activeAt) {
            // Still pending: it has no power yet, so removing it lowers no protection.
            _removeGuardian(guardian, info, false);
            return;
        }
        if (info.removableAt != 0) revert SocialVaultGuardianRemovalPending(guardian, info.removableAt);

        uint256 validAt = block.timestamp + config.timelockDuration;
        _guardians[guardian].removableAt = uint40(validAt);

        emit SocialVaultGuardianRemovalSubmitted(guardian, validAt);
    }

    /// @inheritdoc ISocialVault
    function acceptGuardianRemoval(address guardian) external {
        if (_config.isLocked) _revertLocked();
        Guardian memory info = _guardians[guardian];
        if (info.removableAt == 0) revert SocialVaultNoPendingRemoval(guardian);
        if (block.timestamp < info.removableAt) revert SocialVaultTimelockActive(info.removableAt);

        _removeGuardian(guardian, info, true);
    }

    /// @inheritdoc ISocialVault
    function revokeGuardianRemoval(address guardian) external {
        _checkOwner();
        if (_guardians[guardian].removableAt == 0) revert SocialVaultNoPendingRemoval(guardian);

        _guardians[guardian].removableAt = 0;

        emit SocialVaultGuardianRemovalRevoked(guardian);
    }

    /* RECOVERY */

    /// @inheritdoc ISocialVault
    function approveRecovery(address newOwner) external {
        address guardian = _msgSender();
        uint256 index = _activeGuardianIndex(guardian);
        Config memory config = _config;
        // An owner of another vault is refused when the recovery is finalized (the factory's `moveVault`).
        if (newOwner == address(0) || newOwner == address(this) || newOwner == config.owner || _guardians[newOwner].listed) {
            revert SocialVaultInvalidNewOwner(newOwner);
        }
        if (_recoveryApprovals[index] == newOwner) revert SocialVaultRecoveryAlreadyVoted(guardian);

        _recoveryApprovals[index] = newOwner;
        uint256 approvals = _recoveryApprovalCount(config.guardianSlots, newOwner);

        emit SocialVaultRecoveryApproved(guardian, newOwner, approvals);

        if (approvals < _recoveryThreshold(config.guardianSlots) || _recovery.newOwner == newOwner) return;
        uint256 executableAt = block.timestamp + config.timelockDuration;
        // Cast is safe: timestamps fit 40 bits until the year 36812.
        _recovery = Recovery({newOwner: newOwner, executableAt: uint40(executableAt), ownerObjected: false, guardianObjections: 0});

        emit SocialVaultRecoveryStarted(newOwner, executableAt);

        // The key being replaced may be in a thief's hands: close what it queued, as a guardian's lock does.
        if (!config.isLocked) _lockVault(config, guardian);
    }

    /// @inheritdoc ISocialVault
    function cancelRecovery() external {
        address sender = _msgSender();
        Recovery storage recovery = _recovery;
        address newOwner = recovery.newOwner;
        if (newOwner == address(0)) revert SocialVaultNoRecovery();
        if (sender == _config.owner) {
            if (recovery.ownerObjected) revert SocialVaultRecoveryAlreadyVoted(sender);
            recovery.ownerObjected = true;
        } else {
            // Cast is safe: below 2^MAX_GUARDIANS.
            uint16 bit = uint16(_activeGuardianBit(sender));
            if (recovery.guardianObjections & bit != 0) revert SocialVaultRecoveryAlreadyVoted(sender);
            recovery.guardianObjections |= bit;
        }

        emit SocialVaultRecoveryObjected(sender);

        if (!recovery.ownerObjected || recovery.guardianObjections == 0) return;
        _clearRecovery();

        emit SocialVaultRecoveryCancelled(newOwner);
    }

    /// @inheritdoc ISocialVault
    function finalizeRecovery() external {
        address newOwner = _recovery.newOwner;
        if (newOwner == address(0)) revert SocialVaultNoRecovery();
        uint256 executableAt = _recovery.executableAt;
        if (block.timestamp < executableAt) revert SocialVaultTimelockActive(executableAt);
        address previousOwner = _config.owner;
        // The backing an unlock needs (its delay has passed): measured before the approvals are cleared.
        bool unlocks = _recoveryApprovalCount(_config.guardianSlots, newOwner) >= _config.requiredSignatures;

        _config.owner = newOwner;
        _clearRecovery();
        if (unlocks) {
            _config.isLocked = false;
            delete _lock;
        }

        emit SocialVaultRecovered(previousOwner, newOwner);
        if (unlocks) emit SocialVaultUnlocked(newOwner);

        ISocialVaultFactory(_factory).moveVault(previousOwner, newOwner);
    }

    /* CONFIGURATION */

    /// @inheritdoc ISocialVault
    function setDailyLimit(uint256 newDailyLimit) external {
        Config memory config = _checkOwner();
        uint96 newLimit = newDailyLimit.toUint96();

        if (newLimit <= _dailyLimit) {
            _revokePending(ConfigParameter.DailyLimit);
            _dailyLimit = newLimit;
            emit SocialVaultConfigUpdated(ConfigParameter.DailyLimit, newLimit);
        } else {
            _submit(config, ConfigParameter.DailyLimit, newLimit);
        }
    }

    /// @inheritdoc ISocialVault
    function setTimelockDuration(uint256 newTimelockDuration) external {
        Config memory config = _checkOwner();
        _checkTimelockDuration(newTimelockDuration);

        if (newTimelockDuration >= config.timelockDuration) {
            _revokePending(ConfigParameter.TimelockDuration);
            // Cast is safe: bounded by MAX_TIMELOCK_DURATION < 2^24.
            _config.timelockDuration = uint24(newTimelockDuration);
            emit SocialVaultConfigUpdated(ConfigParameter.TimelockDuration, newTimelockDuration);
        } else {
            _submit(config, ConfigParameter.TimelockDuration, newTimelockDuration);
        }
    }

    /// @inheritdoc ISocialVault
    function setRequiredSignatures(uint256 newRequiredSignatures) external {
        Config memory config = _checkOwner();
        // Only guardians who can approve count: a pending one could not yet (D-104).
        uint256 activeCount = _activeGuardianCount(config.guardianSlots);
        if (newRequiredSignatures == 0 || newRequiredSignatures > activeCount) {
            revert SocialVaultInvalidRequiredSignatures(newRequiredSignatures, activeCount);
        }

        if (newRequiredSignatures >= config.requiredSignatures) {
            _revokePending(ConfigParameter.RequiredSignatures);
            // Cast is safe: bounded by the guardian count <= MAX_GUARDIANS.
            _config.requiredSignatures = uint8(newRequiredSignatures);
            emit SocialVaultConfigUpdated(ConfigParameter.RequiredSignatures, newRequiredSignatures);
        } else {
            _submit(config, ConfigParameter.RequiredSignatures, newRequiredSignatures);
        }
    }

    /// @inheritdoc ISocialVault
    function acceptConfigChange(ConfigParameter parameter) external {
        if (_config.isLocked) _revertLocked();
        PendingValue memory pending = _pending[uint256(parameter)];
        if (pending.validAt == 0) revert SocialVaultNoPendingChange(parameter);
        if (block.timestamp < pending.validAt) revert SocialVaultTimelockActive(pending.validAt);

        delete _pending[uint256(parameter)];
        // Casts are safe: each value was range-checked when it was submitted.
        if (parameter == ConfigParameter.DailyLimit) _dailyLimit = uint96(pending.value);
        else if (parameter == ConfigParameter.TimelockDuration) _config.timelockDuration = uint24(pending.value);
        else _config.requiredSignatures = uint8(pending.value);

        emit SocialVaultConfigUpdated(parameter, pending.value);
    }

    /// @inheritdoc ISocialVault
    function revokeConfigChange(ConfigParameter parameter) external {
        _checkOwnerOrActiveGuardian();
        if (_pending[uint256(parameter)].validAt == 0) revert SocialVaultNoPendingChange(parameter);

        _revokePending(parameter);
    }

    /// @inheritdoc ISocialVault
    function setDuressCommitment(bytes32 commitment) external {
        _checkOwner();
        if (_spentDuressCommitments[commitment]) revert SocialVaultDuressCommitmentSpent(commitment);

        _duressCommitment = commitment;

        emit SocialVaultDuressCommitmentSet(commitment);
    }

    /* VIEWS */

    /// @inheritdoc ISocialVault
    function asset() external view returns (IERC20) {
        return _asset;
    }

    /// @inheritdoc ISocialVault
    function factory() external view returns (address) {
        return _factory;
    }

    /// @inheritdoc ISocialVault
    function owner() external view returns (address) {
        return _config.owner;
    }

    /// @inheritdoc ISocialVault
    function dailyLimit() external view returns (uint256) {
        return _dailyLimit;
    }

    /// @inheritdoc ISocialVault
    function timelockDuration() external view returns (uint256) {
        return _config.timelockDuration;
    }

    /// @inheritdoc ISocialVault
    function requiredSignatures() external view returns (uint256) {
        return _config.requiredSignatures;
    }

    /// @inheritdoc ISocialVault
    function isLocked() external view returns (bool) {
        return _config.isLocked;
    }

    /// @inheritdoc ISocialVault
    function lockedAt() external view returns (uint256) {
        return _lock.lockedAt;
    }

    /// @inheritdoc ISocialVault
    function duressCommitment() external view returns (bytes32) {
        return _duressCommitment;
    }

    /// @inheritdoc ISocialVault
    function remainingDailyLimit() external view returns (uint256) {
        (uint256 spent,,) = _spentInWindow(_loadSpends());
        uint256 limit = _dailyLimit;
        return limit > spent ? limit - spent : 0;
    }

    /// @inheritdoc ISocialVault
    function dailyWindow() external view returns (uint256 spent, uint256 windowStart, uint256 resetsAt) {
        uint256 latest;
        (spent, windowStart, latest) = _spentInWindow(_loadSpends());
        if (spent != 0) resetsAt = latest + DAILY_WINDOW;
    }

    /// @inheritdoc ISocialVault
    function withdrawalCount() external view returns (uint256) {
        return _config.withdrawalCount;
    }

    /// @inheritdoc ISocialVault
    function getWithdrawal(uint256 id) external view returns (Withdrawal memory withdrawal) {
        uint256 slot = id % ID_SLOT_BASE;
        if (slot >= MAX_OPEN_WITHDRAWALS) return withdrawal;
        State memory state = _states[slot];
        if (state.id != id || id == 0) return withdrawal;
        Target memory target = _targets[slot];
        uint256 expiresAt = state.executeAfter + EXECUTION_WINDOW;
        WithdrawalStatus status = state.status;
        if (_isOpen(status) && block.timestamp > expiresAt) status = WithdrawalStatus.Expired;
        withdrawal = Withdrawal({
            id: id,
            amount: target.amount,
            recipient: target.recipient,
            status: status,
            requiredApprovals: state.requiredApprovals,
            approvals: state.approvalCount,
            executeAfter: state.executeAfter,
            expiresAt: expiresAt
        });
    }

    /// @inheritdoc ISocialVault
    function openWithdrawalIds() external view returns (uint256[] memory ids) {
        uint256 used = _config.usedSlots;
        ids = new uint256[](used);
        uint256 count;
        for (uint256 slot; slot < used; ++slot) {
            State memory state = _states[slot];
            if (_isOpen(state.status)) ids[count++] = state.id;
        }
        // Shrink the array to the ids found.
        assembly ("memory-safe") {
            mstore(ids, count)
        }
    }

    /// @inheritdoc ISocialVault
    function hasApproved(uint256 id, address guardian) external view returns (bool) {
        uint256 slot = id % ID_SLOT_BASE;
        if (slot >= MAX_OPEN_WITHDRAWALS) return false;
        State memory state = _states[slot];
        Guardian memory info = _guardians[guardian];
        return id != 0 && state.id == id && info.listed && state.approvals & (1 << info.index) != 0;
    }

    /// @inheritdoc ISocialVault
    function withdrawalApprovalDigest(uint256 id) external view returns (bytes32) {
        uint256 slot = id % ID_SLOT_BASE;
        if (id == 0 || slot >= MAX_OPEN_WITHDRAWALS || _states[slot].id != id) {
            revert SocialVaultWithdrawalNotFound(id);
        }
        return _approvalDigest(id, _targets[slot]);
    }

    /// @inheritdoc ISocialVault
    function guardians() external view returns (address[] memory list) {
        uint256 slots = _config.guardianSlots;
        list = new address[](_popCount(slots));
        uint256 count;
        for (uint256 index; index < MAX_GUARDIANS; ++index) {
            if (slots & (1 << index) != 0) list[count++] = _guardianAt[index];
        }
    }

    /// @inheritdoc ISocialVault
    function guardianCount() external view returns (uint256) {
        return _popCount(_config.guardianSlots);
    }

    /// @inheritdoc ISocialVault
    function activeGuardianCount() external view returns (uint256) {
        return _activeGuardianCount(_config.guardianSlots);
    }

    /// @inheritdoc ISocialVault
    function guardianInfo(address guardian)
        external
        view
        returns (GuardianStatus status, uint256 activeAt, uint256 removableAt)
    {
        Guardian memory info = _guardians[guardian];
        if (!info.listed) return (GuardianStatus.None, 0, 0);
        status = block.timestamp >= info.activeAt ? GuardianStatus.Active : GuardianStatus.Pending;
        return (status, info.activeAt, info.removableAt);
    }

    /// @inheritdoc ISocialVault
    function pendingConfigChange(ConfigParameter parameter) external view returns (uint256 value, uint256 validAt) {
        PendingValue memory pending = _pending[uint256(parameter)];
        return (pending.value, pending.validAt);
    }

    /// @inheritdoc ISocialVault
    function unlockRequest()
        external
        view
        returns (uint256 requestedAt, uint256 approvals, uint256 guardianUnlockAt, uint256 ownerUnlockAt)
    {
        LockState memory lockState = _lock;
        if (lockState.unlockRequestedAt == 0) return (0, 0, 0, 0);
        requestedAt = lockState.unlockRequestedAt;
        return (requestedAt, lockState.unlockApprovalCount, requestedAt + _config.timelockDuration, requestedAt + OWNER_UNLOCK_DELAY);
    }

    /// @inheritdoc ISocialVault
    function hasApprovedUnlock(address guardian) external view returns (bool) {
        Guardian memory info = _guardians[guardian];
        return info.listed && _lock.unlockApprovals & (1 << info.index) != 0;
    }

    /// @inheritdoc ISocialVault
    function pendingRecovery()
        external
        view
        returns (address newOwner, uint256 executableAt, bool ownerObjected, uint256 guardianObjections)
    {
        Recovery storage recovery = _recovery;
        return (recovery.newOwner, recovery.executableAt, recovery.ownerObjected, _popCount(recovery.guardianObjections));
    }

    /// @inheritdoc ISocialVault
    function recoveryApprovalOf(address guardian) external view returns (address) {
        Guardian memory info = _guardians[guardian];
        return info.listed ? _recoveryApprovals[info.index] : address(0);
    }


    /* INTERNAL */

    /// @dev Reverts unless the caller is the owner; returns the config it read.
    function _checkOwner() private view returns (Config memory config) {
        config = _config;
        address sender = _msgSender();
        if (sender != config.owner) revert SocialVaultUnauthorizedAccount(sender);
    }

    /// @dev Reverts unless the caller is the owner or an active guardian; returns the config it read and the caller.
    function _checkOwnerOrActiveGuardian() private view returns (Config memory config, address sender) {
        config = _config;
        sender = _msgSender();
        if (sender != config.owner && !_isActiveGuardian(sender)) revert SocialVaultUnauthorizedAccount(sender);
    }

    /// @dev Pulls `amount` from `from` (the caller) into the vault.
    function _deposit(address from, uint256 amount) private {
        if (amount == 0) revert SocialVaultZeroAmount();

        emit SocialVaultDeposited(from, amount);

        _asset.safeTransferFrom(from, address(this), amount);
    }

    function _checkTimelockDuration(uint256 duration) private pure {
        if (duration < MIN_TIMELOCK_DURATION || duration > MAX_TIMELOCK_DURATION) {
            revert SocialVaultInvalidTimelockDuration(duration, MIN_TIMELOCK_DURATION, MAX_TIMELOCK_DURATION);
        }
    }

    function _checkBalance(uint256 amount) private view {
        uint256 balance = _asset.balanceOf(address(this));
        if (amount > balance) revert SocialVaultInsufficientBalance(balance, amount);
    }

    function _revertLocked() private view {
        revert SocialVaultIsLocked(_lock.lockedAt);
    }

    function _isOpen(WithdrawalStatus status) private pure returns (bool) {
        return status == WithdrawalStatus.Pending || status == WithdrawalStatus.Approved;
    }

    function _isActiveGuardian(address account) private view returns (bool) {
        Guardian memory info = _guardians[account];
        return info.listed && block.timestamp >= info.activeAt;
    }

    /// @dev Returns the approval bit of `account`, reverting unless it is an active guardian.
    function _activeGuardianBit(address account) private view returns (uint256) {
        return 1 << _activeGuardianIndex(account);
    }

    /// @dev Returns the index of `account`, reverting unless it is an active guardian.
    function _activeGuardianIndex(address account) private view returns (uint256) {
        Guardian memory info = _guardians[account];
        if (!info.listed || block.timestamp < info.activeAt) revert SocialVaultNotGuardian(account);
        return info.index;
    }

    /// @dev More than half of the active guardians: a minority cannot take the vault, and the owner's key cannot
    /// raise the bar (it raises `requiredSignatures` at once, so the recovery does not use it).
    function _recoveryThreshold(uint256 slots) private view returns (uint256) {
        return _activeGuardianCount(slots) / 2 + 1;
    }

    /// @dev The active guardians in `slots` that back `newOwner`.
    function _recoveryApprovalCount(uint256 slots, address newOwner) private view returns (uint256) {
        uint256 backers;
        for (uint256 index; index < MAX_GUARDIANS; ++index) {
            if (_recoveryApprovals[index] == newOwner) backers |= 1 << index;
        }
        return _activeGuardianCount(slots & backers);
    }

    /// @dev Forgets the pending recovery and every guardian's approval.
    function _clearRecovery() private {
        delete _recovery;
        for (uint256 index; index < MAX_GUARDIANS; ++index) {
            if (_recoveryApprovals[index] != address(0)) delete _recoveryApprovals[index];
        }
    }

    /// @dev Loads open request `id`. When it is not open the error is `SocialVaultIsLocked` while the vault is
    /// locked (the lock closed it), else the precise reason.
    function _loadOpen(uint256 id) private view returns (uint256 slot, State memory state) {
        slot = id % ID_SLOT_BASE;
        bool found;
        if (slot < MAX_OPEN_WITHDRAWALS) {
            state = _states[slot];
            found = id != 0 && state.id == id;
        }
        if (!found || !_isOpen(state.status)) {
            if (_config.isLocked) _revertLocked();
            if (!found) revert SocialVaultWithdrawalNotFound(id);
            revert SocialVaultWithdrawalNotOpen(id, state.status);
        }
    }

    /// @dev Loads open, unexpired request `id`.
    function _loadApprovable(uint256 id) private view returns (uint256 slot, State memory state) {
        (slot, state) = _loadOpen(id);
        uint256 expiresAt = state.executeAfter + EXECUTION_WINDOW;
        if (block.timestamp > expiresAt) revert SocialVaultWithdrawalPastExpiry(id, expiresAt);
    }

    /// @dev Adds `guardian`'s approval (bit `bit`) to `state` in memory; the caller writes `state` back.
    function _recordApproval(uint256 id, State memory state, uint256 bit, address guardian) private {
        if (state.approvals & bit != 0) revert SocialVaultAlreadyApproved(id, guardian);

        // Casts are safe: `bit` is below 2^MAX_GUARDIANS; the count is at most MAX_GUARDIANS.
        state.approvals |= uint16(bit);
        ++state.approvalCount;
        if (state.approvalCount >= state.requiredApprovals) state.status = WithdrawalStatus.Approved;

        emit SocialVaultWithdrawalApproved(id, guardian, state.approvalCount);
    }

    /// @dev Writes back only the fields an approval changes (cheaper than writing the whole struct).
    function _storeApprovals(uint256 slot, State memory state) private {
        State storage stored = _states[slot];
        stored.status = state.status;
        stored.approvalCount = state.approvalCount;
        stored.approvals = state.approvals;
    }

    function _approvalDigest(uint256 id, Target memory target) private view returns (bytes32) {
        return _hashTypedDataV4(
            keccak256(abi.encode(APPROVE_WITHDRAWAL_TYPEHASH, id, target.recipient, uint256(target.amount)))
        );
    }

    /// @dev Closes an open request: expired if past its expiry, else cancelled.
    function _close(uint256 slot, State memory state) private {
        if (block.timestamp > state.executeAfter + EXECUTION_WINDOW) {
            _states[slot].status = WithdrawalStatus.Expired;
            emit SocialVaultWithdrawalExpired(state.id);
        } else {
            _states[slot].status = WithdrawalStatus.Cancelled;
            emit SocialVaultWithdrawalCancelled(state.id);
        }
    }

    /// @dev Locks the vault and clears everything a hijacked key may have queued: open requests, submitted
    /// config changes, submitted guardian removals and guardians not yet active. Bounded by the ring size,
    /// the three config parameters and MAX_GUARDIANS. The locking guardian's own submitted removal survives,
    /// so a guardian cannot make itself irremovable by locking. `by` is the caller, for the event.
    function _lockVault(Config memory config, address by) private {
        _config.isLocked = true;
        _lock = LockState({lockedAt: uint40(block.timestamp), unlockRequestedAt: 0, unlockApprovals: 0, unlockApprovalCount: 0});

        emit SocialVaultLocked(block.timestamp, by);

        uint256 used = config.usedSlots;
        for (uint256 slot; slot < used; ++slot) {
            State memory state = _states[slot];
            if (_isOpen(state.status)) _close(slot, state);
        }
        for (uint256 i; i < 3; ++i) {
            if (_pending[i].validAt != 0) _revokePending(ConfigParameter(i));
        }
        for (uint256 index; index < MAX_GUARDIANS; ++index) {
            if (config.guardianSlots & (1 << index) == 0) continue;
            address guardian = _guardianAt[index];
            Guardian memory info = _guardians[guardian];
            if (block.timestamp < info.activeAt) {
                _removeGuardian(guardian, info, false);
            } else if (info.removableAt != 0 && guardian != by) {
                _guardians[guardian].removableAt = 0;
                emit SocialVaultGuardianRemovalRevoked(guardian);
            }
        }
    }

    /// @dev Removes `guardian`. If it may have approved (it was active), its approvals on open requests stop
    /// counting, and an approved request that falls below its requirement is pending again. Removals never run
    /// while locked, so unlock approvals are untouched.
    function _removeGuardian(address guardian, Guardian memory info, bool mayHaveApproved) private {
        uint256 bit = 1 << info.index;
        // Cast is safe: the bitmap is 16 bits wide.
        _config.guardianSlots &= uint16(~bit);
        delete _guardianAt[info.index];
        delete _guardians[guardian];
        if (_recoveryApprovals[info.index] != address(0)) delete _recoveryApprovals[info.index];

        emit SocialVaultGuardianRemoved(guardian);

        // The approvals required never exceed the guardians who can give them (D-104): they follow a removal down,
        // never below one (with no guardian, nothing above the daily limit can leave). The removal itself waited the
        // timelock, during which any guardian could lock the vault.
        uint256 required = _config.requiredSignatures;
        uint256 activeCount = _activeGuardianCount(_config.guardianSlots);
        if (required > 1 && required > activeCount) {
            uint256 lowered = activeCount == 0 ? 1 : activeCount;
            // Cast is safe: at most MAX_GUARDIANS.
            _config.requiredSignatures = uint8(lowered);
            emit SocialVaultConfigUpdated(ConfigParameter.RequiredSignatures, lowered);
            // A submitted lowering still above it would raise the requirement past the guardians when accepted.
            if (_pending[uint256(ConfigParameter.RequiredSignatures)].value > lowered) {
                _revokePending(ConfigParameter.RequiredSignatures);
            }
        }

        if (!mayHaveApproved) return;
        uint256 used = _config.usedSlots;
        for (uint256 slot; slot < used; ++slot) {
            State memory state = _states[slot];
            if (!_isOpen(state.status) || state.approvals & bit == 0) continue;
            state.approvals &= uint16(~bit);
            --state.approvalCount;
            if (state.approvalCount < state.requiredApprovals) state.status = WithdrawalStatus.Pending;
            _states[slot] = state;
            emit SocialVaultWithdrawalApprovalRevoked(state.id, guardian, state.approvalCount);
        }
    }

    /// @dev What the remembered withdrawals of the last DAILY_WINDOW add up to, the earliest and the latest of them.
    function _spentInWindow(uint128[DAILY_SPEND_SLOTS] memory spends)
        private
        view
        returns (uint256 spent, uint256 earliest, uint256 latest)
    {
        for (uint256 i; i < DAILY_SPEND_SLOTS; ++i) {
            uint256 at = uint40(spends[i]);
            if (spends[i] == 0 || at + DAILY_WINDOW <= block.timestamp) continue;
            spent += spends[i] >> 40;
            if (earliest == 0 || at < earliest) earliest = at;
            if (at > latest) latest = at;
        }
    }

    /// @dev Remembers an instant withdrawal of `amount` now: in a slot whose withdrawal left the window, else added
    /// to the latest one, whose time becomes now (its amount then counts a little longer: stricter, never looser).
    function _recordSpend(uint128[DAILY_SPEND_SLOTS] memory spends, uint256 amount) private {
        uint256 latest;
        for (uint256 i; i < DAILY_SPEND_SLOTS; ++i) {
            if (spends[i] == 0 || uint40(spends[i]) + DAILY_WINDOW <= block.timestamp) {
                _storeSpend(i, _packSpend(amount));
                return;
            }
            if (uint40(spends[i]) >= uint40(spends[latest])) latest = i;
        }
        _storeSpend(latest, _packSpend((spends[latest] >> 40) + amount));
    }

    function _loadSpends() private view returns (uint128[DAILY_SPEND_SLOTS] memory) {
        return [_firstSpend, _moreSpends[0], _moreSpends[1]];
    }

    function _storeSpend(uint256 i, uint128 spend) private {
        if (i == 0) _firstSpend = spend;
        else _moreSpends[i - 1] = spend;
    }

    /// @dev `amount << 40 | now`: 88 bits hold 3e20 USDC (checked), 40 bits a timestamp until the year 36812.
    function _packSpend(uint256 amount) private view returns (uint128) {
        return uint128(amount.toUint88()) << 40 | uint128(block.timestamp);
    }

    /// @dev The guardians in `slots` whose activation time has come.
    function _activeGuardianCount(uint256 slots) private view returns (uint256 count) {
        for (uint256 index; index < MAX_GUARDIANS; ++index) {
            if (slots & (1 << index) != 0 && block.timestamp >= _guardians[_guardianAt[index]].activeAt) ++count;
        }
    }

    function _submit(Config memory config, ConfigParameter parameter, uint256 value) private {
        if (config.isLocked) _revertLocked();
        uint256 validAt = block.timestamp + config.timelockDuration;
        // Casts are safe: values are range-checked by the setters; timestamps fit 64 bits.
        _pending[uint256(parameter)] = PendingValue({value: uint192(value), validAt: uint64(validAt)});

        emit SocialVaultConfigChangeSubmitted(parameter, value, validAt);
    }

    function _revokePending(ConfigParameter parameter) private {
        if (_pending[uint256(parameter)].validAt == 0) return;

        delete _pending[uint256(parameter)];

        emit SocialVaultConfigChangeRevoked(parameter);
    }

    function _popCount(uint256 bits) private pure returns (uint256 count) {
        for (; bits != 0; bits &= bits - 1) ++count;
    }

    /// @dev The signer of a request relayed by the trusted forwarder, else `msg.sender`.
    function _msgSender() internal view override(Context, ERC2771Context) returns (address) {
        return ERC2771Context._msgSender();
    }

    /// @dev The calldata without the forwarder's 20-byte suffix.
    function _msgData() internal view override(Context, ERC2771Context) returns (bytes calldata) {
        return ERC2771Context._msgData();
    }

    /// @dev 20: the signer's address appended by the forwarder. `Multicall` re-appends this suffix to its subcalls.
    function _contextSuffixLength() internal view override(Context, ERC2771Context) returns (uint256) {
        return ERC2771Context._contextSuffixLength();
    }
}
