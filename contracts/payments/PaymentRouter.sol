// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";
import {ERC2771Context} from "@openzeppelin/contracts/metatx/ERC2771Context.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Context} from "@openzeppelin/contracts/utils/Context.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {IPaymentRouter} from "../interfaces/IPaymentRouter.sol";
import {TryPermit} from "../utils/TryPermit.sol";

/// @title PaymentRouter
/// @notice Merchants' direct payments and their refunds: at most one payment per off-chain id, the fee to the
/// treasury and the rest to the merchant in the payer's own transaction, refunds from the merchant within what was
/// paid.
/// @dev The router never holds USDC: a payment moves from the payer to the merchant and the treasury, a refund from
/// the merchant to the payer, each in one call. Default fee 1 % (the specification's direct method).
contract PaymentRouter is AccessControl, ReentrancyGuardTransient, ERC2771Context, IPaymentRouter {
    using SafeERC20 for IERC20;
    using TryPermit for IERC20;

    /// @inheritdoc IPaymentRouter
    /// @dev 10 %: far above any method's fee (1 % to 2 %), low enough that a mistaken setting cannot take the payment.
    uint256 public constant MAX_FEE_BPS = 1_000;

    uint256 internal constant BPS = 10_000;

    IERC20 private immutable _asset;

    /// @inheritdoc IPaymentRouter
    address public treasury;

    /// @inheritdoc IPaymentRouter
    uint256 public feeBps;

    mapping(bytes32 key => Payment) private _payments;

    mapping(address merchant => mapping(bytes32 refundRef => bool)) private _refundMade;

    /// @param asset_ The token payments are made in (USDC).
    /// @param admin Receives DEFAULT_ADMIN_ROLE (sets the fee and the treasury).
    /// @param treasury_ Where fees go.
    /// @param forwarder The trusted ERC-2771 forwarder (the platform's `TrustMintForwarder`).
    constructor(IERC20 asset_, address admin, address treasury_, address forwarder) ERC2771Context(forwarder) {
        if (address(asset_) == address(0) || admin == address(0) || forwarder == address(0)) {
            revert PaymentRouterZeroAddress();
        }
        _asset = asset_;
        _grantRole(DEFAULT_ADMIN_ROLE, admin);
        _setFee(100, treasury_);
    }

    /* VIEWS */

    /// @inheritdoc IPaymentRouter
    function asset() external view returns (address) {
        return address(_asset);
    }

    /// @inheritdoc IPaymentRouter
    function paymentKey(bytes32 ref, address merchant, uint256 amount) public pure returns (bytes32) {
        return keccak256(abi.encode(ref, merchant, amount));
    }

    /// @inheritdoc IPaymentRouter
    function paymentOf(bytes32 ref, address merchant, uint256 amount) external view returns (Payment memory) {
        return _payments[paymentKey(ref, merchant, amount)];
    }

    /// @inheritdoc IPaymentRouter
    function refundMade(address merchant, bytes32 refundRef) external view returns (bool) {
        return _refundMade[merchant][refundRef];
    }

    /* PAYER */

    /// @inheritdoc IPaymentRouter
    function pay(bytes32 ref, address merchant, uint256 amount) external nonReentrant {
        _pay(ref, merchant, amount, _msgSender());
    }

    /// @inheritdoc IPaymentRouter
    function payWithPermit(bytes32 ref, address merchant, uint256 amount, uint256 deadline, uint8 v, bytes32 r, bytes32 s)
        external
        nonReentrant
    {
        address payer = _msgSender();
        _asset.tryPermit(payer, amount, deadline, v, r, s);
        _pay(ref, merchant, amount, payer);
    }

    /* MERCHANT */

    /// @inheritdoc IPaymentRouter
    function refund(bytes32 ref, uint256 paymentAmount, bytes32 refundRef, uint256 amount) external nonReentrant {
        _refund(ref, paymentAmount, refundRef, amount, _msgSender());
    }

    /// @inheritdoc IPaymentRouter
    function refundWithPermit(
        bytes32 ref,
        uint256 paymentAmount,
        bytes32 refundRef,
        uint256 amount,
        uint256 deadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external nonReentrant {
        address merchant = _msgSender();
        _asset.tryPermit(merchant, amount, deadline, v, r, s);
        _refund(ref, paymentAmount, refundRef, amount, merchant);
    }

    /* ADMIN */

    /// @inheritdoc IPaymentRouter
    function setFee(uint256 newFeeBps, address newTreasury) external onlyRole(DEFAULT_ADMIN_ROLE) {
        _setFee(newFeeBps, newTreasury);
    }

    /* INTERNAL */

    function _pay(bytes32 ref, address merchant, uint256 amount, address payer) private {
        // Validate.
        if (ref == bytes32(0)) revert PaymentRouterEmptyRef();
        if (merchant == address(0)) revert PaymentRouterZeroAddress();
        if (merchant == address(this)) revert PaymentRouterSelfAddress();
        if (amount == 0 || amount > type(uint128).max) revert PaymentRouterInvalidAmount(amount);
        Payment storage payment = _payments[paymentKey(ref, merchant, amount)];
        if (payment.payer != address(0)) revert PaymentRouterAlreadyPaid(ref, merchant, amount);
        // Effects. The fee is at most 10 % of an amount that fits 128 bits: no overflow, and it fits too.
        uint256 fee = amount * feeBps / BPS;
        payment.payer = payer;
        payment.merchant = merchant;
        payment.amount = SafeCast.toUint128(amount);
        payment.fee = SafeCast.toUint128(fee);
        emit PaymentPaid(ref, payer, merchant, amount, fee);
        // Transfers last.
        _asset.safeTransferFrom(payer, merchant, amount - fee);
        if (fee > 0) _asset.safeTransferFrom(payer, treasury, fee);
    }

    function _refund(bytes32 ref, uint256 paymentAmount, bytes32 refundRef, uint256 amount, address merchant) private {
        // Validate: the caller finds only its own payments (the merchant is part of the key).
        Payment storage payment = _payments[paymentKey(ref, merchant, paymentAmount)];
        if (payment.payer == address(0)) revert PaymentRouterNotPaid(ref, merchant, paymentAmount);
        if (refundRef == bytes32(0)) revert PaymentRouterEmptyRef();
        if (_refundMade[merchant][refundRef]) revert PaymentRouterRefundExists(merchant, refundRef);
        if (amount == 0) revert PaymentRouterInvalidAmount(amount);
        uint256 refundable = payment.amount - payment.refunded;
        if (amount > refundable) revert PaymentRouterRefundTooLarge(ref, amount, refundable);
        // Effects. Within `refundable`, which fits 128 bits.
        uint128 totalRefunded = payment.refunded + uint128(amount);
        payment.refunded = totalRefunded;
        _refundMade[merchant][refundRef] = true;
        emit PaymentRefunded(ref, refundRef, merchant, payment.payer, paymentAmount, amount, totalRefunded);
        _asset.safeTransferFrom(merchant, payment.payer, amount);
    }

    function _setFee(uint256 newFeeBps, address newTreasury) private {
        if (newFeeBps > MAX_FEE_BPS) revert PaymentRouterInvalidFee(newFeeBps);
        if (newTreasury == address(0)) revert PaymentRouterZeroAddress();
        if (newTreasury == address(this)) revert PaymentRouterSelfAddress();
        feeBps = newFeeBps;
        treasury = newTreasury;
        emit PaymentFeeUpdated(newFeeBps, newTreasury);
    }

    /// @dev The signer of a request relayed by the trusted forwarder, else `msg.sender`.
    function _msgSender() internal view override(Context, ERC2771Context) returns (address) {
        return ERC2771Context._msgSender();
    }

    /// @dev The calldata without the forwarder's 20-byte suffix.
    function _msgData() internal view override(Context, ERC2771Context) returns (bytes calldata) {
        return ERC2771Context._msgData();
    }

    /// @dev 20: the signer's address appended by the forwarder.
    function _contextSuffixLength() internal view override(Context, ERC2771Context) returns (uint256) {
        return ERC2771Context._contextSuffixLength();
    }
}
