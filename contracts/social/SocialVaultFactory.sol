// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ERC2771Context} from "@openzeppelin/contracts/metatx/ERC2771Context.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {Clones} from "@openzeppelin/contracts/proxy/Clones.sol";
import {ISocialVault} from "../interfaces/ISocialVault.sol";
import {ISocialVaultFactory} from "../interfaces/ISocialVaultFactory.sol";
import {SocialVault} from "./SocialVault.sol";

/// @title SocialVaultFactory
/// @notice Creates one {SocialVault} per owner as a minimal-proxy clone at an address derived from the owner.
/// @dev The constructor deploys the implementation, so one deployment wires the factory, the implementation
/// and the token. The clone's CREATE2 salt is the owner's address, so `predictVault(owner)` is known before
/// creation (the API needs it to derive the duress key) and a second vault for the same owner is impossible.
///
/// Meta-transactions: the factory and the implementation trust the same ERC-2771 forwarder, so a user can create
/// their vault with a signed request relayed through the forwarder (the signer becomes the owner) and then use it the
/// same way.
contract SocialVaultFactory is ISocialVaultFactory, ERC2771Context {
    IERC20 private immutable _asset;
    address private immutable _implementation;

    /// @inheritdoc ISocialVaultFactory
    mapping(address owner => address vault) public vaultOf;

    /// @param asset_ The USDC token.
    /// @param forwarder The trusted ERC-2771 forwarder (the platform's `TrustMintForwarder`), also trusted by the
    /// implementation and so by every vault.
    constructor(IERC20 asset_, address forwarder) ERC2771Context(forwarder) {
        if (address(asset_) == address(0) || forwarder == address(0)) revert SocialVaultFactoryZeroAddress();
        _asset = asset_;
        _implementation = address(new SocialVault(asset_, forwarder));
    }

    /// @inheritdoc ISocialVaultFactory
    function createVault(
        uint256 dailyLimit,
        uint256 timelockDuration,
        uint256 requiredSignatures,
        bytes32 duressCommitment
    ) external returns (address vault) {
        address owner = _msgSender();
        address existing = vaultOf[owner];
        if (existing != address(0)) revert SocialVaultFactoryVaultExists(owner, existing);
        // An owner whose vault a recovery moved away has no `vaultOf` but its address is taken.
        vault = Clones.predictDeterministicAddress(_implementation, _salt(owner));
        if (vault.code.length != 0) revert SocialVaultFactoryVaultExists(owner, vault);

        Clones.cloneDeterministic(_implementation, _salt(owner));
        vaultOf[owner] = vault;
        ISocialVault(vault).initialize(owner, dailyLimit, timelockDuration, requiredSignatures, duressCommitment);

        emit SocialVaultCreated(owner, vault, dailyLimit, timelockDuration, requiredSignatures);
    }

    /// @inheritdoc ISocialVaultFactory
    function moveVault(address previousOwner, address newOwner) external {
        // The vault's own call at the end of its recovery: the raw caller, never forwarded.
        address vault = vaultOf[previousOwner];
        if (vault != msg.sender) revert SocialVaultFactoryUnauthorizedVault(msg.sender);
        address existing = vaultOf[newOwner];
        if (existing != address(0)) revert SocialVaultFactoryVaultExists(newOwner, existing);

        delete vaultOf[previousOwner];
        vaultOf[newOwner] = vault;

        emit SocialVaultMoved(vault, previousOwner, newOwner);
    }

    /// @inheritdoc ISocialVaultFactory
    function asset() external view returns (IERC20) {
        return _asset;
    }

    /// @inheritdoc ISocialVaultFactory
    function implementation() external view returns (address) {
        return _implementation;
    }

    /// @inheritdoc ISocialVaultFactory
    function predictVault(address owner) external view returns (address) {
        return Clones.predictDeterministicAddress(_implementation, _salt(owner));
    }

    function _salt(address owner) private pure returns (bytes32) {
        return bytes32(uint256(uint160(owner)));
    }
}
