// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";
import {ERC2771Context} from "@openzeppelin/contracts/metatx/ERC2771Context.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Context} from "@openzeppelin/contracts/utils/Context.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {IERC3009} from "../interfaces/IERC3009.sol";
import {ILoanBook} from "../interfaces/ILoanBook.sol";
import {IPaymentRouter} from "../interfaces/IPaymentRouter.sol";
import {TryPermit} from "../utils/TryPermit.sol";

/// @title PaymentRouter
/// @notice Merchants' payments and their refunds: at most one payment per off-chain id and terms, paid directly by
/// the payer or on credit from the lending pool (one loan, or 2 to 12 installments), the fee to the treasury (on
/// credit: to the pool's insurance reserve) and the rest to the merchant in the same call, refunds from the merchant
/// within what was paid, which settle a payment's loans as buy-now-pay-later lenders do (principal and interest
/// reduced pro rata).
/// @dev The router never holds USDC or an allowance after a call: a direct payment moves from the payer to the
/// merchant and the treasury (by the payer's EIP-3009 authorization, {payWithAuthorization}: through the router, in
/// the same call), a direct refund from the merchant to the payer. A payment on credit ({payWithLoans},
/// OPERATOR_ROLE: the service) funds one loan per installment with `loanBook.fundLoanFor`, the payer as the borrower
/// and the router as the recipient: the same loan a P2P borrower would take for that part of the price (D-127), its
/// net amount the part less the merchant's fee and the rest of its principal its insurance fee, in the reserve. So
/// the router receives the amount less the fee and passes all of it on to the merchant. A refund of it comes from
/// the merchant to the router, which settles the payment's loans with the loan book's {ILoanBook-refundLoan} in
/// proportion to their principals (the pool's part pulled into the vault, approved exactly) and sends the payer what
/// they had paid above the smaller loans. The router must hold the loan book's OPERATOR_ROLE and REFUNDER_ROLE
/// (granted at deployment); the admin grants this router's OPERATOR_ROLE to the service.
///
/// Fees: {pay} charges `feeBps` (default 1 %, the specification's direct method); a payment on credit charges the
/// installments' own fees (the service's 2 % for credit, 1.5 % per installment for split), each at most
/// {MAX_FEE_BPS} of its price.
///
/// Error mapping for the API (see {IPaymentRouter}): {PaymentRouterAlreadyPaid} -> 409 ALREADY_PAID,
/// {PaymentRouterRefundTooLarge} -> 400 INVALID_AMOUNT, `ERC20InsufficientBalance` -> 400 INSUFFICIENT_BALANCE,
/// `StakingVaultInsufficientLiquidity` -> 400 INSUFFICIENT_LIQUIDITY, `EnforcedPause` -> 503 VAULT_PAUSED,
/// `LoanBookInvalidPrincipal` -> 400 INVALID_AMOUNT, `LoanBookInvalidDuration` -> 400 INVALID_DURATION; the other
/// refusals of a payment on credit ({PaymentRouterInvalidInstallments}, {PaymentRouterInstallmentFeeTooHigh},
/// {PaymentRouterPrincipalBelowPrice}, {PaymentRouterInterestBelowExpectedLoss}, the loan book's other errors) refuse
/// the service's own terms: 500 INTERNAL_ERROR.
contract PaymentRouter is AccessControl, ReentrancyGuardTransient, ERC2771Context, IPaymentRouter {
    using SafeERC20 for IERC20;
    using TryPermit for IERC20;

    /// @inheritdoc IPaymentRouter
    bytes32 public constant OPERATOR_ROLE = keccak256("OPERATOR_ROLE");

    /// @inheritdoc IPaymentRouter
    /// @dev 10 %: far above any method's fee (1 % to 2 %), low enough that a mistaken setting cannot take the payment.
    uint256 public constant MAX_FEE_BPS = 1_000;

    /// @inheritdoc IPaymentRouter
    /// @dev The specification's longest split.
    uint256 public constant MAX_INSTALLMENTS = 12;

    uint256 internal constant BPS = 10_000;

    IERC20 private immutable _asset;

    /// @inheritdoc IPaymentRouter
    ILoanBook public immutable loanBook;

    /// @inheritdoc IPaymentRouter
    address public treasury;

    /// @inheritdoc IPaymentRouter
    uint256 public feeBps;

    mapping(bytes32 key => Payment) private _payments;

    mapping(address merchant => mapping(bytes32 refundRef => bool)) private _refundMade;

    mapping(bytes32 key => uint256[] loanIds) private _loanIds;

    /// @param asset_ The token payments are made in (USDC).
    /// @param loanBook_ The loan book that funds payments on credit, lending `asset_` (grant this router its
    /// OPERATOR_ROLE).
    /// @param admin Receives DEFAULT_ADMIN_ROLE (sets the fee and the treasury, grants OPERATOR_ROLE).
    /// @param treasury_ Where fees go.
    /// @param forwarder The trusted ERC-2771 forwarder (the platform's `TrustMintForwarder`).
    constructor(IERC20 asset_, ILoanBook loanBook_, address admin, address treasury_, address forwarder)
        ERC2771Context(forwarder)
    {
        if (
            address(asset_) == address(0) || address(loanBook_) == address(0) || admin == address(0)
                || forwarder == address(0)
        ) revert PaymentRouterZeroAddress();
        address loanBookAsset = loanBook_.asset();
        if (loanBookAsset != address(asset_)) revert PaymentRouterAssetMismatch(address(asset_), loanBookAsset);
        _asset = asset_;
        loanBook = loanBook_;
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
    function loansOf(bytes32 ref, address merchant, uint256 amount) external view returns (uint256[] memory) {
        return _loanIds[paymentKey(ref, merchant, amount)];
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

    /// @inheritdoc IPaymentRouter
    function payWithAuthorization(
        bytes32 ref,
        address merchant,
        uint256 amount,
        address payer,
        uint256 validAfter,
        uint256 validBefore,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external nonReentrant {
        if (payer == address(0)) revert PaymentRouterZeroAddress();
        if (payer == address(this)) revert PaymentRouterSelfAddress();
        (bytes32 key, uint256 fee) = _recordDirect(ref, merchant, amount, payer);
        // Into the router, bound to this payment by its nonce, then out at once: the router holds nothing after the call.
        IERC3009(address(_asset)).receiveWithAuthorization(
            payer, address(this), amount, validAfter, validBefore, key, v, r, s
        );
        _asset.safeTransfer(merchant, amount - fee);
        if (fee > 0) _asset.safeTransfer(treasury, fee);
    }

    /* OPERATOR */

    /// @inheritdoc IPaymentRouter
    function payWithLoans(bytes32 ref, address merchant, address payer, Installment[] calldata installments)
        external
        onlyRole(OPERATOR_ROLE)
        nonReentrant
    {
        // Validate: the payer, the installments (which make the amount and the fee), then the terms as {pay} does.
        if (payer == address(0)) revert PaymentRouterZeroAddress();
        if (payer == address(this)) revert PaymentRouterSelfAddress();
        (uint256 amount, uint256 fee) = _checkInstallments(payer, installments);
        bytes32 key = _checkNewPayment(ref, merchant, amount);
        // Effects: the payment is recorded paid before the loan book is called.
        uint256 count = installments.length;
        PaymentMethod method = count == 1 ? PaymentMethod.Credit : PaymentMethod.Split;
        _recordPayment(key, payer, method, merchant, amount, fee);
        // The loan book (immutable, trusted, holding the vault's LENDER_ROLE) assigns the ids and has the vault send
        // this router each net amount, keeping the rest of the principal as the loan's insurance fee (D-101, D-127):
        // `amount - fee` in all. It calls no one back, and this function is nonReentrant, so the ids are stored once
        // all the loans exist.
        uint256[] memory loanIds = new uint256[](count);
        for (uint256 i; i < count; ++i) {
            Installment calldata installment = installments[i];
            loanIds[i] = loanBook.fundLoanFor(
                installment.loanRef,
                payer,
                address(this),
                installment.principal,
                installment.interest,
                installment.principal - (installment.price - installment.fee),
                installment.durationDays
            );
        }
        _loanIds[key] = loanIds;
        emit PaymentPaid(ref, payer, merchant, amount, fee);
        emit PaymentFinanced(ref, merchant, payer, amount, method, loanIds);
        // Transfer last: all of what the vault sent, so the router holds nothing.
        _asset.safeTransfer(merchant, amount - fee);
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
        (, uint256 fee) = _recordDirect(ref, merchant, amount, payer);
        // Transfers last.
        _asset.safeTransferFrom(payer, merchant, amount - fee);
        if (fee > 0) _asset.safeTransferFrom(payer, treasury, fee);
    }

    /// @dev A direct payment's checks and effects, before its transfers: its key and fee.
    function _recordDirect(bytes32 ref, address merchant, uint256 amount, address payer)
        private
        returns (bytes32 key, uint256 fee)
    {
        // Validate.
        key = _checkNewPayment(ref, merchant, amount);
        // Effects. The fee is at most 10 % of an amount that fits 128 bits: no overflow, and it fits too.
        fee = amount * feeBps / BPS;
        _recordPayment(key, payer, PaymentMethod.Direct, merchant, amount, fee);
        emit PaymentPaid(ref, payer, merchant, amount, fee);
    }

    /// @dev {payWithLoans}'s checks of the installments, in order: their count, then each one's price, fee, principal
    /// and interest (D-127). Returns the payment's amount (the prices' sum) and fee (the fees' sum).
    function _checkInstallments(address payer, Installment[] calldata installments)
        private
        view
        returns (uint256 amount, uint256 fee)
    {
        uint256 count = installments.length;
        if (count == 0 || count > MAX_INSTALLMENTS) revert PaymentRouterInvalidInstallments(count);
        for (uint256 i; i < count; ++i) {
            Installment calldata installment = installments[i];
            uint256 price = installment.price;
            // Each price fits 128 bits, so twelve of them cannot overflow the sum, checked below like {pay}'s
            // amount; the loan book then holds each principal to its own limits.
            if (price > type(uint128).max) revert PaymentRouterInvalidAmount(price);
            uint256 maxFee = price * MAX_FEE_BPS / BPS;
            if (installment.fee > maxFee) revert PaymentRouterInstallmentFeeTooHigh(i, installment.fee, maxFee);
            // The same loan a P2P borrower would take (D-127): the net amount paid out, the rest of the principal
            // (at least the merchant's fee) the reserve's, and interest that pays the depositors at least the loan's
            // provision. A principal of at least the price also keeps every refund within the principals.
            if (installment.principal < price) revert PaymentRouterPrincipalBelowPrice(i, installment.principal, price);
            uint256 minInterest = loanBook.minInterestOf(payer, installment.principal);
            if (installment.interest < minInterest) {
                revert PaymentRouterInterestBelowExpectedLoss(i, installment.interest, minInterest);
            }
            amount += price;
            // Within the prices' sum, since each fee is at most a tenth of its price.
            fee += installment.fee;
        }
    }

    /// @dev The checks of a new payment's terms, by any method; returns its key.
    function _checkNewPayment(bytes32 ref, address merchant, uint256 amount) private view returns (bytes32 key) {
        if (ref == bytes32(0)) revert PaymentRouterEmptyRef();
        if (merchant == address(0)) revert PaymentRouterZeroAddress();
        if (merchant == address(this)) revert PaymentRouterSelfAddress();
        if (amount == 0 || amount > type(uint128).max) revert PaymentRouterInvalidAmount(amount);
        key = paymentKey(ref, merchant, amount);
        if (_payments[key].payer != address(0)) revert PaymentRouterAlreadyPaid(ref, merchant, amount);
    }

    function _recordPayment(
        bytes32 key,
        address payer,
        PaymentMethod method,
        address merchant,
        uint256 amount,
        uint256 fee
    ) private {
        Payment storage payment = _payments[key];
        payment.payer = payer;
        payment.method = method;
        payment.merchant = merchant;
        payment.amount = SafeCast.toUint128(amount);
        payment.fee = SafeCast.toUint128(fee);
    }

    function _refund(bytes32 ref, uint256 paymentAmount, bytes32 refundRef, uint256 amount, address merchant) private {
        // Validate: the caller finds only its own payments (the merchant is part of the key).
        bytes32 key = paymentKey(ref, merchant, paymentAmount);
        Payment storage payment = _payments[key];
        address payer = payment.payer;
        if (payer == address(0)) revert PaymentRouterNotPaid(ref, merchant, paymentAmount);
        if (refundRef == bytes32(0)) revert PaymentRouterEmptyRef();
        if (_refundMade[merchant][refundRef]) revert PaymentRouterRefundExists(merchant, refundRef);
        if (amount == 0) revert PaymentRouterInvalidAmount(amount);
        uint256 refundable = payment.amount - payment.refunded;
        if (amount > refundable) revert PaymentRouterRefundTooLarge(ref, amount, refundable);
        // Effects. Within `refundable`, which fits 128 bits.
        uint128 totalRefunded = payment.refunded + uint128(amount);
        payment.refunded = totalRefunded;
        _refundMade[merchant][refundRef] = true;
        emit PaymentRefunded(ref, refundRef, merchant, payer, paymentAmount, amount, totalRefunded);
        if (payment.method == PaymentMethod.Direct) {
            _asset.safeTransferFrom(merchant, payer, amount);
        } else {
            _refundToLoans(ref, refundRef, merchant, payer, amount, _loanIds[key]);
        }
    }

    /// @dev A refund of `amount` of a payment on credit settles its loans (`loanBook.refundLoan`), as buy-now-pay-later
    /// lenders do. What the pool still has written off on a defaulted loan is made good first (D-124: no refund pays a
    /// defaulter while the pool carries its default); the rest is shared in proportion to what is left of each principal:
    /// each loan's principal, and its interest pro rata, fall by its share; the pool takes back what it still has out,
    /// and the payer gets back what they had paid above the smaller loans (the principal here, the interest from the
    /// vault). The principals always add up to at least what is left to refund (they start at or above the prices,
    /// D-127, and each refund takes exactly its amount off them), so the shares fit.
    function _refundToLoans(
        bytes32 ref,
        bytes32 refundRef,
        address merchant,
        address payer,
        uint256 amount,
        uint256[] memory loanIds
    ) private {
        uint256[] memory shares = _refundShares(amount, loanIds);
        uint256 count = loanIds.length;
        // Transfers and the loan book's settlements: the merchant's refund to the router, each loan's pool part from
        // the router into the vault (approved exactly, then reset), the payer's part last.
        _asset.safeTransferFrom(merchant, address(this), amount);
        uint256 toPool;
        uint256 toPayer;
        for (uint256 i; i < count; ++i) {
            if (shares[i] == 0) continue;
            _asset.forceApprove(address(loanBook), shares[i]);
            (uint256 pooled, uint256 returned,) = loanBook.refundLoan(loanIds[i], shares[i]);
            toPool += pooled;
            toPayer += returned;
        }
        _asset.forceApprove(address(loanBook), 0);
        emit PaymentRefundApplied(ref, refundRef, merchant, toPool, toPayer);
        if (toPayer > 0) _asset.safeTransfer(payer, toPayer);
    }

    /// @dev {_refundToLoans}'s shares of `amount`: each defaulted loan's written-off principal first, then the rest in
    /// proportion to what is left of the principals (rounded down, the last loan taking what is left within its room, a
    /// second pass placing what rounding left over: a few micro-units at most).
    function _refundShares(uint256 amount, uint256[] memory loanIds) private view returns (uint256[] memory shares) {
        uint256 count = loanIds.length;
        shares = new uint256[](count);
        uint256[] memory room = new uint256[](count);
        uint256 left = amount;
        for (uint256 i; i < count; ++i) {
            ILoanBook.Loan memory loan = loanBook.getLoan(loanIds[i]);
            if (loan.status == ILoanBook.LoanStatus.Defaulted) {
                shares[i] = Math.min(left, loan.principal - loan.principalRepaid);
                left -= shares[i];
            }
            room[i] = loan.principal - shares[i];
        }
        uint256 total;
        for (uint256 i; i < count; ++i) {
            total += room[i];
        }
        uint256 rest = left;
        for (uint256 i; i < count && left > 0; ++i) {
            uint256 share = i == count - 1 ? left : Math.mulDiv(rest, room[i], total);
            share = Math.min(share, Math.min(room[i], left));
            shares[i] += share;
            room[i] -= share;
            left -= share;
        }
        for (uint256 i; i < count && left > 0; ++i) {
            uint256 more = Math.min(left, room[i]);
            shares[i] += more;
            left -= more;
        }
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
