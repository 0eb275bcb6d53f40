// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @title IERC3009
/// @notice EIP-3009 ("Transfer With Authorization") as USDC implements it: a transfer its holder signs off chain
/// (EIP-712, over the token's own domain, the one of its EIP-2612 `permit`), submitted by anyone, with a 32-byte nonce
/// of the holder's choosing that is used once. The platform uses {receiveWithAuthorization}, which only the payee can
/// submit, so a signed authorization cannot be front-run into a plain transfer that skips the payee's own logic.
interface IERC3009 {
    /// @notice An authorization of `authorizer` was used (its transfer made).
    /// @param authorizer The holder who signed it.
    /// @param nonce Its nonce.
    event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce);

    /// @notice An authorization of `authorizer` was cancelled before use.
    /// @param authorizer The holder who signed it.
    /// @param nonce Its nonce.
    event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce);

    /// @notice Whether `authorizer`'s authorization `nonce` was used or cancelled.
    /// @param authorizer The holder.
    /// @param nonce The authorization's nonce.
    /// @return True once used or cancelled.
    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool);

    /// @notice Transfers `value` from `from` to `to` with `from`'s signed authorization, submitted by anyone.
    /// @param from The payer, who signed.
    /// @param to The payee.
    /// @param value The amount.
    /// @param validAfter The time after which it is valid (Unix seconds).
    /// @param validBefore The time before which it is valid (Unix seconds).
    /// @param nonce Its unique nonce.
    /// @param v The signature's `v`.
    /// @param r The signature's `r`.
    /// @param s The signature's `s`.
    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external;

    /// @notice {transferWithAuthorization} that only the payee `to` may submit (typed `ReceiveWithAuthorization`).
    /// @param from The payer, who signed.
    /// @param to The payee: the caller.
    /// @param value The amount.
    /// @param validAfter The time after which it is valid (Unix seconds).
    /// @param validBefore The time before which it is valid (Unix seconds).
    /// @param nonce Its unique nonce.
    /// @param v The signature's `v`.
    /// @param r The signature's `r`.
    /// @param s The signature's `s`.
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external;

    /// @notice Cancels `authorizer`'s unused authorization `nonce` with their signature (typed `CancelAuthorization`).
    /// @param authorizer The holder, who signed.
    /// @param nonce The authorization's nonce.
    /// @param v The signature's `v`.
    /// @param r The signature's `r`.
    /// @param s The signature's `s`.
    function cancelAuthorization(address authorizer, bytes32 nonce, uint8 v, bytes32 r, bytes32 s) external;
}
