// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Permit.sol";
import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";
import {ERC3009} from "./ERC3009.sol";

/// @title MockUSDC
/// @notice 6-decimal test USDC for development and test chains; minted only by the faucet role. Supports EIP-2612
/// `permit` and EIP-3009's transfers with authorization ({ERC3009}), as real USDC does, so that wallets without ETH can
/// approve, or pay, by signature.
/// @dev EIP-712 domain of `permit` and of the authorizations: name {name} ("USD Coin (test)"), version {version} ("1"), the chain id, this
/// contract; `eip712Domain()` (ERC-5267) returns it too. Real USDC deployments use other names and version "2":
/// a relayer reads `name()` and `version()` from the token it is given, which works for both.
contract MockUSDC is ERC20, ERC20Permit, ERC3009, AccessControl {
    bytes32 public constant FAUCET_ROLE = keccak256("FAUCET_ROLE");

    constructor(address admin) ERC20("USD Coin (test)", "USDC") ERC20Permit("USD Coin (test)") {
        _grantRole(DEFAULT_ADMIN_ROLE, admin);
        _grantRole(FAUCET_ROLE, admin);
    }

    /// @inheritdoc ERC20
    function decimals() public pure override returns (uint8) {
        return 6;
    }

    /// @notice The version of the EIP-712 domain of {permit}, as real USDC exposes it.
    /// @return The version, "1" (OpenZeppelin's `ERC20Permit`).
    function version() external view returns (string memory) {
        return _EIP712Version();
    }

    /// @notice Mints `amount` test USDC to `to`.
    /// @param to The receiver.
    /// @param amount The amount in micro-USDC (6 decimals).
    function mint(address to, uint256 amount) external onlyRole(FAUCET_ROLE) {
        _mint(to, amount);
    }
}
