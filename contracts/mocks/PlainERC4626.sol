// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ERC4626} from "@openzeppelin/contracts/token/ERC20/extensions/ERC4626.sol";

/// @title PlainERC4626
/// @notice OpenZeppelin 5's ERC4626 over an ERC-20 with nothing added: the gas baseline the StakingVault is measured
/// against. Not for deployment.
contract PlainERC4626 is ERC4626 {
    constructor(IERC20 asset_) ERC20("Plain Vault", "PLAIN") ERC4626(asset_) {}
}
