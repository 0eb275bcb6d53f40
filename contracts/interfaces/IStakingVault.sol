// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC4626} from "@openzeppelin/contracts/interfaces/IERC4626.sol";
import {IInterestRateModel} from "./IInterestRateModel.sol";

/// @title IStakingVault
/// @notice The USDC savings vault: an ERC-4626 vault whose shares (tmUSDC) rise in value as loan interest and
/// distributed yield arrive. Its idle USDC funds the loans of the {ILoanBook}.
/// @dev Money values are in the asset's units (USDC micro-units, 6 decimals); tmUSDC has 18 decimals.
/// Rates and fractions in views are WAD-scaled (1e18 = 100 %); policy parameters are basis points (10_000 = 100 %).
///
/// Accounting: `totalAssets = idle + totalBorrowed + accruedInterest - lockedProfit - unrealizedLosses`, where `idle`
/// is the vault's USDC balance minus the insurance reserve, which the vault holds but which does not belong to
/// depositors. Exits and the conversions price at {totalAssets}; entries ({previewDeposit}, {previewMint}) at
/// {entryAssets}, the same without the unrealized losses (Maple v2), so no deposit buys a loss that may be reversed.
/// - Interest accrues (Morpho's per-second accrual): the depositors' part of a performing loan's interest enters
///   {accruedInterest} linearly from funding to the due date; a payment settles it or pays ahead of it (the loan
///   book's minimum charge and whole days), which is a gain when the loan closes.
/// - Gains unlock over time (Yearn V3's profit unlocking): distributed yield, interest paid ahead of its schedule and
///   recoveries are locked when they arrive and enter the share price linearly over {profitUnlockPeriod}, so a
///   deposit held across a gain earns only what unlocks while it is held.
/// - Known losses come first (Maple's impairment): a loan past due is impaired ({impairLoan}), its expected loss
///   (the principal out minus the reserve's expected cover, and the interest it counted and did not pay) taken from
///   the exit price at once, so leaving before its default does not move the loss onto those who stay. A repayment
///   releases it into the exit price at once (the entry price never counted it). A realized loss is first absorbed by
///   the profit still locked.
/// - A pause stops deposits and new loans only: withdrawals, repayments and settlements go on (Yearn V3's shutdown),
///   and only the admin (the timelock) lifts it.
///
/// Error mapping for the API: {StakingVaultDepositTooSmall} -> AMOUNT_TOO_SMALL,
/// {StakingVaultInsufficientLiquidity} -> INSUFFICIENT_LIQUIDITY, `EnforcedPause` -> VAULT_PAUSED,
/// `ERC4626ExceededMaxWithdraw` / `ERC4626ExceededMaxRedeem` / `ERC20InsufficientBalance` -> INSUFFICIENT_BALANCE.
///
/// Every function may be called through the trusted ERC-2771 forwarder (`trustedForwarder()`); the signer of the
/// forwarded request is then the caller everywhere (the `sender` of `Deposit`/`Withdraw`, the shares' owner checks,
/// the role checks).
interface IStakingVault is IERC4626 {
    /* TYPES */

    /// @notice Everything `GET /vault/status` shows, read in one call.
    /// @param totalAssets The depositors' assets: idle + totalBorrowed - unrealizedLosses - lockedProfit (the API's
    /// `totalDeposits`).
    /// @param idleAssets USDC available for withdrawals and new loans.
    /// @param totalBorrowed Principal out on loans.
    /// @param insuranceReserve USDC held for covering defaults; not part of `totalAssets`.
    /// @param utilization totalBorrowed / (idle + totalBorrowed) (WAD).
    /// @param borrowRate The model's annual borrow rate at `utilization` (WAD).
    /// @param supplyRate What the depositors earn now, a year at this pace (WAD; the API's `currentAPY`): the loans'
    /// interest accruing and the profit unlocking, per second, over `totalAssets`. The model's curve is the model's.
    /// @param exchangeRate USDC per whole tmUSDC (WAD; 1e18 = 1 USDC per tmUSDC).
    /// @param totalSupply tmUSDC in circulation (18 decimals).
    /// @param totalYield Yield credited to depositors so far: distributed yield plus their share of loan interest.
    /// @param paused Whether deposits and new loans are paused (withdrawals never are).
    struct VaultStatus {
        uint256 totalAssets;
        uint256 idleAssets;
        uint256 totalBorrowed;
        uint256 insuranceReserve;
        uint256 utilization;
        uint256 borrowRate;
        uint256 supplyRate;
        uint256 exchangeRate;
        uint256 totalSupply;
        uint256 totalYield;
        bool paused;
    }

    /* EVENTS */

    /// @notice Loan `loanId` drew `principal` from the vault: `borrower` received `principal - insuranceFee`, and
    /// `insuranceFee` went to the insurance reserve.
    event StakingVaultFundsLent(
        uint256 indexed loanId,
        address indexed borrower,
        uint256 principal,
        uint256 insuranceFee,
        uint256 totalBorrowed
    );

    /// @notice Loan `loanId` repaid `principal` and `interest`; `reserveShare` of the interest went to the insurance
    /// reserve, the rest (with any impairment the principal releases) was locked for the depositors.
    event StakingVaultRepaymentRecorded(
        uint256 indexed loanId,
        uint256 principal,
        uint256 interest,
        uint256 reserveShare,
        uint256 totalBorrowed
    );

    /// @notice Loan `loanId` defaulted with `loss` principal outstanding; the insurance reserve covered `covered` and
    /// `uncovered` lowered the depositors' assets, leaving the share price at `exchangeRate` (WAD).
    event StakingVaultLossRecognized(
        uint256 indexed loanId,
        uint256 loss,
        uint256 covered,
        uint256 uncovered,
        uint256 exchangeRate
    );

    /// @notice `amount` USDC of defaulted loan `loanId`'s written-off principal came back (a merchant's refund of the
    /// purchase it paid): `toReserve` of it refilled the insurance reserve (its share of what it covered), the rest
    /// was locked for the depositors, leaving the share price at `exchangeRate` (WAD).
    event StakingVaultLossRecovered(uint256 indexed loanId, uint256 amount, uint256 toReserve, uint256 exchangeRate);

    /// @notice `amount` USDC of interest loan `loanId` had paid went back to `to` (a refund made it not owed);
    /// `reserveShare` of it came out of the insurance reserve, the rest out of the depositors' assets.
    event StakingVaultInterestReturned(uint256 indexed loanId, address indexed to, uint256 amount, uint256 reserveShare);

    /// @notice `distributor` added `amount` USDC of yield; `totalYield` is the yield credited so far and
    /// `exchangeRate` the USDC per tmUSDC (WAD) right after it. The yield is locked and unlocks over
    /// {profitUnlockPeriod}, so the rate rises from here. The data of the `vault.yield_distributed` webhook.
    event StakingVaultYieldDistributed(
        address indexed distributor,
        uint256 amount,
        uint256 totalYield,
        uint256 exchangeRate
    );

    /// @notice Loan `loanId`, past due, was impaired: of its `principal` out, `expectedLoss` (the principal minus the
    /// insurance reserve's expected `cover`) left the share price, leaving it at `exchangeRate` (WAD).
    event StakingVaultLoanImpaired(
        uint256 indexed loanId,
        uint256 principal,
        uint256 expectedLoss,
        uint256 cover,
        uint256 exchangeRate
    );

    /// @notice Loan `loanId`'s schedule now earns `interest` from its funding until `dueDate`: what it had earned by
    /// now changed by `earnedChange` (a gain is locked, a loss taken from the locked profit first).
    event StakingVaultInterestRescheduled(uint256 indexed loanId, uint256 interest, uint256 dueDate, int256 earnedChange);

    /// @notice `gain` USDC was locked: with what was still locked, `locked` unlocks linearly until `unlockEnd`.
    event StakingVaultProfitLocked(uint256 gain, uint256 locked, uint256 unlockEnd);

    /// @notice The time a new gain takes to unlock was set to `period` seconds.
    event StakingVaultProfitUnlockPeriodUpdated(uint256 period);

    /// @notice `amount` USDC of the insurance reserve's surplus went to `to` (the treasury).
    event StakingVaultReserveSurplusReleased(address indexed to, uint256 amount);

    /// @notice The minimum deposit was set to `minDeposit` (asset units).
    event StakingVaultMinDepositUpdated(uint256 minDeposit);

    /// @notice The share of a default's loss the insurance reserve covers was set to `coverageBps`.
    event StakingVaultInsuranceCoverageUpdated(uint256 coverageBps);

    /// @notice The interest rate model was set to `model`.
    event StakingVaultInterestRateModelUpdated(address indexed model);

    /// @notice The most the depositors' assets may reach through deposits was set to `depositLimit`.
    event StakingVaultDepositLimitUpdated(uint256 depositLimit);

    /// @notice The utilization above which no loan is funded was set to `maxUtilizationBps`.
    event StakingVaultMaxUtilizationUpdated(uint256 maxUtilizationBps);

    /* ERRORS */

    /// @notice A deposit or mint of `assets` is below the minimum deposit `minimum`.
    error StakingVaultDepositTooSmall(uint256 assets, uint256 minimum);

    /// @notice `requested` assets exceed the `available` USDC: idle for a withdrawal (the rest is lent out), and for a
    /// loan also within the utilization cap ({lendableAssets}).
    error StakingVaultInsufficientLiquidity(uint256 requested, uint256 available);

    /// @notice An address argument (including the constructor's model, admin or forwarder) is zero.
    error StakingVaultZeroAddress();

    /// @notice An amount argument is zero.
    error StakingVaultZeroAmount();

    /// @notice The insurance fee is not below the principal.
    error StakingVaultInvalidInsuranceFee(uint256 principal, uint256 insuranceFee);

    /// @notice A repayment or loss of `amount` principal exceeds the principal out on loans.
    error StakingVaultExceedsBorrowed(uint256 amount, uint256 totalBorrowed);

    /// @notice A recovery of `amount` on loan `loanId` is above the `outstanding` loss it wrote off and has not recovered.
    error StakingVaultExceedsLoss(uint256 loanId, uint256 amount, uint256 outstanding);

    /// @notice Yield cannot be distributed while no tmUSDC exists.
    error StakingVaultNoShares();

    /// @notice A minimum deposit above the ceiling.
    error StakingVaultMinDepositTooHigh(uint256 minDeposit, uint256 max);

    /// @notice An insurance coverage above 100 %.
    error StakingVaultCoverageTooHigh(uint256 coverageBps, uint256 max);

    /// @notice A release of `amount` from the insurance reserve is above its `surplus`.
    error StakingVaultExceedsReserveSurplus(uint256 amount, uint256 surplus);

    /// @notice A utilization cap above 100 %.
    error StakingVaultMaxUtilizationTooHigh(uint256 maxUtilizationBps, uint256 max);

    /// @notice A profit unlock period above the ceiling.
    error StakingVaultUnlockPeriodTooLong(uint256 period, uint256 max);

    /// @notice Loan `loanId` is already impaired.
    error StakingVaultAlreadyImpaired(uint256 loanId);

    /// @notice The asset has more than 18 decimals.
    error StakingVaultUnsupportedAsset(uint8 decimals);

    /* ROLES AND CONSTANTS */

    /// @notice The role that may draw and return loan funds (granted to the LoanBook).
    /// @return The role id.
    function LENDER_ROLE() external view returns (bytes32);

    /// @notice The role that may distribute yield.
    /// @return The role id.
    function YIELD_ROLE() external view returns (bytes32);

    /// @notice The role that may pause and unpause.
    /// @return The role id.
    function PAUSER_ROLE() external view returns (bytes32);

    /// @notice The ceiling of the minimum deposit.
    /// @return The ceiling in asset units (1,000 USDC).
    function MAX_MIN_DEPOSIT() external view returns (uint256);

    /// @notice The ceiling of the profit unlock period.
    /// @return The ceiling in seconds (30 days).
    function MAX_PROFIT_UNLOCK_PERIOD() external view returns (uint256);

    /* DEPOSITS */

    /// @notice Deposits `assets` USDC for `receiver` like {IERC4626-deposit}, approving the vault in the same call with
    /// the caller's EIP-2612 permit, so a wallet without ETH can deposit through the forwarder in one signed request.
    /// @dev The permit's owner is the caller (`_msgSender()`: the signer of a forwarded request), its spender this
    /// vault and its value `assets`; none of them is an argument, so a permit only ever serves its signer's deposit. A
    /// permit that fails (already used by a front-runner, expired, invalid) is ignored and the deposit then relies on
    /// the allowance, as {IERC4626-deposit} does (the token reverts `ERC20InsufficientAllowance` without it). Same
    /// checks and events as {IERC4626-deposit}: `Deposit(caller, receiver, assets, shares)`; `EnforcedPause` while
    /// paused, {StakingVaultDepositTooSmall} below {minDeposit}.
    /// @param assets The USDC to deposit, and the permit's value.
    /// @param receiver The receiver of the shares.
    /// @param deadline The permit's deadline (Unix seconds).
    /// @param v The permit signature's `v`.
    /// @param r The permit signature's `r`.
    /// @param s The permit signature's `s`.
    /// @return shares The tmUSDC minted to `receiver`.
    function depositWithPermit(uint256 assets, address receiver, uint256 deadline, uint8 v, bytes32 r, bytes32 s)
        external
        returns (uint256 shares);

    /* VIEWS */

    /// @notice Principal currently out on loans.
    /// @return The amount in asset units.
    function totalBorrowed() external view returns (uint256);

    /// @notice USDC held for covering defaults (not part of {totalAssets}).
    /// @return The amount in asset units.
    function insuranceReserve() external view returns (uint256);

    /// @notice USDC available for withdrawals: the vault's balance minus the insurance reserve.
    /// @return The amount in asset units.
    function idleAssets() external view returns (uint256);

    /// @notice USDC a new loan may draw now: the idle USDC, within the utilization cap ({maxUtilizationBps}), so that
    /// depositors can always leave with the cap's headroom.
    /// @return The amount in asset units.
    function lendableAssets() external view returns (uint256);

    /// @notice The most {totalAssets} may reach through deposits ({maxDeposit} is the room left under it);
    /// `type(uint256).max` (the default) for no limit.
    /// @return The limit in asset units.
    function depositLimit() external view returns (uint256);

    /// @notice The utilization above which no loan is funded, in basis points of idle plus principal out.
    /// @return The cap.
    function maxUtilizationBps() external view returns (uint256);

    /// @notice totalBorrowed / (idle + totalBorrowed); zero for an empty vault.
    /// @return The utilization (WAD).
    function utilization() external view returns (uint256);

    /// @notice USDC per whole tmUSDC, including the virtual share and asset of the inflation protection.
    /// @dev 1e18 means 1 USDC per tmUSDC, the value of a new vault. Rises with interest and yield, falls only by a
    /// {StakingVaultLossRecognized}.
    /// @return The exchange rate (WAD).
    function exchangeRate() external view returns (uint256);

    /// @notice Gains not yet in the share price: they unlock linearly until {fullProfitUnlockDate}.
    /// @return The amount in asset units, as of now.
    function lockedProfit() external view returns (uint256);

    /// @notice When the profit locked now has fully unlocked (in the past when nothing is locked).
    /// @return A Unix timestamp.
    function fullProfitUnlockDate() external view returns (uint256);

    /// @notice The time a new gain takes to unlock (Yearn V3's `profitMaxUnlockTime`).
    /// @return The period in seconds.
    function profitUnlockPeriod() external view returns (uint256);

    /// @notice The depositors' interest the loans' schedules earned and the loans did not pay yet, part of
    /// {totalAssets}: negative while, taken together, they paid ahead of their schedules (that cash is not counted
    /// until it is earned).
    /// @return The amount in asset units, as of now, rounded down.
    function accruedInterest() external view returns (int256);

    /// @notice The expected losses out of {totalAssets} (the exit price) but not of {entryAssets}: the open loans'
    /// provisions ({provisioned}), the impaired loans' expected losses (principal and interest) and, by the clock,
    /// those of the loans past due and not impaired yet.
    /// @return The amount in asset units.
    function unrealizedLosses() external view returns (uint256);

    /// @notice The open loans' provisions: each loan's principal out at the expected-loss rate the lender gave at its
    /// funding (D-126), from its funding until it is repaid, impaired (the impairment takes its place) or written off.
    /// Part of {unrealizedLosses}. A loan past due and not marked yet counts both until it is touched.
    /// @return The amount in asset units.
    function provisioned() external view returns (uint256);

    /// @notice The depositors' assets at the entry price: {totalAssets} without the unrealized losses. Deposits and
    /// mints convert at it.
    /// @return The amount in asset units.
    function entryAssets() external view returns (uint256);

    /// @notice What impaired loan `loanId` still carries of its impairment (zeros when it is not impaired).
    /// @param loanId The LoanBook's id.
    /// @return principal The principal still out.
    /// @return expectedLoss The principal's expected loss (principal less cover), out of {totalAssets}.
    /// @return cover The reserve's cover it counts on, fixed when it was impaired.
    /// @return interest The interest its stopped schedule counted and it has not paid, out of {totalAssets} too.
    function impairmentOf(uint256 loanId)
        external
        view
        returns (uint256 principal, uint256 expectedLoss, uint256 cover, uint256 interest);

    /// @notice What the insurance reserve holds above what covers the loans out: each performing loan's principal out
    /// times its own coverage (the {insuranceCoverageBps} when it was funded), over 10_000 and rounded up, plus the
    /// covers the impaired loans count on.
    /// @return The amount in asset units.
    function reserveSurplus() external view returns (uint256);

    /// @notice Yield credited to depositors so far: distributed yield plus their share of loan interest.
    /// @return The amount in asset units.
    function totalYield() external view returns (uint256);

    /// @notice The smallest deposit (or mint, in assets) accepted.
    /// @return The amount in asset units.
    function minDeposit() external view returns (uint256);

    /// @notice The share of a default's loss the insurance reserve covers, while it has the funds.
    /// @return The share in basis points.
    function insuranceCoverageBps() external view returns (uint256);

    /// @notice The model the status view reads rates from and the reserve factor comes from.
    /// @return The model.
    function interestRateModel() external view returns (IInterestRateModel);

    /// @notice Everything `GET /vault/status` shows, in one call.
    /// @return status See {VaultStatus}.
    function vaultStatus() external view returns (VaultStatus memory status);

    /* LENDING (LENDER_ROLE) */

    /// @notice Funds loan `loanId`: `principal` leaves the idle assets, `borrower` receives
    /// `principal - insuranceFee` and `insuranceFee` is added to the insurance reserve. The depositors' part of
    /// `interest` (less the model's reserve factor, fixed now for this loan) accrues into {totalAssets} linearly, per
    /// second, until `dueDate`.
    /// @dev Only LENDER_ROLE, not while paused. {entryAssets} is unchanged; {totalAssets} falls by the provision.
    /// @param loanId The LoanBook's id, for the event.
    /// @param borrower The receiver of the net amount.
    /// @param principal The principal lent.
    /// @param insuranceFee The fee kept for the insurance reserve; must be below `principal`.
    /// @param interest The loan's interest (flat, owed by `dueDate`).
    /// @param dueDate When the interest is fully earned (Unix seconds).
    /// @param provisionBps The loan's expected loss as a share of its principal out (basis points, at most 10,000):
    /// provisioned out of {totalAssets} from now (see {provisioned}).
    function lend(
        uint256 loanId,
        address borrower,
        uint256 principal,
        uint256 insuranceFee,
        uint256 interest,
        uint256 dueDate,
        uint256 provisionBps
    ) external;

    /// @notice Records a repayment of loan `loanId`: `principal` leaves {totalBorrowed}; `interest` minus the loan's
    /// reserve factor's share settles the interest its schedule earned (or pays ahead of it), and is counted in
    /// {totalYield}. A loan that `closes` ends its schedule: what it paid above what it earned is locked for the
    /// depositors (see {lockedProfit}). On an impaired loan the interest, and the impairment the repaid principal
    /// releases, are locked.
    /// @dev Only LENDER_ROLE, allowed while paused; no model call. The caller transfers `principal + interest` USDC
    /// to the vault in the same transaction (the LoanBook does it right after this call); the vault trusts its lender
    /// for this as it trusts it with {lend}.
    /// @param loanId The LoanBook's id, for the event.
    /// @param principal The principal repaid.
    /// @param interest The interest paid.
    /// @param closes Whether the loan is closed by it (the loan book's payoff, or a refund).
    function recordRepayment(uint256 loanId, uint256 principal, uint256 interest, bool closes) external;

    /// @notice Puts loan `loanId`'s schedule on its new line: its whole `interest` earned from its funding until
    /// `dueDate`, as the loan book charges it after an extension or a refund. The change in what it has earned by
    /// now is a gain (locked) or a loss (taken from the locked profit first).
    /// @dev Only LENDER_ROLE. Nothing for an ended schedule.
    /// @param loanId The LoanBook's id.
    /// @param interest The loan's whole interest now.
    /// @param dueDate Its due date.
    function rescheduleInterest(uint256 loanId, uint256 interest, uint256 dueDate) external;

    /// @notice Impairs loan `loanId`, past due with `principal` out: the expected loss, `principal` minus the reserve's
    /// expected cover (`principal * insuranceCoverageBps / 10_000`, capped by the reserve not counted on by other
    /// impaired loans), and the interest its schedule counted and it did not pay, leave {totalAssets} (the exit
    /// price) now; {entryAssets} does not move.
    /// @dev Only LENDER_ROLE, allowed while paused. Nothing more accrues. Repayments release the impairment into the
    /// exit price at once: the principal's in proportion to the principal they repay, the interest's as it is paid;
    /// the loan's close writes off what it counted and did not pay. {recordLoss} realizes it.
    /// @param loanId The LoanBook's id.
    /// @param principal The principal still out on the loan.
    /// @return expectedLoss The part taken from the share price.
    function impairLoan(uint256 loanId, uint256 principal) external returns (uint256 expectedLoss);

    /// @notice Writes off `loss` principal of defaulted loan `loanId`: the insurance reserve covers the cover fixed
    /// when the loan was impaired (`loss * insuranceCoverageBps / 10_000` for a loan never impaired), capped by its
    /// balance; the uncovered rest replaces the impairment's expected loss in {totalAssets}.
    /// @dev Only LENDER_ROLE, allowed while paused. No USDC moves: covered funds change from reserve to idle.
    /// @param loanId The LoanBook's id, for the event.
    /// @param loss The outstanding principal written off.
    /// @return covered The part the reserve absorbed.
    /// @return uncovered The part the depositors bear.
    function recordLoss(uint256 loanId, uint256 loss) external returns (uint256 covered, uint256 uncovered);

    /// @notice Records `amount` USDC recovered on defaulted loan `loanId`, making good each party that bore its loss in
    /// its share of what is still lost: the insurance reserve (what it covered) and the depositors (the rest).
    /// @dev Only LENDER_ROLE, allowed while paused. The caller transfers `amount` USDC to the vault in the same
    /// transaction, as for {recordRepayment}. Reverts with {StakingVaultExceedsLoss} above what is still lost.
    /// @param loanId The LoanBook's id, for the event.
    /// @param amount The USDC recovered.
    function recordRecovery(uint256 loanId, uint256 amount) external;

    /// @notice Pays `amount` USDC of interest loan `loanId` had paid back to `to`: a refund reduced the loan's interest
    /// below what was paid. The reserve factor's share of it (at most the reserve) comes out of the insurance reserve,
    /// the rest out of the idle assets and {totalYield}, reversing {recordRepayment}.
    /// @dev Only LENDER_ROLE, allowed while paused (a refund settles a loan). Reverts with
    /// {StakingVaultInsufficientLiquidity} when the idle USDC cannot pay the depositors' part.
    /// @param loanId The LoanBook's id, for the event.
    /// @param to The borrower, who paid the interest.
    /// @param amount The interest to pay back.
    function returnInterest(uint256 loanId, address to, uint256 amount) external;

    /* YIELD (YIELD_ROLE) */

    /// @notice Pulls `amount` USDC from the caller and locks it for the depositors: it raises the exchange rate
    /// linearly over {profitUnlockPeriod}.
    /// @dev Only YIELD_ROLE; needs an allowance; reverts while no tmUSDC exists. Allowed while paused.
    /// @param amount The yield in asset units.
    function distributeYield(uint256 amount) external;

    /* ADMIN */

    /// @notice Sends `amount` of the insurance reserve's surplus ({reserveSurplus}) to `to`, the treasury. Only the
    /// default admin (the timelock in a deployment: a change anyone can see coming); the reserve never falls below what
    /// covers the loans out, and the depositors' assets do not move.
    /// @param to The receiver.
    /// @param amount The USDC to send, at most {reserveSurplus}.
    function releaseReserveSurplus(address to, uint256 amount) external;

    /// @notice Sets the time a new gain takes to unlock; what is locked keeps its schedule. Only the default admin.
    /// @param newPeriod The period in seconds, at most {MAX_PROFIT_UNLOCK_PERIOD} (zero: gains count at once).
    function setProfitUnlockPeriod(uint256 newPeriod) external;

    /// @notice Sets the most the depositors' assets may reach through deposits (`2**64 - 1` or more, 1.8e13 USDC: no
    /// limit, and {depositLimit} then reads `type(uint256).max`). Gains may take them above it; deposits then stop
    /// until they are below again. Only the default admin.
    /// @param newDepositLimit The new limit in asset units.
    function setDepositLimit(uint256 newDepositLimit) external;

    /// @notice Sets the utilization above which no loan is funded (basis points of idle plus principal out, at most
    /// 10_000). A tenth of the pool stays idle for exits by default (9_000). Only the default admin.
    /// @param newMaxUtilizationBps The new cap.
    function setMaxUtilization(uint256 newMaxUtilizationBps) external;

    /// @notice Sets the minimum deposit. Only the default admin; at most {MAX_MIN_DEPOSIT}.
    /// @param newMinDeposit The new minimum in asset units (zero disables it).
    function setMinDeposit(uint256 newMinDeposit) external;

    /// @notice Sets the share of a default's loss the insurance reserve covers, for the loans funded from now on: a
    /// loan keeps the coverage it was funded with. Only the default admin.
    /// @param newCoverageBps The new share in basis points, at most 10_000.
    function setInsuranceCoverage(uint256 newCoverageBps) external;

    /// @notice Sets the interest rate model. Only the default admin.
    /// @param newModel The new model (not zero).
    function setInterestRateModel(IInterestRateModel newModel) external;

    /// @notice Pauses deposits, mints and new loans (so purchases on credit). Only PAUSER_ROLE: a fast brake.
    /// @dev Withdrawals, redemptions, repayments, defaults, refunds and yield distribution stay open: a pause never
    /// traps depositors, and loans can always be settled.
    function pause() external;

    /// @notice Lifts the pause. Only the default admin (the timelock in a deployment), so whoever holds the pauser's key
    /// cannot undo a defender's pause.
    function unpause() external;
}
