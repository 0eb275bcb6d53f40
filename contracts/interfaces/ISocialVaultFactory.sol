// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";

/// @title ISocialVaultFactory
/// @notice Deploys one social vault per owner as a deterministic OpenZeppelin `Clones` minimal proxy.
interface ISocialVaultFactory {
    /// @notice `owner` created `vault` with this configuration.
    event SocialVaultCreated(
        address indexed owner,
        address indexed vault,
        uint256 dailyLimit,
        uint256 timelockDuration,
        uint256 requiredSignatures
    );

    /// @notice A recovery handed `vault` from `previousOwner` to `newOwner`.
    event SocialVaultMoved(address indexed vault, address indexed previousOwner, address indexed newOwner);

    /// @notice `owner` already has `vault` (or created it and lost it to a recovery: its address is taken).
    error SocialVaultFactoryVaultExists(address owner, address vault);
    /// @notice `account` is not the vault of the owner it names.
    error SocialVaultFactoryUnauthorizedVault(address account);
    /// @notice The token or the forwarder address is zero.
    error SocialVaultFactoryZeroAddress();

    /// @notice Creates the caller's vault (the caller becomes its owner) at {predictVault}(caller). Through the
    /// trusted ERC-2771 forwarder, the caller is the signer of the forwarded request.
    /// @dev Reverts with `SocialVaultFactoryVaultExists` if the caller already has one. The arguments are checked
    /// by {ISocialVault-initialize}.
    /// @param dailyLimit Instant-withdrawal limit per 24-hour window, in USDC micro-units.
    /// @param timelockDuration Seconds, 3600 to 604800.
    /// @param requiredSignatures Guardian approvals for above-limit withdrawals, 1 to `MAX_GUARDIANS`.
    /// @param duressCommitment `keccak256(abi.encode(duressKey))`, or zero for none.
    /// @return vault The new vault.
    function createVault(
        uint256 dailyLimit,
        uint256 timelockDuration,
        uint256 requiredSignatures,
        bytes32 duressCommitment
    ) external returns (address vault);

    /// @notice Called by a vault whose recovery was finalized, so {vaultOf} follows its owner.
    /// @dev Reverts with `SocialVaultFactoryUnauthorizedVault` unless the caller is `vaultOf(previousOwner)`, and with
    /// `SocialVaultFactoryVaultExists` if `newOwner` has a vault. An owner whose vault left cannot create another: the
    /// address derived from it is taken.
    /// @param previousOwner The owner whose key was replaced.
    /// @param newOwner The vault's owner from now on.
    function moveVault(address previousOwner, address newOwner) external;

    /// @notice The USDC token every vault holds.
    /// @return The token.
    function asset() external view returns (IERC20);

    /// @notice The vault implementation the clones delegate to.
    /// @return The implementation address.
    function implementation() external view returns (address);

    /// @notice The vault of `owner`, or zero if none.
    /// @param owner The owner.
    /// @return The vault.
    function vaultOf(address owner) external view returns (address);

    /// @notice The address of the vault `owner` creates or created (known before creation).
    /// @param owner The owner.
    /// @return The address.
    function predictVault(address owner) external view returns (address);
}
