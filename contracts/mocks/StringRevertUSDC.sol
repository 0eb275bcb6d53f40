// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// @title StringRevertUSDC
/// @notice A 6-decimal token that refuses a transfer as Circle's USDC (FiatToken) does: with its reason strings,
/// "ERC20: transfer amount exceeds allowance" and "ERC20: transfer amount exceeds balance", where OpenZeppelin 5
/// (the test USDC) has custom errors. For tests of the service's reading of a token's refusals; never deployed.
contract StringRevertUSDC is ERC20 {
    constructor() ERC20("USD Coin (string reverts)", "USDC") {}

    /// @inheritdoc ERC20
    function decimals() public pure override returns (uint8) {
        return 6;
    }

    /// @notice Mints `amount` to `to` (anyone: a test token).
    /// @param to The receiver.
    /// @param amount The amount.
    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    /// @inheritdoc ERC20
    function transferFrom(address from, address to, uint256 value) public override returns (bool) {
        // solhint-disable-next-line gas-custom-errors
        require(value <= allowance(from, _msgSender()), "ERC20: transfer amount exceeds allowance");
        // solhint-disable-next-line gas-custom-errors
        require(value <= balanceOf(from), "ERC20: transfer amount exceeds balance");
        return super.transferFrom(from, to, value);
    }
}
