// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";

/// @title MockUSDC
/// @notice 6-decimal test USDC for development and test chains; minted only by the faucet role.
contract MockUSDC is ERC20, AccessControl {
    bytes32 public constant FAUCET_ROLE = keccak256("FAUCET_ROLE");

    constructor(address admin) ERC20("USD Coin (test)", "USDC") {
        _grantRole(DEFAULT_ADMIN_ROLE, admin);
        _grantRole(FAUCET_ROLE, admin);
    }

    /// @inheritdoc ERC20
    function decimals() public pure override returns (uint8) {
        return 6;
    }

    /// @notice Mints `amount` test USDC to `to`.
    /// @param to The receiver.
    /// @param amount The amount in micro-USDC (6 decimals).
    function mint(address to, uint256 amount) external onlyRole(FAUCET_ROLE) {
        _mint(to, amount);
    }
}
