// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IStakingVault} from "./IStakingVault.sol";

/// @title ILoanBook
/// @notice The on-chain record of the platform's loans, funded from the {IStakingVault}.
/// @dev The service (OPERATOR_ROLE) funds and extends loans within contract-enforced limits; anyone may repay a
/// loan (pulling USDC from the payer), mark it overdue after its due date, and mark it defaulted once the grace
/// period after the due date has passed. Money values are in the asset's units (USDC micro-units).
///
/// Interest is a flat amount fixed when the loan is funded (plus any extension's). A loan can be closed early by
/// paying {payoffAmount}: the outstanding principal plus the interest earned so far, pro-rated by whole days elapsed
/// (rounded up, and at least {MIN_CHARGED_DAYS}). Payments go to the interest earned so far first, then to the
/// principal. A payment at or above {payoffAmount} closes the loan and is capped at that amount.
///
/// A loan's net amount goes to its borrower ({fundLoan}) or, for a purchase financed by the pool, to another
/// recipient such as a merchant or the payment router ({fundLoanFor}); either way the borrower owes it.
///
/// Error mapping for the API: {LoanBookLoanNotFound} -> LOAN_NOT_FOUND, {LoanBookLoanNotOpen} with status Repaid
/// -> ALREADY_REPAID, {LoanBookInvalidPrincipal} -> INVALID_AMOUNT, {LoanBookInvalidDuration} -> INVALID_DURATION.
///
/// Every function may be called through the trusted ERC-2771 forwarder (`trustedForwarder()`); the signer of the
/// forwarded request is then the caller (the payer of a repayment, the holder of a role).
interface ILoanBook {
    /* TYPES */

    /// @notice Life cycle of a funded loan. `Overdue` is stored by {markOverdue}; a loan past due but not yet marked
    /// is still `Active`. `Repaid` and `Defaulted` are final.
    enum LoanStatus {
        None,
        Active,
        Overdue,
        Repaid,
        Defaulted
    }

    /// @notice A loan as stored.
    /// @param borrower The wallet that owes the loan (it received the net amount, unless the loan was funded with
    /// {fundLoanFor} for another recipient, whom only {LoanFunded} names).
    /// @param fundedAt When the loan was funded (Unix seconds).
    /// @param dueDate When the full balance is due (Unix seconds): fundedAt + durationDays days, rounded up to a whole hour.
    /// @param durationDays The term in days, including extensions.
    /// @param principal The principal lent from the vault (the API's `amount`).
    /// @param interest The flat interest for the whole term, including extensions.
    /// @param principalRepaid Principal repaid so far.
    /// @param interestRepaid Interest paid so far.
    /// @param insuranceFee The fee taken from the principal for the insurance reserve.
    /// @param status The loan's status.
    /// @param gracePeriodDays The limits' grace period when the loan was funded: a later change does not touch it.
    /// @param unproven Whether its principal was above what its borrower had proven it repays ({provenUpTo}) when it was
    /// funded: its principal out counts against {unprovenExposure} until it is repaid, refunded or written off.
    /// @param paidByOthers Whether another payer or a merchant's refund paid any of it: such a loan proves nothing.
    /// @param ref The off-chain loan id.
    // Five slots, the fewest its 147 bytes take (the rule's heuristic does not see it).
    // solhint-disable-next-line gas-struct-packing
    struct Loan {
        address borrower;
        uint40 fundedAt;
        uint40 dueDate;
        uint16 durationDays;
        uint128 principal;
        uint128 interest;
        uint128 principalRepaid;
        uint128 interestRepaid;
        uint128 insuranceFee;
        LoanStatus status;
        uint16 gracePeriodDays;
        bool unproven;
        bool paidByOthers;
        bytes32 ref;
    }

    /// @notice How much the pool lends to borrowers who have never repaid a loan in full (D-125).
    /// @param shareBps The most principal out to them, as a share of the vault's assets (basis points).
    /// @param floor The most principal out to them however small the pool (asset units): a new pool, which has no
    /// proven borrower yet, still lends to its first ones.
    /// @param dailyBudget The most principal funded to them a day: a token bucket as {fundingCapacity}'s.
    struct UnprovenLimits {
        uint16 shareBps;
        uint96 floor;
        uint96 dailyBudget;
    }

    /// @notice The expected loss the vault provisions from a loan's funding, as a share of its principal out (D-126),
    /// by what the chain knows of its borrower: a loan above what it proved it repays ({provenUpTo}), or within it.
    /// @param unprovenBps An unproven borrower's loan (basis points).
    /// @param provenBps A proven borrower's loan (basis points).
    struct ExpectedLossRates {
        uint16 unprovenBps;
        uint16 provenBps;
    }

    /// @notice The terms the operator may set, enforced on {fundLoan}, {fundLoanFor} and {extend}.
    /// @param maxPrincipal The largest principal (asset units).
    /// @param minDurationDays The shortest term in days.
    /// @param maxDurationDays The longest term in days, extensions included.
    /// @param gracePeriodDays Days after the due date before a loan can be marked defaulted.
    /// @param maxInterestBps The largest total interest as a share of the principal (basis points).
    /// @param maxInsuranceFeeBps The largest insurance fee as a share of the principal (basis points).
    struct LoanLimits {
        uint96 maxPrincipal;
        uint16 minDurationDays;
        uint16 maxDurationDays;
        uint16 gracePeriodDays;
        uint16 maxInterestBps;
        uint16 maxInsuranceFeeBps;
    }

    /// @notice What closing a loan now costs (the API's early-payoff view).
    /// @param originalTotal principal + interest for the whole term.
    /// @param payoffAmount What closes the loan now.
    /// @param remainingBalance What is left of `originalTotal` after the payments so far.
    /// @param interestSaved remainingBalance - payoffAmount.
    /// @param daysEarly Days of interest not charged: durationDays minus the days charged.
    struct PayoffQuote {
        uint256 originalTotal;
        uint256 payoffAmount;
        uint256 remainingBalance;
        uint256 interestSaved;
        uint256 daysEarly;
    }

    /* EVENTS */

    /// @notice Loan `loanId` (off-chain id `ref`) was funded: `recipient` received `netAmount` = principal minus
    /// `insuranceFee`, and `borrower` owes `principal + interest` by `dueDate`. `recipient` is the borrower for an
    /// ordinary loan ({fundLoan}) and the merchant or the payment router for a purchase financed by the pool
    /// ({fundLoanFor}). The data of `loan.funded`.
    event LoanFunded(
        uint256 indexed loanId,
        bytes32 indexed ref,
        address indexed borrower,
        address recipient,
        uint256 principal,
        uint256 netAmount,
        uint256 interest,
        uint256 insuranceFee,
        uint256 durationDays,
        uint256 dueDate
    );

    /// @notice `payer` paid `amount` on loan `loanId` (`interestPaid` to interest, `principalPaid` to principal).
    /// `remainingBalance` is what is left of principal + interest (zero when `closed`), `totalPaid` the sum of all
    /// payments. `closed` tells `loan.repaid` (true) from `loan.partial_payment` (false).
    event LoanRepaymentMade(
        uint256 indexed loanId,
        address indexed borrower,
        address indexed payer,
        uint256 amount,
        uint256 interestPaid,
        uint256 principalPaid,
        uint256 remainingBalance,
        uint256 totalPaid,
        bool closed
    );

    /// @notice Loan `loanId` was extended by `extraDays` for `additionalInterest`; it is now due at `newDueDate`.
    event LoanExtended(
        uint256 indexed loanId,
        address indexed borrower,
        uint256 extraDays,
        uint256 additionalInterest,
        uint256 newDueDate
    );

    /// @notice Loan `loanId` was marked overdue; it was due at `dueDate` (the API derives `daysOverdue`).
    event LoanMarkedOverdue(uint256 indexed loanId, address indexed borrower, uint256 dueDate);

    /// @notice Loan `loanId` defaulted with `loss` principal outstanding, of which the insurance reserve covered
    /// `covered` and the depositors bore `uncovered`.
    event LoanDefaulted(
        uint256 indexed loanId,
        address indexed borrower,
        uint256 loss,
        uint256 covered,
        uint256 uncovered
    );

    /// @notice A refund of the purchase loan `loanId` paid for took `principalRefunded` off its principal and
    /// `interestForgiven` (the same share of its interest) off its interest. `toPool` of the refund made good the
    /// principal the pool still had out (or had written off); `principalReturned` and `interestReturned` went back to
    /// the borrower, who had paid more than the loan now is. `remainingBalance` is what the borrower still owes;
    /// `closed` when the refund closed an open loan (status Repaid, owing nothing). The data of `loan.refunded`.
    event LoanRefunded(
        uint256 indexed loanId,
        address indexed borrower,
        uint256 principalRefunded,
        uint256 interestForgiven,
        uint256 toPool,
        uint256 principalReturned,
        uint256 interestReturned,
        uint256 remainingBalance,
        bool closed
    );

    /// @notice The loan limits were set to `limits`.
    event LoanLimitsUpdated(LoanLimits limits);

    /// @notice The most principal funded per day was set to `dailyCap`.
    event LoanFundingCapUpdated(uint256 dailyCap);

    /// @notice The limits on lending to borrowers who have never repaid a loan in full were set to `limits`.
    event LoanUnprovenLimitsUpdated(UnprovenLimits limits);

    /// @notice The expected-loss rates of loans funded from now on were set to `rates`.
    event LoanExpectedLossRatesUpdated(ExpectedLossRates rates);

    /// @notice `borrower` repaid loan `loanId` of `principal` in full, with its own money only, after holding it at
    /// least {MIN_CHARGED_DAYS}: its later loans up to `principal` no longer count as unproven ({provenUpTo}).
    event BorrowerProven(address indexed borrower, uint256 indexed loanId, uint256 principal);

    /// @notice `borrower`'s proof is void: it defaulted on loan `loanId`, or loan `loanId`, which proved it, was refunded.
    event BorrowerProofRevoked(address indexed borrower, uint256 indexed loanId);

    /* ERRORS */

    /// @notice An address argument (a borrower, a recipient, or the constructor's vault, admin or forwarder) is zero.
    error LoanBookZeroAddress();

    /// @notice The off-chain reference is zero.
    error LoanBookEmptyRef();

    /// @notice The off-chain reference was already used by loan `loanId`.
    error LoanBookDuplicateRef(bytes32 ref, uint256 loanId);

    /// @notice The principal is zero or above `maxPrincipal`.
    error LoanBookInvalidPrincipal(uint256 principal, uint256 maxPrincipal);

    /// @notice The term is outside [`minDays`, `maxDays`].
    error LoanBookInvalidDuration(uint256 durationDays, uint256 minDays, uint256 maxDays);

    /// @notice The total interest exceeds `maxInterest` for this principal.
    error LoanBookInterestTooHigh(uint256 interest, uint256 maxInterest);

    /// @notice The insurance fee exceeds `maxFee` for this principal.
    error LoanBookInsuranceFeeTooHigh(uint256 insuranceFee, uint256 maxFee);

    /// @notice No loan has id `loanId`.
    error LoanBookLoanNotFound(uint256 loanId);

    /// @notice Loan `loanId` is `status`, which is closed (Repaid or Defaulted).
    error LoanBookLoanNotOpen(uint256 loanId, LoanStatus status);

    /// @notice Loan `loanId` is `status`, not Active.
    error LoanBookLoanNotActive(uint256 loanId, LoanStatus status);

    /// @notice Loan `loanId` is `status`, not Overdue: only an impaired loan can default.
    error LoanBookLoanNotOverdue(uint256 loanId, LoanStatus status);

    /// @notice A repayment of zero.
    error LoanBookZeroRepayment(uint256 loanId);

    /// @notice Loan `loanId` is not past its `dueDate` yet.
    error LoanBookNotYetDue(uint256 loanId, uint256 dueDate);

    /// @notice Loan `loanId` is past its `dueDate`, so it cannot be extended.
    error LoanBookPastDue(uint256 loanId, uint256 dueDate);

    /// @notice Loan `loanId` can only be marked defaulted after `defaultableAfter`.
    error LoanBookGracePeriodNotOver(uint256 loanId, uint256 defaultableAfter);

    /// @notice An extension by `extraDays` is zero or brings the term to `newDurationDays`, above `maxDurationDays`.
    error LoanBookInvalidExtension(uint256 loanId, uint256 extraDays, uint256 newDurationDays, uint256 maxDurationDays);

    /// @notice Limits outside the hard bounds.
    error LoanBookInvalidLimits(LoanLimits limits);

    /// @notice A refund of `amount` principal of loan `loanId` is zero or above its principal `principal`.
    error LoanBookInvalidRefund(uint256 loanId, uint256 amount, uint256 principal);
    /// @notice Funding `principal` now would exceed the daily funding cap: `available` is left (it refills over the
    /// day).
    error LoanBookFundingCapReached(uint256 principal, uint256 available);
    /// @notice A daily funding cap must be above zero (pausing the vault stops lending).
    error LoanBookInvalidFundingCap(uint256 dailyCap);

    /// @notice `principal` is above what `borrower` has proven it repays ({provenUpTo}) and above what the pool still
    /// lends on such loans (`available`, see {unprovenExposure}).
    error LoanBookUnprovenLimitReached(address borrower, uint256 principal, uint256 available);

    /// @notice `limits` are outside the hard bounds of {setUnprovenLimits}.
    error LoanBookInvalidUnprovenLimits(UnprovenLimits limits);

    /// @notice A rate of `rates` is above 10,000 basis points.
    error LoanBookInvalidExpectedLossRates(ExpectedLossRates rates);

    /* ROLES AND CONSTANTS */

    /// @notice The role of the service that funds and extends loans.
    /// @return The role id.
    function OPERATOR_ROLE() external view returns (bytes32);

    /// @notice The role of the payment router, whose merchants' refunds settle the purchase loans they paid for.
    /// @return The role id.
    function REFUNDER_ROLE() external view returns (bytes32);

    /// @notice The fewest days of interest charged when a loan is paid off early.
    /// @return The number of days.
    function MIN_CHARGED_DAYS() external view returns (uint256);

    /* VIEWS */

    /// @notice The vault loans are funded from.
    /// @return The vault.
    function vault() external view returns (IStakingVault);

    /// @notice The token loans are paid out and repaid in (the vault's asset).
    /// @return The token address.
    function asset() external view returns (address);

    /// @notice The number of loans funded so far; loan ids run from 1 to this number.
    /// @return The count.
    function loanCount() external view returns (uint256);

    /// @notice The loan funded under off-chain reference `ref`.
    /// @param ref The off-chain loan id.
    /// @return The loan id, or zero if none.
    function loanIdOf(bytes32 ref) external view returns (uint256);

    /// @notice Loan `loanId`. Reverts with {LoanBookLoanNotFound} for an unknown id.
    /// @param loanId The loan id.
    /// @return The loan.
    function getLoan(uint256 loanId) external view returns (Loan memory);

    /// @notice The current loan limits.
    /// @return See {LoanLimits}.
    function limits() external view returns (LoanLimits memory);

    /// @notice The daily funding cap and the principal that can be funded now: a token bucket (Chainlink CCIP's rate
    /// limiter) that holds at most `dailyCap` and refills at `dailyCap` per day, so whoever holds the operator key
    /// lends at most `dailyCap` at once and twice it over any 24 hours.
    /// @return dailyCap The bucket's capacity and refill per day.
    /// @return available The principal that can be funded now.
    function fundingCapacity() external view returns (uint256 dailyCap, uint256 available);

    /// @notice The largest principal `borrower` has repaid in full with its own money only, on a loan it held at least
    /// {MIN_CHARGED_DAYS} and that no refund touched (zero after a default): a loan above it is unproven (D-125).
    function provenUpTo(address borrower) external view returns (uint256);

    /// @notice The limits on lending to unproven borrowers.
    /// @return See {UnprovenLimits}.
    function unprovenLimits() external view returns (UnprovenLimits memory);

    /// @notice The expected-loss rates the vault provisions new loans at.
    /// @return See {ExpectedLossRates}.
    function expectedLossRates() external view returns (ExpectedLossRates memory);

    /// @notice The principal out on unproven loans, and the most a new unproven loan may have now: what the cap (the
    /// larger of `floor` and `shareBps` of the vault's assets) leaves, within what the daily budget holds now.
    function unprovenExposure() external view returns (uint256 outstanding, uint256 available);

    /// @notice The least interest a loan of `principal` to `borrower` funded now must carry for its depositors' part
    /// (after the reserve factor) to pay its provision: the expected-loss rate of its class (D-126), grossed up by the
    /// interest rate model's reserve factor, rounded up. The payment router holds purchases on credit to it (D-127);
    /// a P2P loan's rate is its tier's.
    function minInterestOf(address borrower, uint256 principal) external view returns (uint256);

    /// @notice What is left of principal + interest after the payments so far (the full repayment).
    /// @param loanId The loan id.
    /// @return The amount; zero for a closed loan.
    function remainingBalance(uint256 loanId) external view returns (uint256);

    /// @notice What closes loan `loanId` now: outstanding principal plus the interest earned so far and not yet paid.
    /// @dev Interest earned = interest * chargedDays / durationDays, rounded up, where chargedDays is the whole days
    /// since funding rounded up, at least {MIN_CHARGED_DAYS} and at most durationDays (all of it once due).
    /// Never above {remainingBalance}. Zero for a closed loan.
    /// @param loanId The loan id.
    /// @return The amount.
    function payoffAmount(uint256 loanId) external view returns (uint256);

    /// @notice The early-payoff figures of loan `loanId` now.
    /// @param loanId The loan id.
    /// @return quote See {PayoffQuote}.
    function payoffQuote(uint256 loanId) external view returns (PayoffQuote memory quote);

    /* OPERATOR */

    /// @notice Funds a loan from the vault: `borrower` receives `principal - insuranceFee`, the fee goes to the
    /// vault's insurance reserve, and `principal + interest` is due in `durationDays` days.
    /// @dev {fundLoanFor} with `borrower` as the recipient: the same checks, effects and events.
    /// @param ref The off-chain loan id.
    /// @param borrower The wallet that owes the loan and receives the net amount.
    /// @param principal The principal (the API's `amount`).
    /// @param interest The flat interest for the term.
    /// @param insuranceFee The fee taken from the principal.
    /// @param durationDays The term in days.
    /// @return loanId The new loan's id (sequential from 1).
    function fundLoan(
        bytes32 ref,
        address borrower,
        uint256 principal,
        uint256 interest,
        uint256 insuranceFee,
        uint32 durationDays
    ) external returns (uint256 loanId);

    /// @notice Funds a purchase financed by the pool: `recipient` (the merchant, or the payment router that pays
    /// the merchant) receives `principal - insuranceFee`, the fee goes to the vault's insurance reserve, and
    /// `borrower` owes `principal + interest` in `durationDays` days, exactly as for a loan paid to the borrower.
    /// @dev Only OPERATOR_ROLE. Terms must be within {limits}; `ref` must be new and non-zero; neither `borrower`
    /// nor `recipient` may be zero ({LoanBookZeroAddress}). Reverts with the vault's
    /// `StakingVaultInsufficientLiquidity` if the vault's idle USDC is below `principal`, with `EnforcedPause`
    /// while the vault is paused, with {LoanBookFundingCapReached} above the daily funding cap and, for a borrower
    /// whose {provenUpTo} is below `principal`, with {LoanBookUnprovenLimitReached} above {unprovenExposure}'s
    /// `available`. The loan records only the borrower; {LoanFunded} names the recipient. The
    /// borrower's consent is the operator's to check off chain, as for {fundLoan}.
    /// @param ref The off-chain loan id.
    /// @param borrower The wallet that owes the loan.
    /// @param recipient The wallet that receives the net amount.
    /// @param principal The principal (the API's `amount`).
    /// @param interest The flat interest for the term.
    /// @param insuranceFee The fee taken from the principal.
    /// @param durationDays The term in days.
    /// @return loanId The new loan's id (sequential from 1).
    function fundLoanFor(
        bytes32 ref,
        address borrower,
        address recipient,
        uint256 principal,
        uint256 interest,
        uint256 insuranceFee,
        uint32 durationDays
    ) external returns (uint256 loanId);

    /// @notice Extends Active loan `loanId` by `extraDays` for `additionalInterest`.
    /// @dev Only OPERATOR_ROLE; only before the due date; the total term must stay within `maxDurationDays` and the
    /// total interest within `maxInterestBps` of the principal.
    /// @param loanId The loan id.
    /// @param extraDays Days added to the term (at least one).
    /// @param additionalInterest Interest added for the extension (may be zero).
    function extend(uint256 loanId, uint32 extraDays, uint256 additionalInterest) external;

    /// @notice Sets the loan limits. Only the default admin.
    /// @dev Hard bounds: maxPrincipal > 0; 1 <= minDurationDays <= maxDurationDays <= 365; gracePeriodDays <= 90;
    /// maxInterestBps <= 10_000; maxInsuranceFeeBps <= 5_000. They apply to loans funded or extended afterwards,
    /// except the grace period, which applies to every open loan.
    /// @param newLimits The new limits.
    function setLimits(LoanLimits calldata newLimits) external;

    /// @notice Sets the daily funding cap (see {fundingCapacity}). Only the default admin. What is available now is
    /// kept, at most the new cap.
    /// @param dailyCap The new cap, above zero.
    function setDailyFundingCap(uint256 dailyCap) external;

    /// @notice Sets the limits on lending to unproven borrowers (see {UnprovenLimits}). Only the default admin.
    /// @dev Hard bound: shareBps <= 10_000. A zero budget funds no unproven loan. What the budget holds now is kept, at
    /// most the new budget.
    /// @param newLimits The new limits.
    function setUnprovenLimits(UnprovenLimits calldata newLimits) external;

    /// @notice Sets the expected-loss rates of loans funded from now on (see {ExpectedLossRates}); a loan keeps the rate
    /// it was funded at. Only the default admin. Hard bound: each at most 10,000.
    /// @param newRates The new rates.
    function setExpectedLossRates(ExpectedLossRates calldata newRates) external;

    /* REFUNDER (the payment router) */

    /// @notice Settles `principalRefund` of loan `loanId` with a merchant's refund of the purchase it paid for, as
    /// buy-now-pay-later lenders do: the loan's principal falls by `principalRefund` and its interest by the same share
    /// (a full refund leaves nothing owed, interest included). The pool takes back the principal it still has out, up
    /// to `principalRefund` (for a defaulted loan: what it wrote off, as a recovery); the borrower gets back what they
    /// had paid above the reduced loan: the rest of `principalRefund` (left for the caller to send), and interest paid
    /// above the reduced interest (sent by the vault). An open loan that then owes nothing is closed (Repaid).
    /// @dev Only REFUNDER_ROLE (the payment router; never the service's own key). Pulls `toPool` USDC from the caller
    /// into the vault. Emits {LoanRefunded}. A defaulted loan is settled the same way; the pool's part of its refund is
    /// a recovery of what it wrote off (the vault's `recordRecovery`), and it stays Defaulted.
    /// @param loanId The loan id.
    /// @param principalRefund The principal the refund takes off: more than 0, at most the loan's principal.
    /// @return toPool The USDC pulled from the caller into the vault.
    /// @return principalReturned The USDC of the refund the caller owes the borrower (principal paid above the
    /// reduced principal).
    /// @return interestReturned The interest the vault paid back to the borrower.
    function refundLoan(uint256 loanId, uint256 principalRefund)
        external
        returns (uint256 toPool, uint256 principalReturned, uint256 interestReturned);

    /* ANYONE */

    /// @notice Pays up to `amount` on open loan `loanId`, pulling USDC from the caller (who needs an allowance; the
    /// signer of a request relayed by the trusted forwarder is the caller).
    /// @dev The payment goes to the interest earned so far, then to principal. At or above {payoffAmount} it closes
    /// the loan (status Repaid) and only {payoffAmount} is pulled. An Overdue loan stays Overdue until closed.
    /// Principal and interest go to the vault.
    /// @param loanId The loan id.
    /// @param amount The most to pay (type(uint256).max pays off the loan).
    /// @return paid The amount pulled.
    function repay(uint256 loanId, uint256 amount) external returns (uint256 paid);

    /// @notice {repay}, approving the LoanBook in the same call with the caller's EIP-2612 permit, so a wallet without
    /// ETH can repay through the forwarder in one signed request.
    /// @dev The permit's owner is the caller (`_msgSender()`: the signer of a forwarded request), its spender this
    /// LoanBook and its value `amount`; none of them is an argument, so a permit only ever pays its signer's
    /// repayment. A permit that fails (already used by a front-runner, expired, invalid) is ignored and the payment
    /// then relies on the allowance, as {repay} does. Same checks and events as {repay}. When `amount` exceeds what
    /// is pulled (a payoff), the rest of the allowance stays with the LoanBook, which only ever pulls from the caller
    /// of a repayment: sign the expected {payoffAmount} (plus a margin for the days until execution) rather than an
    /// unlimited value.
    /// @param loanId The loan id.
    /// @param amount The most to pay, and the permit's value.
    /// @param deadline The permit's deadline (Unix seconds).
    /// @param v The permit signature's `v`.
    /// @param r The permit signature's `r`.
    /// @param s The permit signature's `s`.
    /// @return paid The amount pulled.
    function repayWithPermit(uint256 loanId, uint256 amount, uint256 deadline, uint8 v, bytes32 r, bytes32 s)
        external
        returns (uint256 paid);

    /// @notice Marks Active loan `loanId` overdue once its due date has passed, and impairs it in the vault: its
    /// expected loss leaves the share price now, before any default can be predicted from the chain.
    /// @dev Anyone may call it, as for {markDefaulted}.
    /// @param loanId The loan id.
    function markOverdue(uint256 loanId) external;

    /// @notice Marks Overdue loan `loanId` defaulted once more than its own `gracePeriodDays` (the limits' at funding)
    /// have passed since its due date,
    /// writing off its outstanding principal in the vault (the insurance reserve covers part of the loss). A loan
    /// must be marked overdue (impaired) first: {LoanBookLoanNotOverdue} otherwise.
    /// @dev Anyone may call it: the condition is objective, and a keeper need not be trusted.
    /// @param loanId The loan id.
    function markDefaulted(uint256 loanId) external;
}
