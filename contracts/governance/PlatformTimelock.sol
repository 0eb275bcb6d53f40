// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TimelockController} from "@openzeppelin/contracts/governance/TimelockController.sol";

/// @title PlatformTimelock
/// @notice The default admin of the platform's contracts (the vault, the rate model, the loan book and the payment
/// router): every parameter change, role grant and reserve release is scheduled here in public and runs only after
/// {getMinDelay} seconds, so depositors and borrowers see it coming and can leave first.
/// @dev OpenZeppelin's `TimelockController` unchanged. One admin key (a multisig in production) proposes, cancels and
/// executes; the timelock administers itself, so a change of its delay or of its proposers waits the delay too. The
/// service's online key holds none of its roles (docs/contracts-lending.md, "Roles").
contract PlatformTimelock is TimelockController {
    /// @notice The admin given is the zero address: nobody could ever propose a change.
    error PlatformTimelockZeroAddress();

    /// @param minDelay The delay in seconds between scheduling and executing an operation.
    /// @param admin The proposer, canceller and executor: a multisig in production.
    constructor(uint256 minDelay, address admin) TimelockController(minDelay, _only(admin), _only(admin), address(0)) {}

    function _only(address account) private pure returns (address[] memory accounts) {
        if (account == address(0)) revert PlatformTimelockZeroAddress();
        accounts = new address[](1);
        accounts[0] = account;
    }
}
