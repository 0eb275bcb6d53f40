// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";

/// @title TryPermit
/// @notice Applies an EIP-2612 permit for the calling contract, tolerating a permit that was already used.
/// @dev OpenZeppelin's front-running-safe pattern (see the notes of `IERC20Permit`): a permit is public once it is
/// in the mempool, so anyone can submit it to the token first, and a `permit` call that reverts would then block the
/// operation it was meant for. Its failure is therefore ignored, and the `transferFrom` that follows checks the
/// allowance, which a front-run permit has set all the same (`ERC20InsufficientAllowance` if there is none).
///
/// The spender is always the calling contract (internal library functions run in its context), and callers pass
/// their `_msgSender()` as the owner, never an argument: nobody can spend another account's permit into their own
/// position.
library TryPermit {
    /// @dev Calls `token.permit(owner, address(this), value, deadline, v, r, s)` and ignores a revert.
    function tryPermit(IERC20 token, address owner, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)
        internal
    {
        try IERC20Permit(address(token)).permit(owner, address(this), value, deadline, v, r, s) {} catch {}
    }
}
