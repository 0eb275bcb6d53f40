// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @title IPaymentRouter
/// @notice Merchants' payments in USDC: a payer pays a payment once, the merchant receives the amount less the
/// platform's fee, the fee goes to the treasury, and the merchant may refund up to what was paid.
/// @dev A payment is known by its terms: the service's off-chain id (`ref`), the merchant and the amount, hashed into
/// its key ({paymentKey}). The contract pays a key at most once and keeps the sum of its refunds within its amount,
/// whoever calls it and however often; a payment of the same ref to another merchant or of another amount is another
/// payment, so nobody can make the real one unpayable by paying its ref first. A refund is known by its merchant and
/// its off-chain id ({refundMade}): made once, and no other merchant can use that id up. Money values are in the
/// asset's units (USDC micro-units); fees are in basis points of the amount, rounded down (the merchant's favour).
/// Every function may be called through the trusted ERC-2771 forwarder (`trustedForwarder()`): the signer of a
/// forwarded request is then the caller (the payer of a payment, the merchant of a refund).
///
/// Error mapping for the API: {PaymentRouterAlreadyPaid} -> 409 ALREADY_PAID, {PaymentRouterRefundTooLarge} -> 400
/// INVALID_AMOUNT, the token's `ERC20InsufficientBalance` -> 400 INSUFFICIENT_BALANCE.
interface IPaymentRouter {
    /* TYPES */

    /// @notice A paid payment as stored.
    /// @param payer Who paid (and receives refunds).
    /// @param merchant Who received the net amount (and alone may refund).
    /// @param amount The gross amount paid.
    /// @param fee The fee the treasury received.
    /// @param refunded The sum of the refunds so far.
    struct Payment {
        address payer;
        address merchant;
        uint128 amount;
        uint128 fee;
        uint128 refunded;
    }

    /* EVENTS */

    /// @notice Payment `ref` was paid by `payer`: `merchant` received `amount - fee`, the treasury `fee`.
    event PaymentPaid(bytes32 indexed ref, address indexed payer, address indexed merchant, uint256 amount, uint256 fee);

    /// @notice `merchant` refunded `amount` of its payment `ref` of `paymentAmount` to `payer` (refund `refundRef`);
    /// `totalRefunded` is the sum of the payment's refunds.
    event PaymentRefunded(
        bytes32 indexed ref,
        bytes32 indexed refundRef,
        address indexed merchant,
        address payer,
        uint256 paymentAmount,
        uint256 amount,
        uint256 totalRefunded
    );

    /// @notice The fee became `feeBps` basis points and the treasury `treasury`.
    event PaymentFeeUpdated(uint256 feeBps, address treasury);

    /* ERRORS */

    /// @notice An address argument (the constructor's asset, admin, treasury or forwarder, or a merchant) is zero.
    error PaymentRouterZeroAddress();

    /// @notice The router itself as a merchant or the treasury: USDC sent there could never leave.
    error PaymentRouterSelfAddress();

    /// @notice The off-chain reference is zero.
    error PaymentRouterEmptyRef();

    /// @notice The amount is zero or does not fit the stored width.
    error PaymentRouterInvalidAmount(uint256 amount);

    /// @notice Payment `ref` of `merchant` and `amount` was paid already.
    error PaymentRouterAlreadyPaid(bytes32 ref, address merchant, uint256 amount);

    /// @notice The caller has no paid payment `ref` of `amount` (only a payment's merchant finds it).
    error PaymentRouterNotPaid(bytes32 ref, address merchant, uint256 amount);

    /// @notice A refund of `amount` is above `refundable`, what is left of the payment.
    error PaymentRouterRefundTooLarge(bytes32 ref, uint256 amount, uint256 refundable);

    /// @notice `merchant`'s refund `refundRef` was made already.
    error PaymentRouterRefundExists(address merchant, bytes32 refundRef);

    /// @notice A fee above {MAX_FEE_BPS}.
    error PaymentRouterInvalidFee(uint256 feeBps);

    /* VIEWS */

    /// @notice The highest fee the admin may set, in basis points.
    /// @return The bound.
    function MAX_FEE_BPS() external view returns (uint256);

    /// @notice The token payments are made in.
    /// @return The token address.
    function asset() external view returns (address);

    /// @notice Where fees go.
    /// @return The treasury address.
    function treasury() external view returns (address);

    /// @notice The fee of a payment, in basis points of its amount.
    /// @return The fee rate.
    function feeBps() external view returns (uint256);

    /// @notice The key of the payment of `ref` to `merchant` of `amount`: `keccak256(abi.encode(ref, merchant, amount))`.
    /// @param ref The off-chain payment id.
    /// @param merchant The merchant's wallet.
    /// @param amount The gross amount.
    /// @return The key.
    function paymentKey(bytes32 ref, address merchant, uint256 amount) external pure returns (bytes32);

    /// @notice The payment of `ref` to `merchant` of `amount` (all zero when it was not paid).
    /// @param ref The off-chain payment id.
    /// @param merchant The merchant's wallet.
    /// @param amount The gross amount.
    /// @return The payment.
    function paymentOf(bytes32 ref, address merchant, uint256 amount) external view returns (Payment memory);

    /// @notice Whether `merchant`'s refund `refundRef` was made.
    /// @param merchant The merchant's wallet.
    /// @param refundRef The off-chain refund id.
    /// @return True once made.
    function refundMade(address merchant, bytes32 refundRef) external view returns (bool);

    /* PAYER */

    /// @notice Pays payment `ref` of `amount` to `merchant`, pulling `amount` from the caller (who needs an allowance).
    /// @dev Reverts with {PaymentRouterAlreadyPaid} when this payment (these terms) was paid, by anyone. The merchant
    /// (never the router itself) receives
    /// `amount - fee` and the treasury `fee` = `amount * feeBps / 10_000`, rounded down, in this call.
    /// @param ref The off-chain payment id.
    /// @param merchant The merchant's wallet.
    /// @param amount The gross amount.
    function pay(bytes32 ref, address merchant, uint256 amount) external;

    /// @notice {pay}, approving this router in the same call with the caller's EIP-2612 permit, so a wallet without
    /// ETH can pay through the forwarder in one signed request. A permit that fails (used by a front-runner, expired)
    /// is ignored and the payment relies on the allowance.
    /// @param ref The off-chain payment id.
    /// @param merchant The merchant's wallet.
    /// @param amount The gross amount, and the permit's value.
    /// @param deadline The permit's deadline (Unix seconds).
    /// @param v The permit signature's `v`.
    /// @param r The permit signature's `r`.
    /// @param s The permit signature's `s`.
    function payWithPermit(bytes32 ref, address merchant, uint256 amount, uint256 deadline, uint8 v, bytes32 r, bytes32 s)
        external;

    /* MERCHANT */

    /// @notice Refunds `amount` of the caller's payment `ref` of `paymentAmount` to its payer as refund `refundRef`,
    /// pulling it from the caller, its merchant (the merchant bears the fee, as card processors do).
    /// @dev Only the payment's merchant finds it ({PaymentRouterNotPaid} for anyone else); each of a merchant's
    /// `refundRef` once ({PaymentRouterRefundExists}), so a retried request never refunds twice; the sum of refunds
    /// never exceeds the amount ({PaymentRouterRefundTooLarge}).
    /// @param ref The off-chain payment id.
    /// @param paymentAmount The payment's gross amount (with the caller and `ref`, its key).
    /// @param refundRef The off-chain refund id.
    /// @param amount The amount to return.
    function refund(bytes32 ref, uint256 paymentAmount, bytes32 refundRef, uint256 amount) external;

    /// @notice {refund}, approving this router with the merchant's EIP-2612 permit in the same call.
    /// @param ref The off-chain payment id.
    /// @param paymentAmount The payment's gross amount.
    /// @param refundRef The off-chain refund id.
    /// @param amount The amount to return, and the permit's value.
    /// @param deadline The permit's deadline (Unix seconds).
    /// @param v The permit signature's `v`.
    /// @param r The permit signature's `r`.
    /// @param s The permit signature's `s`.
    function refundWithPermit(
        bytes32 ref,
        uint256 paymentAmount,
        bytes32 refundRef,
        uint256 amount,
        uint256 deadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external;

    /* ADMIN */

    /// @notice Sets the fee (at most {MAX_FEE_BPS}) and the treasury (neither zero nor the router). Only the default
    /// admin; applies to later payments.
    /// @param newFeeBps The fee rate.
    /// @param newTreasury Where fees go.
    function setFee(uint256 newFeeBps, address newTreasury) external;
}
