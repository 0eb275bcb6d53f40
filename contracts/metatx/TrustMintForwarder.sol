// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ERC2771Forwarder} from "@openzeppelin/contracts/metatx/ERC2771Forwarder.sol";

/// @title TrustMintForwarder
/// @notice The platform's ERC-2771 forwarder: relays a user's EIP-712-signed `ForwardRequest` to a platform contract,
/// which then sees the signer, not the relayer, as the caller. The service's relayer pays the gas; the managed wallets
/// only sign, and never need ETH.
/// @dev OpenZeppelin's `ERC2771Forwarder` (5.0.1 or later) unchanged. EIP-712 domain: name "TrustMintForwarder",
/// version "1", the chain id, this contract. Signed type:
/// `ForwardRequest(address from,address to,uint256 value,uint256 gas,uint256 nonce,uint48 deadline,bytes data)`,
/// where `nonce` is {nonces}(from), consumed in order, one per executed request.
///
/// `StakingVault`, `LoanBook`, `SocialVaultFactory` and every `SocialVault` clone trust this forwarder (fixed at their
/// construction). Execution is permissionless: anyone holding a signed request can submit it, and the target only
/// ever acts for the signer. `execute` reverts with `FailedCall()` when the target call reverts (the target's error is
/// not bubbled up; simulate the call from the user's address first) and leaves the nonce unused; `executeBatch` does
/// not revert on a target revert: it consumes the nonce and emits `ExecutedForwardRequest(signer, nonce, false)`.
contract TrustMintForwarder is ERC2771Forwarder {
    constructor() ERC2771Forwarder("TrustMintForwarder") {}
}
