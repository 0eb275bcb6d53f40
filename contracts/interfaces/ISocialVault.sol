// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";

/// @title ISocialVault
/// @notice A per-user USDC vault with a daily instant-withdrawal limit, guardian-approved and timelocked
/// withdrawals above it, an emergency lock (also reachable with a duress key) and a guardian-approved unlock.
/// @dev Deployed as an OpenZeppelin `Clones` minimal proxy by {ISocialVaultFactory}; one vault per owner.
/// Money values are USDC micro-units (6 decimals). Timestamps are Unix seconds.
///
/// Every function but {initialize} may be called through the trusted ERC-2771 forwarder (`trustedForwarder()`, the
/// same for every clone); the signer of the forwarded request is then the caller (owner, guardian or depositor), also inside a
/// forwarded `multicall`.
///
/// Risk rule for configuration: a change that lowers risk applies at once, a change that raises risk is
/// submitted and can be accepted (by anyone) once the current `timelockDuration` has passed. A lock revokes
/// every pending risk-raising change.
interface ISocialVault {
    /* TYPES */

    /// @notice Life cycle of an above-limit withdrawal request.
    /// @dev `Approved` is stored once approvals reach `requiredApprovals`. `Expired` is reported by the views for
    /// an open request past `expiresAt`, and stored when such a request is closed.
    enum WithdrawalStatus {
        None,
        Pending,
        Approved,
        Executed,
        Cancelled,
        Expired
    }

    /// @notice A guardian is `Pending` from being added until `activeAt`, then `Active`.
    enum GuardianStatus {
        None,
        Pending,
        Active
    }

    /// @notice The configuration values whose risk-raising changes are timelocked.
    enum ConfigParameter {
        DailyLimit,
        TimelockDuration,
        RequiredSignatures
    }

    /// @notice A withdrawal request as returned by {getWithdrawal}.
    struct Withdrawal {
        uint256 id;
        uint256 amount;
        address recipient;
        WithdrawalStatus status;
        uint256 requiredApprovals;
        uint256 approvals;
        uint256 executeAfter;
        uint256 expiresAt;
    }

    /// @notice One guardian's EIP-712 `ApproveWithdrawal(uint256 id,address recipient,uint256 amount)` signature.
    struct GuardianSignature {
        address guardian;
        bytes signature;
    }

    /* EVENTS */

    /// @notice `amount` USDC was deposited by `from`.
    event SocialVaultDeposited(address indexed from, uint256 amount);

    /// @notice The owner withdrew `amount` instantly to `recipient`; `remainingDailyLimit` is left for the next 24 hours
    /// (more frees up as earlier withdrawals leave them).
    event SocialVaultWithdrawn(address indexed recipient, uint256 amount, uint256 remainingDailyLimit);

    /// @notice An above-limit withdrawal request was created.
    event SocialVaultWithdrawalRequested(
        uint256 indexed id,
        uint256 amount,
        address indexed recipient,
        uint256 executeAfter,
        uint256 expiresAt,
        uint256 requiredApprovals
    );

    /// @notice `guardian` approved request `id`, which now has `totalApprovals` approvals.
    event SocialVaultWithdrawalApproved(uint256 indexed id, address indexed guardian, uint256 totalApprovals);

    /// @notice The approval of removed `guardian` on open request `id` no longer counts.
    event SocialVaultWithdrawalApprovalRevoked(uint256 indexed id, address indexed guardian, uint256 totalApprovals);

    /// @notice Request `id` paid `amount` to `recipient`.
    event SocialVaultWithdrawalExecuted(uint256 indexed id, uint256 amount, address indexed recipient);

    /// @notice Request `id` was cancelled (by the owner, or by a lock).
    event SocialVaultWithdrawalCancelled(uint256 indexed id);

    /// @notice Request `id`, past its `expiresAt`, was closed without being executed.
    event SocialVaultWithdrawalExpired(uint256 indexed id);

    /// @notice The vault was locked at `lockedAt` by `by` (the same event for `lock` and `duressLock`).
    event SocialVaultLocked(uint256 lockedAt, address indexed by);

    /// @notice `by` asked to unlock. Guardians can unlock from `guardianUnlockAt` with enough approvals; the
    /// owner alone from `ownerUnlockAt`.
    event SocialVaultUnlockRequested(address indexed by, uint256 guardianUnlockAt, uint256 ownerUnlockAt);

    /// @notice `guardian` approved the unlock, which now has `totalApprovals` approvals.
    event SocialVaultUnlockApproved(address indexed guardian, uint256 totalApprovals);

    /// @notice The vault was unlocked by `by`.
    event SocialVaultUnlocked(address indexed by);

    /// @notice `guardian` was added; it is pending until `activeAt`.
    event SocialVaultGuardianAdded(address indexed guardian, uint256 activeAt);

    /// @notice The owner asked to remove active `guardian`; the removal can be accepted from `validAt`.
    event SocialVaultGuardianRemovalSubmitted(address indexed guardian, uint256 validAt);

    /// @notice The pending removal of `guardian` was revoked (by the owner, or by a lock).
    event SocialVaultGuardianRemovalRevoked(address indexed guardian);

    /// @notice `guardian` is no longer a guardian.
    event SocialVaultGuardianRemoved(address indexed guardian);

    /// @notice A risk-raising change of `parameter` to `value` was submitted; it can be accepted from `validAt`.
    event SocialVaultConfigChangeSubmitted(ConfigParameter indexed parameter, uint256 value, uint256 validAt);

    /// @notice The pending change of `parameter` was revoked (or superseded, or cleared by a lock).
    event SocialVaultConfigChangeRevoked(ConfigParameter indexed parameter);

    /// @notice `parameter` now has `value`.
    event SocialVaultConfigUpdated(ConfigParameter indexed parameter, uint256 value);

    /// @notice The duress commitment is now `commitment` (zero: no duress key).
    event SocialVaultDuressCommitmentSet(bytes32 commitment);

    /// @notice Active guardian `guardian` approved handing the vault to `newOwner`; `approvals` now back it.
    event SocialVaultRecoveryApproved(address indexed guardian, address indexed newOwner, uint256 approvals);

    /// @notice A majority of the active guardians backs `newOwner`: the vault is locked and the recovery can be
    /// finalized from `executableAt` (it replaces any recovery that was pending).
    event SocialVaultRecoveryStarted(address indexed newOwner, uint256 executableAt);

    /// @notice `account` (the owner or an active guardian) objected to the pending recovery.
    event SocialVaultRecoveryObjected(address indexed account);

    /// @notice The owner and a guardian objected: the pending recovery and every approval are cleared.
    event SocialVaultRecoveryCancelled(address indexed newOwner);

    /// @notice The recovery was finalized: `newOwner` owns the vault.
    event SocialVaultRecovered(address indexed previousOwner, address indexed newOwner);

    /* ERRORS */

    /// @notice `account` may not call this function.
    error SocialVaultUnauthorizedAccount(address account);
    /// @notice `account` is not an active guardian (API: NOT_GUARDIAN).
    error SocialVaultNotGuardian(address account);
    /// @notice The vault has been locked since `lockedAt` (API: VAULT_LOCKED).
    error SocialVaultIsLocked(uint256 lockedAt);
    /// @notice The vault is not locked.
    error SocialVaultNotLocked();
    /// @notice The amount is zero.
    error SocialVaultZeroAmount();
    /// @notice The address is zero.
    error SocialVaultZeroAddress();
    /// @notice `amount` exceeds the `remaining` daily limit (API: DAILY_LIMIT_EXCEEDED).
    error SocialVaultDailyLimitExceeded(uint256 amount, uint256 remaining);
    /// @notice The vault holds `balance`, less than `needed`.
    error SocialVaultInsufficientBalance(uint256 balance, uint256 needed);
    /// @notice `duration` is outside [`min`, `max`] seconds.
    error SocialVaultInvalidTimelockDuration(uint256 duration, uint256 min, uint256 max);
    /// @notice `requiredSignatures` is zero or above `max`.
    error SocialVaultInvalidRequiredSignatures(uint256 requiredSignatures, uint256 max);
    /// @notice Only `guardianCount` guardians (active or pending) for `requiredSignatures` approvals.
    error SocialVaultNotEnoughGuardians(uint256 guardianCount, uint256 requiredSignatures);
    /// @notice Already `max` open withdrawal requests.
    error SocialVaultTooManyOpenWithdrawals(uint256 max);
    /// @notice No request `id` (never created, or its storage was reused by a later request).
    error SocialVaultWithdrawalNotFound(uint256 id);
    /// @notice Request `id` is `status`, not pending or approved.
    error SocialVaultWithdrawalNotOpen(uint256 id, WithdrawalStatus status);
    /// @notice Request `id` expired at `expiresAt`.
    error SocialVaultWithdrawalPastExpiry(uint256 id, uint256 expiresAt);
    /// @notice Request `id` has `approvals` of `requiredApprovals` approvals.
    error SocialVaultWithdrawalNotApproved(uint256 id, uint256 approvals, uint256 requiredApprovals);
    /// @notice `guardian` already approved request `id`.
    error SocialVaultAlreadyApproved(uint256 id, address guardian);
    /// @notice The signature is not a valid approval by `guardian`.
    error SocialVaultInvalidSignature(address guardian);
    /// @notice The timelock runs until `validAt` (API: TIMELOCK_ACTIVE).
    error SocialVaultTimelockActive(uint256 validAt);
    /// @notice No pending change of `parameter`.
    error SocialVaultNoPendingChange(ConfigParameter parameter);
    /// @notice The vault already has `max` guardians.
    error SocialVaultGuardianLimitReached(uint256 max);
    /// @notice `guardian` cannot be a guardian (the zero address, the owner or the vault).
    error SocialVaultInvalidGuardian(address guardian);
    /// @notice `guardian` is already a guardian.
    error SocialVaultGuardianAlreadyAdded(address guardian);
    /// @notice `guardian` is not a guardian.
    error SocialVaultGuardianNotFound(address guardian);
    /// @notice The removal of `guardian` is already pending until `validAt`.
    error SocialVaultGuardianRemovalPending(address guardian, uint256 validAt);
    /// @notice No pending removal of `guardian`.
    error SocialVaultNoPendingRemoval(address guardian);
    /// @notice The duress key does not match the commitment (or none is set).
    error SocialVaultInvalidDuressKey();

    /// @notice `commitment`'s key already locked this vault under duress: it is public, so it is never accepted again.
    error SocialVaultDuressCommitmentSpent(bytes32 commitment);
    /// @notice No unlock has been requested.
    error SocialVaultUnlockNotRequested();
    /// @notice An unlock was already requested at `requestedAt`.
    error SocialVaultUnlockAlreadyRequested(uint256 requestedAt);
    /// @notice `guardian` already approved the unlock.
    error SocialVaultUnlockAlreadyApproved(address guardian);
    /// @notice The unlock has `approvals` of `requiredSignatures` approvals.
    error SocialVaultUnlockNotApproved(uint256 approvals, uint256 requiredSignatures);
    /// @notice `newOwner` cannot receive the vault: zero, the vault, its owner, a guardian, or the owner of a vault.
    error SocialVaultInvalidNewOwner(address newOwner);
    /// @notice No recovery is pending.
    error SocialVaultNoRecovery();
    /// @notice A recovery to `newOwner` is pending (executable from `executableAt`): the owner cannot unlock.
    error SocialVaultRecoveryPending(address newOwner, uint256 executableAt);
    /// @notice `account` already gave this approval or objection.
    error SocialVaultRecoveryAlreadyVoted(address account);

    /* INITIALIZATION */

    /// @notice Initializes a freshly cloned vault. Called once, by the factory, in the clone's creation transaction.
    /// @dev At creation `requiredSignatures` is bounded by `MAX_GUARDIANS` only, because guardians are added
    /// afterwards; until enough exist, above-limit requests cannot be created (fail closed).
    /// @param owner_ The vault owner (the wallet that called the factory).
    /// @param dailyLimit_ Instant-withdrawal limit per 24-hour window, in USDC micro-units.
    /// @param timelockDuration_ Seconds, 3600 to 604800.
    /// @param requiredSignatures_ Guardian approvals needed, 1 to `MAX_GUARDIANS`.
    /// @param duressCommitment_ `keccak256(duressKey)`, or zero for none.
    function initialize(
        address owner_,
        uint256 dailyLimit_,
        uint256 timelockDuration_,
        uint256 requiredSignatures_,
        bytes32 duressCommitment_
    ) external;

    /* MONEY */

    /// @notice Deposits `amount` USDC from the caller (who must have approved the vault). Anyone may deposit,
    /// also while the vault is locked.
    /// @param amount The amount in USDC micro-units.
    function deposit(uint256 amount) external;

    /// @notice {deposit}, approving the vault in the same call with the caller's EIP-2612 permit, so a wallet without
    /// ETH can deposit through the forwarder in one signed request.
    /// @dev The permit's owner is the caller (`_msgSender()`: the signer of a forwarded request), its spender this
    /// vault and its value `amount`; none of them is an argument, so a permit only ever serves its signer's deposit.
    /// A permit that fails (already used by a front-runner, expired, invalid) is ignored and the deposit then relies
    /// on the allowance, as {deposit} does. Same checks and event as {deposit}: `SocialVaultDeposited(caller, amount)`.
    /// @param amount The amount in USDC micro-units, and the permit's value.
    /// @param deadline The permit's deadline (Unix seconds).
    /// @param v The permit signature's `v`.
    /// @param r The permit signature's `r`.
    /// @param s The permit signature's `s`.
    function depositWithPermit(uint256 amount, uint256 deadline, uint8 v, bytes32 r, bytes32 s) external;

    /// @notice Owner only: sends `amount` to `recipient` at once, within the daily limit.
    /// @dev The limit holds over any 24 hours: the instant withdrawals of the last 24 hours count (the vault remembers
    /// three; more are added to the latest, from its time: stricter, never looser). Reverts with
    /// `SocialVaultDailyLimitExceeded(amount, remaining)` above what is left.
    /// @param amount The amount in USDC micro-units.
    /// @param recipient The receiver.
    function withdraw(uint256 amount, address recipient) external;

    /// @notice Owner only: requests a withdrawal that needs guardian approvals and the timelock.
    /// @dev Any amount may be requested (the API routes amounts above the remaining daily limit here).
    /// `executeAfter = now + timelockDuration`, `expiresAt = executeAfter + EXECUTION_WINDOW`; the request needs
    /// the `requiredSignatures` in force now. At most `MAX_OPEN_WITHDRAWALS` requests are open at once; an expired
    /// open request is closed (expired) to make room. `id = sequence * 100 + slot` (sequence from 1, slot 0-19):
    /// ids increase, are never reused and name the storage slot the request occupies.
    /// @param amount The amount in USDC micro-units (at most 2^96 - 1).
    /// @param recipient The receiver.
    /// @return id The request id.
    function requestWithdrawal(uint256 amount, address recipient) external returns (uint256 id);

    /// @notice Active guardian only: approves request `id` (once per guardian; also allowed once approved).
    /// @param id The request id.
    function approveWithdrawal(uint256 id) external;

    /// @notice Records EIP-712 approvals signed by active guardians (EOA or ERC-1271 smart accounts) for request
    /// `id`; anyone may submit them. Batch it with {executeWithdrawal} through `multicall` to save transactions.
    /// @param id The request id.
    /// @param signatures One signature per guardian over `ApproveWithdrawal(id, recipient, amount)`.
    function approveWithdrawalWithSignatures(uint256 id, GuardianSignature[] calldata signatures) external;

    /// @notice Pays an approved request once its timelock has passed and before it expires. Anyone may call.
    /// @dev Reverts with `SocialVaultTimelockActive(executeAfter)` during the timelock and
    /// `SocialVaultInsufficientBalance` if the vault holds less than the amount.
    /// @param id The request id.
    function executeWithdrawal(uint256 id) external;

    /// @notice Owner only: cancels a pending or approved request (closing it as expired if it is past expiry).
    /// @param id The request id.
    function cancelWithdrawal(uint256 id) external;

    /* LOCK */

    /// @notice Owner or active guardian: locks the vault, cancels every open request and revokes every pending
    /// risk-raising change (config changes, guardian removals, guardians not yet active).
    /// @dev A guardian's own submitted removal survives its lock, so locking cannot make a guardian irremovable.
    /// While locked, withdrawals, requests, approvals, executions, guardian changes and risk-raising config
    /// changes revert with `SocialVaultIsLocked`; deposits and risk-lowering changes still work.
    function lock() external;

    /// @notice Anyone holding the duress key: locks the vault exactly like {lock}.
    /// @dev The key is revealed by this call, so the commitment is consumed (cleared, and refused by
    /// {setDuressCommitment} for good) even when the vault is already locked, in which case the call does nothing else.
    /// @param duressKey The 32-byte key whose keccak256 is the stored commitment.
    function duressLock(bytes32 duressKey) external;

    /// @notice Owner or active guardian: starts an unlock of the locked vault.
    function requestUnlock() external;

    /// @notice Active guardian only: approves the requested unlock (once per guardian).
    function approveUnlock() external;

    /// @notice Unlocks the vault. Anyone, once `requiredSignatures` guardians approved and `timelockDuration` has
    /// passed since the unlock request; or the owner alone once `OWNER_UNLOCK_DELAY` has passed since it.
    function unlock() external;

    /* GUARDIANS */

    /// @notice Owner only: adds `guardian`, pending until `now + timelockDuration`, then active with no further call.
    /// @param guardian The guardian's wallet address.
    function addGuardian(address guardian) external;

    /// @notice Owner only: removes a pending guardian at once, or submits the removal of an active guardian,
    /// which stays active until the removal is accepted after `timelockDuration` (any guardian may lock the vault
    /// meanwhile, which stops it).
    /// @param guardian The guardian's wallet address.
    function removeGuardian(address guardian) external;

    /// @notice Anyone: completes a submitted guardian removal once its timelock has passed. The guardian's
    /// approvals on open requests stop counting, and the required approvals follow the active guardians left down
    /// when they exceed them (never below 1; a submitted lowering above the new value is revoked), with
    /// `SocialVaultConfigUpdated`.
    /// @param guardian The guardian's wallet address.
    function acceptGuardianRemoval(address guardian) external;

    /// @notice Owner only: revokes a submitted guardian removal.
    /// @param guardian The guardian's wallet address.
    function revokeGuardianRemoval(address guardian) external;

    /* RECOVERY */

    /// @notice Approves, as an active guardian, handing the vault to `newOwner` (a lost or stolen owner key). A
    /// guardian backs one address at a time; approving another moves its approval. When more than half of the active
    /// guardians back the same address, the recovery starts: the vault is locked (as {lock} does) and it can be
    /// finalized after the vault's timelock. Starting replaces a pending recovery to another address.
    function approveRecovery(address newOwner) external;

    /// @notice Objects to the pending recovery, as the owner or an active guardian. It is cancelled, with every
    /// approval, once the owner and at least one guardian objected: the owner's key alone cannot stop the guardians,
    /// and with a guardian's consent it only makes them start again (with a new timelock). The vault stays locked.
    function cancelRecovery() external;

    /// @notice Finalizes the pending recovery once its timelock has passed (anyone may call): the new owner owns the
    /// vault (the factory's `vaultOf` follows). The vault is unlocked if the guardians backing the new owner reach
    /// the approvals an unlock requires; else it stays locked and the new owner asks for an unlock as usual.
    function finalizeRecovery() external;

    /* CONFIGURATION */

    /// @notice Owner only: sets the daily limit; a lower (or equal) value applies at once, a higher one is
    /// submitted for `timelockDuration`.
    /// @param newDailyLimit USDC micro-units (at most 2^96 - 1).
    function setDailyLimit(uint256 newDailyLimit) external;

    /// @notice Owner only: sets the timelock; a longer (or equal) one applies at once, a shorter one is submitted
    /// for the current `timelockDuration`.
    /// @param newTimelockDuration Seconds, 3600 to 604800.
    function setTimelockDuration(uint256 newTimelockDuration) external;

    /// @notice Owner only: sets the required guardian approvals, 1 to the number of active guardians (a pending one
    /// cannot approve yet); a higher (or equal) value applies at once, a lower one is submitted for `timelockDuration`.
    /// @dev Open requests keep the requirement they were created with.
    /// @param newRequiredSignatures The number of approvals.
    function setRequiredSignatures(uint256 newRequiredSignatures) external;

    /// @notice Anyone: applies a submitted change once its timelock has passed.
    /// @param parameter The parameter.
    function acceptConfigChange(ConfigParameter parameter) external;

    /// @notice Owner or active guardian: revokes a submitted change.
    /// @param parameter The parameter.
    function revokeConfigChange(ConfigParameter parameter) external;

    /// @notice Owner only: sets or replaces the duress commitment (zero removes it); one whose key already locked the
    /// vault is refused with {SocialVaultDuressCommitmentSpent}.
    /// @dev `commitment = keccak256(abi.encode(duressKey))` where the service derives the 32-byte `duressKey`
    /// off-chain as an HMAC keyed with its secret over the vault address and the PIN, so the stored value cannot
    /// be brute-forced from the small PIN space.
    /// @param commitment The commitment.
    function setDuressCommitment(bytes32 commitment) external;

    /* VIEWS */

    /// @notice The USDC token.
    /// @return The token.
    function asset() external view returns (IERC20);

    /// @notice The factory that created this vault.
    /// @return The factory address.
    function factory() external view returns (address);

    /// @notice The vault owner.
    /// @return The owner address.
    function owner() external view returns (address);

    /// @notice The instant-withdrawal limit per window, in USDC micro-units.
    /// @return The limit.
    function dailyLimit() external view returns (uint256);

    /// @notice The timelock, in seconds.
    /// @return The duration.
    function timelockDuration() external view returns (uint256);

    /// @notice The guardian approvals new requests (and unlocks) need.
    /// @return The number of approvals.
    function requiredSignatures() external view returns (uint256);

    /// @notice Whether the vault is locked.
    /// @return True when locked.
    function isLocked() external view returns (bool);

    /// @notice When the vault was locked (zero when unlocked).
    /// @return The timestamp.
    function lockedAt() external view returns (uint256);

    /// @notice The duress commitment (zero: none).
    /// @return The commitment.
    function duressCommitment() external view returns (bytes32);

    /// @notice What the owner may still withdraw instantly now.
    /// @return The remaining limit in USDC micro-units.
    function remainingDailyLimit() external view returns (uint256);

    /// @notice The instant withdrawals of the last 24 hours.
    /// @return spent What they add up to.
    /// @return windowStart When the earliest of them was made (zero if none).
    /// @return resetsAt When the limit is whole again: a day after the latest (zero if it is whole now).
    function dailyWindow() external view returns (uint256 spent, uint256 windowStart, uint256 resetsAt);

    /// @notice The number of withdrawal requests ever made (the sequence part of the last id).
    /// @return The count.
    function withdrawalCount() external view returns (uint256);

    /// @notice Request `id`; status `None` if unknown or its storage was reused by a later request.
    /// @param id The request id.
    /// @return The request.
    function getWithdrawal(uint256 id) external view returns (Withdrawal memory);

    /// @notice Ids of the open (pending or approved, possibly expired) requests.
    /// @return ids The ids.
    function openWithdrawalIds() external view returns (uint256[] memory ids);

    /// @notice Whether `guardian` has approved request `id`.
    /// @dev Exact for open requests. For a closed request, an approval by a guardian since removed may show under
    /// a later guardian that took the same index; the events keep the exact history.
    /// @param id The request id.
    /// @param guardian The guardian.
    /// @return True if approved.
    function hasApproved(uint256 id, address guardian) external view returns (bool);

    /// @notice The EIP-712 digest a guardian signs to approve request `id`.
    /// @param id The request id.
    /// @return The digest.
    function withdrawalApprovalDigest(uint256 id) external view returns (bytes32);

    /// @notice The guardians, active or pending.
    /// @return The addresses.
    function guardians() external view returns (address[] memory);

    /// @notice The number of guardians, active or pending.
    /// @return The count.
    function guardianCount() external view returns (uint256);

    /// @notice The number of active guardians.
    /// @return The count.
    function activeGuardianCount() external view returns (uint256);

    /// @notice The status of `guardian`.
    /// @param guardian The address.
    /// @return status None, Pending or Active.
    /// @return activeAt When it becomes (or became) active.
    /// @return removableAt When its submitted removal can be accepted (zero if none).
    function guardianInfo(address guardian)
        external
        view
        returns (GuardianStatus status, uint256 activeAt, uint256 removableAt);

    /// @notice The submitted change of `parameter`.
    /// @param parameter The parameter.
    /// @return value The new value.
    /// @return validAt When it can be accepted (zero if none).
    function pendingConfigChange(ConfigParameter parameter) external view returns (uint256 value, uint256 validAt);

    /// @notice The current unlock request.
    /// @return requestedAt When it was requested (zero if none).
    /// @return approvals Guardian approvals so far.
    /// @return guardianUnlockAt From when a guardian-approved unlock can run.
    /// @return ownerUnlockAt From when the owner alone can unlock.
    function unlockRequest()
        external
        view
        returns (uint256 requestedAt, uint256 approvals, uint256 guardianUnlockAt, uint256 ownerUnlockAt);

    /// @notice Whether `guardian` approved the current unlock request.
    /// @param guardian The guardian.
    /// @return True if approved.
    function hasApprovedUnlock(address guardian) external view returns (bool);

    /// @notice The pending recovery: the new owner (zero: none), when it can be finalized, whether the owner objected
    /// and how many active guardians did.
    function pendingRecovery()
        external
        view
        returns (address newOwner, uint256 executableAt, bool ownerObjected, uint256 guardianObjections);

    /// @notice The address `guardian` backs for a recovery (zero: none).
    function recoveryApprovalOf(address guardian) external view returns (address);
}
