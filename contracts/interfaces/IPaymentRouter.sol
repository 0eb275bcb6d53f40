// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ILoanBook} from "./ILoanBook.sol";

/// @title IPaymentRouter
/// @notice Merchants' payments in USDC: a payer pays a payment once, directly or on credit from the lending pool
/// (in one loan, or split into 2 to 12 installments), the merchant receives the amount less the platform's fee, the
/// fee goes to the treasury (on credit: to the pool's insurance reserve), and the merchant may refund up to what was
/// paid.
/// @dev A payment is known by its terms: the service's off-chain id (`ref`), the merchant and the amount, hashed into
/// its key ({paymentKey}). The contract pays a key at most once and keeps the sum of its refunds within its amount,
/// whoever calls it and however often; a payment of the same ref to another merchant or of another amount is another
/// payment, so nobody can make the real one unpayable by paying its ref first. A refund is known by its merchant and
/// its off-chain id ({refundMade}): made once, and no other merchant can use that id up. Money values are in the
/// asset's units (USDC micro-units); fees are in basis points of the amount, rounded down (the merchant's favour).
/// Every function may be called through the trusted ERC-2771 forwarder (`trustedForwarder()`): the signer of a
/// forwarded request is then the caller (the payer of a payment, the merchant of a refund, the operator).
///
/// Payments on credit ({payWithLoans}, OPERATOR_ROLE: the service, once the payer accepted the terms): the pool
/// lends one loan per installment, which the payer owes to the {ILoanBook} (its borrower), each the same loan a P2P
/// borrower would take for that part of the price (D-127): its net amount (the part less the merchant's fee) comes to
/// the router, which pays the merchant in the same call, and the rest of its principal is its insurance fee, kept in
/// the vault's reserve. A refund of such a payment settles its loans pro rata to their principals.
///
/// Error mapping for the API: {PaymentRouterAlreadyPaid} -> 409 ALREADY_PAID, {PaymentRouterRefundTooLarge} -> 400
/// INVALID_AMOUNT, the token's `ERC20InsufficientBalance` -> 400 INSUFFICIENT_BALANCE; on credit, the vault's
/// `StakingVaultInsufficientLiquidity` -> 400 INSUFFICIENT_LIQUIDITY and `EnforcedPause` -> 503 VAULT_PAUSED, the
/// loan book's `LoanBookInvalidPrincipal` -> 400 INVALID_AMOUNT and `LoanBookInvalidDuration` -> 400
/// INVALID_DURATION. {PaymentRouterInvalidInstallments}, {PaymentRouterInstallmentFeeTooHigh} and the loan book's
/// other errors (`LoanBookDuplicateRef`, `LoanBookInterestTooHigh`, ...) refuse terms the service built itself, which
/// it validates first (400 VALIDATION_ERROR): reaching the chain, they are 500 INTERNAL_ERROR.
interface IPaymentRouter {
    /* TYPES */

    /// @notice How a payment was paid: `Direct` from the payer's USDC ({pay}), `Credit` in one loan from the pool
    /// and `Split` in 2 to {MAX_INSTALLMENTS} loans ({payWithLoans}).
    enum PaymentMethod {
        Direct,
        Credit,
        Split
    }

    /// @notice A paid payment as stored.
    /// @dev `method` shares the payer's slot (20 + 1 bytes), which every payment writes, so recording it costs no
    /// slot of its own; amount and fee share one slot, and refunds write only the last one.
    /// @param payer Who paid (and receives refunds); for a payment on credit, the borrower of its loans.
    /// @param method How it was paid.
    /// @param merchant Who received the net amount (and alone may refund).
    /// @param amount The gross amount paid (on credit: the sum of the installments' prices).
    /// @param fee The merchant's fee: the treasury's for a direct payment, the insurance reserve's on credit.
    /// @param refunded The sum of the refunds so far.
    struct Payment {
        address payer;
        PaymentMethod method;
        address merchant;
        uint128 amount;
        uint128 fee;
        uint128 refunded;
    }

    /// @notice One loan of a payment on credit (D-127): it pays `price` of the payment, of which the merchant receives
    /// `price - fee`; the pool lends `principal` (at least the price) and keeps the rest of it, `principal -
    /// (price - fee)`, as the loan's insurance fee in the vault's reserve; the payer owes `principal + interest` in
    /// `durationDays` days.
    /// @param loanRef The loan's off-chain id (new and non-zero: the loan book's `ref`).
    /// @param price The part of the payment's amount this loan pays.
    /// @param principal The loan's principal: the price plus the insurance fee the payer's terms add.
    /// @param interest The loan's flat interest, at least `loanBook.minInterestOf(payer, principal)`.
    /// @param fee The merchant's fee on this part, at most `price * MAX_FEE_BPS / 10_000`.
    /// @param durationDays The loan's term in days.
    struct Installment {
        bytes32 loanRef;
        uint256 price;
        uint256 principal;
        uint256 interest;
        uint256 fee;
        uint32 durationDays;
    }

    /* EVENTS */

    /// @notice Payment `ref` was paid by `payer`: `merchant` received `amount - fee`; the treasury `fee` (direct) or
    /// the vault's insurance reserve (on credit).
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

    /// @notice Payment `ref` of `amount` to `merchant` was paid on credit for `payer` (`method` Credit or Split):
    /// the pool lent it in loans `loanIds` (in installment order), which `payer` owes. Emitted after
    /// {PaymentPaid}, which carries the fee.
    event PaymentFinanced(
        bytes32 indexed ref,
        address indexed merchant,
        address indexed payer,
        uint256 amount,
        PaymentMethod method,
        uint256[] loanIds
    );

    /// @notice `merchant`'s refund `refundRef` of its payment `ref` on credit settled the payer's loans: `toLoans` of
    /// it went to the pool (the principal it still had out, or had written off) and `toPayer` to the payer (principal
    /// they had paid above the smaller loans; their sum is the refund's amount; interest paid above the smaller
    /// interest comes back from the vault, in each loan's `LoanRefunded`). Emitted after {PaymentRefunded}.
    event PaymentRefundApplied(
        bytes32 indexed ref, bytes32 indexed refundRef, address indexed merchant, uint256 toLoans, uint256 toPayer
    );

    /* ERRORS */

    /// @notice An address argument (the constructor's asset, loan book, admin, treasury or forwarder, a merchant or
    /// a payer) is zero.
    error PaymentRouterZeroAddress();

    /// @notice The router itself as a merchant, a payer or the treasury: USDC sent there could never leave.
    error PaymentRouterSelfAddress();

    /// @notice The loan book lends `loanBookAsset`, not the router's `asset`.
    error PaymentRouterAssetMismatch(address asset, address loanBookAsset);

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

    /// @notice A payment on credit of `count` installments: it takes 1 to {MAX_INSTALLMENTS}.
    error PaymentRouterInvalidInstallments(uint256 count);

    /// @notice Installment `index`'s `fee` is above `maxFee`, {MAX_FEE_BPS} of its price.
    error PaymentRouterInstallmentFeeTooHigh(uint256 index, uint256 fee, uint256 maxFee);

    /// @notice Installment `index`'s principal is below its `price`: the payer owes at least the price, so the
    /// principals always cover what is left to refund.
    error PaymentRouterPrincipalBelowPrice(uint256 index, uint256 principal, uint256 price);

    /// @notice Installment `index`'s interest is below `minInterest`, its provision's ({ILoanBook-minInterestOf}).
    error PaymentRouterInterestBelowExpectedLoss(uint256 index, uint256 interest, uint256 minInterest);

    /* VIEWS */

    /// @notice The role of the service that pays payments on credit ({payWithLoans}); granted by the admin.
    /// @return The role id.
    function OPERATOR_ROLE() external view returns (bytes32);

    /// @notice The highest fee the admin may set, in basis points; also the bound of an installment's fee.
    /// @return The bound.
    function MAX_FEE_BPS() external view returns (uint256);

    /// @notice The most installments of a payment on credit.
    /// @return The bound (12).
    function MAX_INSTALLMENTS() external view returns (uint256);

    /// @notice The token payments are made in.
    /// @return The token address.
    function asset() external view returns (address);

    /// @notice The loan book that funds payments on credit; the router holds its OPERATOR_ROLE.
    /// @return The loan book.
    function loanBook() external view returns (ILoanBook);

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

    /// @notice The loans that paid the payment of `ref` to `merchant` of `amount`, in installment order (empty for a
    /// direct payment or one not paid).
    /// @param ref The off-chain payment id.
    /// @param merchant The merchant's wallet.
    /// @param amount The gross amount.
    /// @return The loan book's loan ids.
    function loansOf(bytes32 ref, address merchant, uint256 amount) external view returns (uint256[] memory);

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

    /// @notice {pay} by the payer's EIP-3009 authorization instead of an allowance (D-120): the router receives
    /// `amount` from `payer` with the token's `receiveWithAuthorization`, then pays the merchant and the treasury as
    /// {pay} does. Anyone may submit it (the service does, paying the gas), so the payer signs one message and sends no
    /// transaction. The authorization's nonce must be {paymentKey}`(ref, merchant, amount)`: it pays this payment and
    /// no other, once, and only through this router (`receiveWithAuthorization` is the payee's to submit).
    /// @dev Reverts as {pay} does, and with the token's refusal of an authorization that is not `payer`'s over these
    /// values, not valid now, or used.
    /// @param ref The off-chain payment id.
    /// @param merchant The merchant's wallet.
    /// @param amount The gross amount, and the authorization's value.
    /// @param payer Who pays: the authorization's signer.
    /// @param validAfter The authorization is valid after this time (Unix seconds).
    /// @param validBefore The authorization is valid before this time (Unix seconds).
    /// @param v The authorization signature's `v`.
    /// @param r The authorization signature's `r`.
    /// @param s The authorization signature's `s`.
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
    ) external;

    /* OPERATOR */

    /// @notice Pays payment `ref` to `merchant` on credit for `payer`: the pool lends each installment's principal
    /// in a loan `payer` owes, the merchant receives the amount (the sum of the prices) less the fee (the sum of the
    /// installments' fees), in this call; each loan's principal above its net amount stays in the vault's insurance
    /// reserve as the loan's insurance fee.
    /// @dev Only OPERATOR_ROLE (the service, after the payer accepted the terms: the contract does not see that
    /// consent). Method `Credit` for one installment, `Split` for 2 to {MAX_INSTALLMENTS}
    /// ({PaymentRouterInvalidInstallments} otherwise). The checks of {pay} on `ref`, `merchant` and the amount
    /// ({PaymentRouterAlreadyPaid} when this payment, by key, was paid by any method); `payer` neither zero nor the
    /// router; each fee at most {MAX_FEE_BPS} of its price ({PaymentRouterInstallmentFeeTooHigh}), each principal at
    /// least its price ({PaymentRouterPrincipalBelowPrice}) and each interest at least the loan book's
    /// `minInterestOf(payer, principal)` ({PaymentRouterInterestBelowExpectedLoss}: the depositors are paid at least
    /// the loan's provision). Each installment in order becomes `loanBook.fundLoanFor(loanRef, payer, router,
    /// principal, interest, principal - (price - fee), durationDays)`, so the router receives exactly the amount less
    /// the fee and holds nothing afterwards. The loan book's checks and the vault's apply to each loan (their
    /// errors, `StakingVaultInsufficientLiquidity` and `EnforcedPause` among them, revert the whole payment).
    /// Emits {PaymentPaid}, then {PaymentFinanced}.
    /// @param ref The off-chain payment id.
    /// @param merchant The merchant's wallet.
    /// @param payer The buyer, who owes the loans and receives refunds.
    /// @param installments The loans, in order (1 to {MAX_INSTALLMENTS}).
    function payWithLoans(bytes32 ref, address merchant, address payer, Installment[] calldata installments)
        external;

    /* MERCHANT */

    /// @notice Refunds `amount` of the caller's payment `ref` of `paymentAmount` to its payer as refund `refundRef`,
    /// pulling it from the caller, its merchant (the merchant bears the fee, as card processors do). For a payment
    /// on credit the refund settles the payment's loans, as buy-now-pay-later lenders do: each loan's principal falls
    /// by its share and its interest pro rata; a full refund leaves the payer owing only the insurance fee its terms
    /// added to the principals (D-127), with that part's interest.
    /// @dev Only the payment's merchant finds it ({PaymentRouterNotPaid} for anyone else); each of a merchant's
    /// `refundRef` once ({PaymentRouterRefundExists}), so a retried request never refunds twice; the sum of refunds
    /// never exceeds the amount ({PaymentRouterRefundTooLarge}). A direct payment's refund goes from the merchant to
    /// the payer. The refund of a payment on credit comes to the router, which gives each defaulted loan what the pool
    /// still has written off on it first, shares the rest among the payment's loans in proportion to what is left of
    /// their principals, and settles each share with `loanBook.refundLoan`: the loan's principal falls by
    /// the share and its interest pro rata; the pool takes back the principal it still had out (for a defaulted loan,
    /// what it wrote off, up to the loss), and what the payer had paid above the smaller loan goes back to them (the
    /// principal from the refund, the interest from the vault). The router approves the loan book exactly each pool
    /// part and holds no USDC and no allowance afterwards. Emits {PaymentRefunded}, then, on credit,
    /// {PaymentRefundApplied}.
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
