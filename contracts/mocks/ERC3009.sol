// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {IERC3009} from "../interfaces/IERC3009.sol";

/// @title ERC3009
/// @notice EIP-3009 for the test USDC, with the type hashes and the checks of Circle's `EIP3009` (FiatToken v2.2):
/// valid strictly after `validAfter` and strictly before `validBefore`, each nonce used or cancelled once per holder,
/// the signature an ECDSA one of the holder or, for a contract wallet, accepted by its EIP-1271 `isValidSignature`.
/// @dev Signs over the token's EIP-712 domain (the one of `permit`). Circle's token reverts with strings; these are
/// custom errors of the same checks.
abstract contract ERC3009 is ERC20, EIP712, IERC3009 {
    /// @notice The EIP-712 type hash of a `TransferWithAuthorization`.
    bytes32 public constant TRANSFER_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );

    /// @notice The EIP-712 type hash of a `ReceiveWithAuthorization`.
    bytes32 public constant RECEIVE_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );

    /// @notice The EIP-712 type hash of a `CancelAuthorization`.
    bytes32 public constant CANCEL_AUTHORIZATION_TYPEHASH = keccak256("CancelAuthorization(address authorizer,bytes32 nonce)");

    mapping(address authorizer => mapping(bytes32 nonce => bool)) private _authorizationStates;

    /// @notice The authorization `nonce` of `authorizer` was used or cancelled already.
    error ERC3009AuthorizationUsed(address authorizer, bytes32 nonce);

    /// @notice The authorization is not valid before `validAfter`.
    error ERC3009AuthorizationNotYetValid(uint256 validAfter);

    /// @notice The authorization expired at `validBefore`.
    error ERC3009AuthorizationExpired(uint256 validBefore);

    /// @notice The signature is not `authorizer`'s over this authorization.
    error ERC3009InvalidSignature(address authorizer);

    /// @notice Only the payee `payee` may submit a `ReceiveWithAuthorization`; `caller` did.
    error ERC3009CallerNotPayee(address caller, address payee);

    /// @inheritdoc IERC3009
    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool) {
        return _authorizationStates[authorizer][nonce];
    }

    /// @inheritdoc IERC3009
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
    ) external {
        bytes32 structHash =
            keccak256(abi.encode(TRANSFER_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce));
        _useAuthorization(from, structHash, validAfter, validBefore, nonce, abi.encodePacked(r, s, v));
        _transfer(from, to, value);
    }

    /// @inheritdoc IERC3009
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
    ) external {
        if (to != _msgSender()) revert ERC3009CallerNotPayee(_msgSender(), to);
        bytes32 structHash =
            keccak256(abi.encode(RECEIVE_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce));
        _useAuthorization(from, structHash, validAfter, validBefore, nonce, abi.encodePacked(r, s, v));
        _transfer(from, to, value);
    }

    /// @inheritdoc IERC3009
    function cancelAuthorization(address authorizer, bytes32 nonce, uint8 v, bytes32 r, bytes32 s) external {
        _requireUnused(authorizer, nonce);
        _requireSigned(
            authorizer, keccak256(abi.encode(CANCEL_AUTHORIZATION_TYPEHASH, authorizer, nonce)), abi.encodePacked(r, s, v)
        );
        _authorizationStates[authorizer][nonce] = true;
        emit AuthorizationCanceled(authorizer, nonce);
    }

    function _useAuthorization(
        address authorizer,
        bytes32 structHash,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) private {
        if (block.timestamp <= validAfter) revert ERC3009AuthorizationNotYetValid(validAfter);
        if (block.timestamp >= validBefore) revert ERC3009AuthorizationExpired(validBefore);
        _requireUnused(authorizer, nonce);
        _requireSigned(authorizer, structHash, signature);
        _authorizationStates[authorizer][nonce] = true;
        emit AuthorizationUsed(authorizer, nonce);
    }

    function _requireUnused(address authorizer, bytes32 nonce) private view {
        if (_authorizationStates[authorizer][nonce]) revert ERC3009AuthorizationUsed(authorizer, nonce);
    }

    function _requireSigned(address authorizer, bytes32 structHash, bytes memory signature) private view {
        if (!SignatureChecker.isValidSignatureNow(authorizer, _hashTypedDataV4(structHash), signature)) {
            revert ERC3009InvalidSignature(authorizer);
        }
    }
}
