// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";
import {IERC4626} from "@openzeppelin/contracts/interfaces/IERC4626.sol";
import {ERC2771Context} from "@openzeppelin/contracts/metatx/ERC2771Context.sol";
import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ERC4626} from "@openzeppelin/contracts/token/ERC20/extensions/ERC4626.sol";
import {IERC20Metadata} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Metadata.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Context} from "@openzeppelin/contracts/utils/Context.sol";
import {Pausable} from "@openzeppelin/contracts/utils/Pausable.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {IInterestRateModel} from "../interfaces/IInterestRateModel.sol";
import {IStakingVault} from "../interfaces/IStakingVault.sol";
import {TryPermit} from "../utils/TryPermit.sol";

/// @title StakingVault
/// @notice The USDC savings vault (shares: "TrustMint Staked USDC", tmUSDC). Its idle USDC funds the LoanBook's loans;
/// loan interest and distributed yield raise the tmUSDC exchange rate.
/// @dev OpenZeppelin's ERC4626 with its internal hooks overridden; the public entry points are wrapped only to add
/// the pause check (which must revert with `EnforcedPause`, while `maxDeposit` and the like must return 0) and, for
/// withdraw and redeem, to tell a lack of idle liquidity (`StakingVaultInsufficientLiquidity`) from a lack of
/// shares (`ERC4626ExceededMaxWithdraw/Redeem`), which OpenZeppelin's single `max*` check cannot do once
/// `maxWithdraw`/`maxRedeem` honestly include the liquidity limit.
///
/// Inflation (donation) attack stance: `_decimalsOffset()` is `18 - asset decimals` (12 for USDC), as in
/// MetaMorpho: tmUSDC has 18 decimals and the conversions carry 10**12 virtual shares and 1 virtual asset. An
/// attacker who deposits first and then donates USDC to the vault shares the donation with the virtual shares, so
/// each unit of loss inflicted on a later depositor by rounding costs the attacker about 10**12 units; the attack
/// never pays. Donations are otherwise counted as yield (assets are read from the balance, as in OpenZeppelin's
/// ERC4626), and the minimum deposit keeps deposits far above the rounding unit.
///
/// Rounding always favours the vault (OpenZeppelin's conversions); {maxRedeem} rounds the liquidity limit down.
///
/// Fair exits (docs/decisions.md D-95): every gain is locked and unlocks linearly over {profitUnlockPeriod} (Yearn
/// V3's profit unlocking, with its weighted end when gains overlap), and a loan past due is impaired before it can
/// default (Maple's `impairLoan`), so neither a deposit timed before a gain nor an exit timed before a known loss
/// moves value between depositors.
///
/// Meta-transactions: the vault trusts one ERC-2771 forwarder (fixed at construction), and every actor is read with
/// `_msgSender()` (OpenZeppelin's ERC20, ERC4626, AccessControl and Pausable already do), so a request the user signed
/// and a relayer submitted through the forwarder takes the same path and emits the same events as the user's own call.
contract StakingVault is ERC4626, AccessControl, Pausable, ReentrancyGuardTransient, ERC2771Context, IStakingVault {
    using Math for uint256;
    using SafeCast for uint256;
    using SafeCast for int256;
    using SafeERC20 for IERC20;
    using TryPermit for IERC20;

    /// @inheritdoc IStakingVault
    bytes32 public constant LENDER_ROLE = keccak256("LENDER_ROLE");

    /// @inheritdoc IStakingVault
    bytes32 public constant YIELD_ROLE = keccak256("YIELD_ROLE");

    /// @inheritdoc IStakingVault
    bytes32 public constant PAUSER_ROLE = keccak256("PAUSER_ROLE");

    /// @inheritdoc IStakingVault
    uint256 public constant MAX_MIN_DEPOSIT = 1_000e6;

    /// @inheritdoc IStakingVault
    uint256 public constant MAX_PROFIT_UNLOCK_PERIOD = 30 days;

    uint256 internal constant WAD = 1e18;
    uint256 internal constant BPS = 10_000;

    /// @dev 1 USDC and 80 % (the product reference's insurance cover).
    uint256 internal constant DEFAULT_MIN_DEPOSIT = 1e6;
    uint256 internal constant DEFAULT_INSURANCE_COVERAGE_BPS = 8_000;
    uint256 internal constant DEFAULT_PROFIT_UNLOCK_PERIOD = 7 days;
    uint64 internal constant NO_DEPOSIT_LIMIT = type(uint64).max;
    /// @dev `_nextDueHour` when no loan is listed as falling due.
    uint24 internal constant NO_DUE_HOUR = type(uint24).max;
    /// @dev A tenth of the pool stays idle for exits (D-101).
    uint256 internal constant DEFAULT_MAX_UTILIZATION_BPS = 9_000;

    /// @dev Interest rates are booked per second scaled by 1e12: exact to 1e-12 micro-USDC a second.
    uint256 internal constant ACCRUAL_SCALE = 1e12;

    uint8 private immutable _DECIMALS_OFFSET;

    // Deposit and redeem read these together, so they share one slot with Pausable's `_paused` (the slot before): uint96
    // holds 7.9e22 USDC, and the minimum is at most MAX_MIN_DEPOSIT.
    // `_nextDueHour` is the first hour (Unix time / 1 hours) whose bucket lists loans falling due then and not impaired
    // (NO_DUE_HOUR: none), so that a conversion tells at no extra read whether a loan is past due by the clock.
    uint96 private _totalBorrowed;
    uint96 private _insuranceReserve;
    uint32 private _minDeposit;
    uint24 private _nextDueHour;

    // Every conversion reads these too, so they share the second slot: `_lockedProfit` was locked at `_lockedAt` and
    // unlocks linearly until `_unlockEnd`; `_unrealizedLosses` are the impaired loans' expected losses (uint80 holds
    // 1.2e18 USDC).
    uint96 private _lockedProfit;
    uint40 private _lockedAt;
    uint40 private _unlockEnd;
    uint80 private _unrealizedLosses;

    // What a repayment writes, in one slot: the period is at most MAX_PROFIT_UNLOCK_PERIOD; `_coveredPrincipal` is
    // the principal out of the loans not impaired, each times its own coverage (basis points, fixed at funding), so
    // the reserve that covers them is this over BPS (uint112 holds 2^96 times 10,000).
    uint32 private _profitUnlockPeriod;
    uint16 private _insuranceCoverageBps;
    uint96 private _totalYield;
    uint112 private _coveredPrincipal;

    // Funding reads the model; a deposit reads the limit: the utilization above which no loan is funded, and the most
    // the depositors' assets may reach through deposits in asset units (NO_DEPOSIT_LIMIT: none; uint64 holds 1.8e13
    // USDC).
    IInterestRateModel private _interestRateModel;
    uint16 private _maxUtilizationBps;
    uint64 private _depositLimit;

    /// @dev A defaulted loan's loss not yet recovered: the reserve's part and the depositors' ({recordRecovery}).
    struct Loss {
        uint128 covered;
        uint128 uncovered;
    }

    mapping(uint256 loanId => Loss) private _lossOf;

    // The third slot every conversion reads: the depositors' interest earned on the loans' schedules less what they
    // paid of it, as of `_bookedAt` (scaled by ACCRUAL_SCALE; negative while loans have paid ahead of their
    // schedules), growing at `_accrualRate`, the sum of the rates of the schedules still running.
    int112 private _booked;
    uint40 private _bookedAt;
    uint104 private _accrualRate;

    // The reserve cover the impaired loans count on, and the open loans' provisions (D-126: in `_unrealizedLosses` too).
    uint96 private _impairedCover;
    uint96 private _provisioned;

    /// @dev A loan's interest schedule, the loan book's own line: the depositors' part of its interest is earned at
    /// `rate` (scaled, a second) from `from` (its funding) until `until` (its due date), and `paid` of it was paid.
    /// `accruing` says whether `rate` is in the sum (it leaves it when the schedule ends, or is put on a due date
    /// already past; until then the sum runs on past `until`, and the next touch gives that back). `reserveFactor`
    /// (WAD) is the model's at funding: the reserve's part of the interest is never booked, and a later change of the
    /// factor does not touch the loan; `coverageBps` is the insurance coverage at funding, kept the same way. `from`
    /// is zero only for a loan never lent. `provisionBps` is the share of `principal` (still out) provisioned as its
    /// expected loss from its funding until it is impaired or closed (D-126).
    struct Accrual {
        uint88 rate;
        uint40 from;
        uint40 until;
        uint64 reserveFactor;
        uint16 coverageBps;
        bool accruing;
        uint96 paid;
        bool ended;
        uint96 principal;
        bool listed;
        uint16 provisionBps;
    }

    mapping(uint256 loanId => Accrual) private _accrualOf;

    /// @dev The loans falling due in one hour and not impaired (D-123): their principal out less their provisions (the
    /// unrealized losses count those already, D-126), the reserve's cover of the principal at each loan's coverage, the
    /// interest their schedules count by their due dates and how many they are; for those still accruing, the sum of
    /// their rates and of rate times due date, so that a view stops their interest at the due date to the second.
    struct DueBucket {
        uint96 principal;
        uint72 cover;
        uint72 interest;
        uint16 count;
        uint104 rate;
        uint152 rateTimesDue;
    }

    mapping(uint256 hour => DueBucket) private _dueAt;
    mapping(uint256 word => uint256 hours_) private _dueHours;
    uint256 private _listedLoans;

    /// @dev What the loans past due and not impaired take by the clock: their expected loss, the interest the sum of
    /// rates counted past their due dates (scaled), and the rates still in the sum.
    struct PastDue {
        uint256 loss;
        uint256 overCounted;
        uint256 rate;
    }

    /// @dev An impaired loan's principal still out, the reserve's cover that principal counts on (its expected loss is
    /// the rest), and the interest its stopped schedule counted and it has not paid (expected lost too).
    struct Impairment {
        uint96 principal;
        uint80 cover;
        uint80 interest;
    }

    mapping(uint256 loanId => Impairment) private _impairmentOf;

    /// @param usdc The asset (6-decimal USDC; any ERC-20 with at most 18 decimals works).
    /// @param model The interest rate model.
    /// @param admin Receives DEFAULT_ADMIN_ROLE; grants the other roles after deployment.
    /// @param forwarder The trusted ERC-2771 forwarder (the platform's `TrustMintForwarder`).
    constructor(IERC20 usdc, IInterestRateModel model, address admin, address forwarder)
        ERC20("TrustMint Staked USDC", "tmUSDC")
        ERC4626(usdc)
        ERC2771Context(forwarder)
    {
        if (address(model) == address(0) || admin == address(0) || forwarder == address(0)) {
            revert StakingVaultZeroAddress();
        }
        uint8 assetDecimals = IERC20Metadata(address(usdc)).decimals();
        if (assetDecimals > 18) revert StakingVaultUnsupportedAsset(assetDecimals);
        // Cannot underflow: checked just above.
        _DECIMALS_OFFSET = 18 - assetDecimals;

        _grantRole(DEFAULT_ADMIN_ROLE, admin);
        _minDeposit = uint32(DEFAULT_MIN_DEPOSIT);
        _insuranceCoverageBps = uint16(DEFAULT_INSURANCE_COVERAGE_BPS);
        _interestRateModel = model;
        _maxUtilizationBps = uint16(DEFAULT_MAX_UTILIZATION_BPS);
        _depositLimit = NO_DEPOSIT_LIMIT;
        _profitUnlockPeriod = uint32(DEFAULT_PROFIT_UNLOCK_PERIOD);
        _nextDueHour = NO_DUE_HOUR;
    }

    /* ERC-4626 ENTRY POINTS */

    /// @inheritdoc IERC4626
    /// @dev Reverts with `EnforcedPause` while paused and `StakingVaultDepositTooSmall` below {minDeposit}.
    function deposit(uint256 assets, address receiver)
        public
        override(ERC4626, IERC4626)
        nonReentrant
        whenNotPaused
        returns (uint256)
    {
        _relockIfEmpty();
        return super.deposit(assets, receiver);
    }

    /// @inheritdoc IStakingVault
    function depositWithPermit(uint256 assets, address receiver, uint256 deadline, uint8 v, bytes32 r, bytes32 s)
        external
        nonReentrant
        whenNotPaused
        returns (uint256)
    {
        IERC20(asset()).tryPermit(_msgSender(), assets, deadline, v, r, s);
        _relockIfEmpty();
        return super.deposit(assets, receiver);
    }

    /// @inheritdoc IERC4626
    /// @dev Reverts with `EnforcedPause` while paused and `StakingVaultDepositTooSmall` when the assets are below
    /// {minDeposit}.
    function mint(uint256 shares, address receiver)
        public
        override(ERC4626, IERC4626)
        nonReentrant
        whenNotPaused
        returns (uint256)
    {
        _relockIfEmpty();
        return super.mint(shares, receiver);
    }

    /// @inheritdoc IERC4626
    /// @dev Open while paused (a pause never traps depositors). Reverts with `ERC4626ExceededMaxWithdraw` above the
    /// owner's redeemable assets and `StakingVaultInsufficientLiquidity` above the idle USDC.
    function withdraw(uint256 assets, address receiver, address owner)
        public
        override(ERC4626, IERC4626)
        nonReentrant
        returns (uint256 shares)
    {
        uint256 maxAssets = previewRedeem(balanceOf(owner));
        if (assets > maxAssets) revert ERC4626ExceededMaxWithdraw(owner, assets, maxAssets);

        shares = previewWithdraw(assets);
        _withdraw(_msgSender(), receiver, owner, assets, shares);
    }

    /// @inheritdoc IERC4626
    /// @dev Open while paused. Reverts with `ERC4626ExceededMaxRedeem` above the owner's shares and
    /// `StakingVaultInsufficientLiquidity` when the assets exceed the idle USDC.
    function redeem(uint256 shares, address receiver, address owner)
        public
        override(ERC4626, IERC4626)
        nonReentrant
        returns (uint256 assets)
    {
        uint256 maxShares = balanceOf(owner);
        if (shares > maxShares) revert ERC4626ExceededMaxRedeem(owner, shares, maxShares);

        assets = previewRedeem(shares);
        _withdraw(_msgSender(), receiver, owner, assets, shares);
    }

    /* ERC-4626 VIEWS */

    /// @inheritdoc IERC4626
    /// @dev What the depositors would get on exit now: idle USDC (balance minus the insurance reserve) plus the
    /// principal out and the interest booked, less the profit still locked and the unrealized losses. Exits and the
    /// conversions price at it; entries at {entryAssets}, which does not subtract the unrealized losses.
    function totalAssets() public view override(ERC4626, IERC4626) returns (uint256 exit) {
        (, exit,) = _assets(_idleAssets() + _totalBorrowed);
    }

    /// @inheritdoc IStakingVault
    function entryAssets() external view returns (uint256 entry) {
        (entry,,) = _assets(_idleAssets() + _totalBorrowed);
    }

    /// @inheritdoc IERC4626
    /// @dev At the entry price: unrealized losses do not lower it (Maple v2), so no deposit buys a loss that may be
    /// reversed.
    function previewDeposit(uint256 assets) public view override(ERC4626, IERC4626) returns (uint256) {
        return _convertToEntryShares(assets, Math.Rounding.Floor);
    }

    /// @inheritdoc IERC4626
    /// @dev At the entry price, as {previewDeposit}.
    function previewMint(uint256 shares) public view override(ERC4626, IERC4626) returns (uint256) {
        return _convertToEntryAssets(shares, Math.Rounding.Ceil);
    }

    /// @inheritdoc IERC4626
    /// @dev What {deposit} accepts now: the room left under {depositLimit} (unlimited by default); zero while paused
    /// or when that room is below {minDeposit}, the smallest deposit accepted (no deposit could succeed then).
    function maxDeposit(address) public view override(ERC4626, IERC4626) returns (uint256) {
        if (paused()) return 0;
        uint64 limit = _depositLimit;
        if (limit == NO_DEPOSIT_LIMIT) return type(uint256).max;
        uint256 room = uint256(limit).saturatingSub(totalAssets());
        return room < _minDeposit ? 0 : room;
    }

    /// @inheritdoc IERC4626
    /// @dev The shares {maxDeposit}'s assets mint (rounded down), unlimited when it is; zero when it is. The smallest
    /// mint accepted is the shares of {minDeposit}, rounded up.
    function maxMint(address receiver) public view override(ERC4626, IERC4626) returns (uint256) {
        uint256 assets = maxDeposit(receiver);
        if (assets == type(uint256).max || assets == 0) return assets;
        uint256 shares = _convertToEntryShares(assets, Math.Rounding.Floor);
        // Those shares cost at most `assets` (rounded up), which may fall below the minimum when the room is at it.
        return _convertToEntryAssets(shares, Math.Rounding.Ceil) < _minDeposit ? 0 : shares;
    }

    /// @inheritdoc IERC4626
    /// @dev The owner's redeemable assets, capped by the idle USDC, paused or not.
    function maxWithdraw(address owner) public view override(ERC4626, IERC4626) returns (uint256) {
        return Math.min(previewRedeem(balanceOf(owner)), _idleAssets());
    }

    /// @inheritdoc IERC4626
    /// @dev The owner's shares, capped by the shares the idle USDC redeems (rounded down), paused or not.
    function maxRedeem(address owner) public view override(ERC4626, IERC4626) returns (uint256) {
        return Math.min(balanceOf(owner), _convertToShares(_idleAssets(), Math.Rounding.Floor));
    }

    /// @inheritdoc ERC20
    function decimals() public view override(ERC4626, IERC20Metadata) returns (uint8) {
        return super.decimals();
    }

    /* STAKING VAULT VIEWS */

    /// @inheritdoc IStakingVault
    function totalBorrowed() external view returns (uint256) {
        return _totalBorrowed;
    }

    /// @inheritdoc IStakingVault
    function insuranceReserve() external view returns (uint256) {
        return _insuranceReserve;
    }

    /// @inheritdoc IStakingVault
    function idleAssets() external view returns (uint256) {
        return _idleAssets();
    }

    /// @inheritdoc IStakingVault
    function lendableAssets() external view returns (uint256) {
        return _lendableAssets();
    }

    /// @inheritdoc IStakingVault
    function depositLimit() external view returns (uint256) {
        uint64 limit = _depositLimit;
        return limit == NO_DEPOSIT_LIMIT ? type(uint256).max : limit;
    }

    /// @inheritdoc IStakingVault
    function maxUtilizationBps() external view returns (uint256) {
        return _maxUtilizationBps;
    }

    /// @inheritdoc IStakingVault
    function utilization() public view returns (uint256) {
        uint256 borrowed = _totalBorrowed;
        return _utilization(borrowed, _idleAssets() + borrowed);
    }

    /// @inheritdoc IStakingVault
    function exchangeRate() public view returns (uint256) {
        return _exchangeRate(totalAssets());
    }

    /// @inheritdoc IStakingVault
    function lockedProfit() external view returns (uint256) {
        return _lockedProfitNow();
    }

    /// @inheritdoc IStakingVault
    function fullProfitUnlockDate() external view returns (uint256) {
        return _unlockEnd;
    }

    /// @inheritdoc IStakingVault
    function profitUnlockPeriod() external view returns (uint256) {
        return _profitUnlockPeriod;
    }

    /// @inheritdoc IStakingVault
    function accruedInterest() external view returns (int256) {
        return _bookedAssets();
    }

    /// @inheritdoc IStakingVault
    function unrealizedLosses() external view returns (uint256) {
        return _unrealizedLosses + _pastDue().loss;
    }

    /// @inheritdoc IStakingVault
    function provisioned() external view returns (uint256) {
        return _provisioned;
    }

    /// @inheritdoc IStakingVault
    function impairmentOf(uint256 loanId)
        external
        view
        returns (uint256 principal, uint256 expectedLoss, uint256 cover, uint256 interest)
    {
        Impairment memory impairment = _impairmentOf[loanId];
        return (impairment.principal, impairment.principal - impairment.cover, impairment.cover, impairment.interest);
    }

    /// @inheritdoc IStakingVault
    function reserveSurplus() public view returns (uint256) {
        uint256 needed = Math.ceilDiv(_coveredPrincipal, BPS) + _impairedCover;
        return uint256(_insuranceReserve).saturatingSub(needed);
    }

    /// @inheritdoc IStakingVault
    function totalYield() external view returns (uint256) {
        return _totalYield;
    }

    /// @inheritdoc IStakingVault
    function minDeposit() external view returns (uint256) {
        return _minDeposit;
    }

    /// @inheritdoc IStakingVault
    function insuranceCoverageBps() external view returns (uint256) {
        return _insuranceCoverageBps;
    }

    /// @inheritdoc IStakingVault
    function interestRateModel() external view returns (IInterestRateModel) {
        return _interestRateModel;
    }

    /// @inheritdoc IStakingVault
    function vaultStatus() external view returns (VaultStatus memory status) {
        uint256 idle = _idleAssets();
        uint256 borrowed = _totalBorrowed;
        (, uint256 assets, uint256 rateDue) = _assets(idle + borrowed);
        uint256 util = _utilization(borrowed, idle + borrowed);
        status = VaultStatus({
            totalAssets: assets,
            idleAssets: idle,
            totalBorrowed: borrowed,
            insuranceReserve: _insuranceReserve,
            utilization: util,
            borrowRate: _interestRateModel.borrowRate(util),
            supplyRate: _earningRate(assets, rateDue),
            exchangeRate: _exchangeRate(assets),
            totalSupply: totalSupply(),
            totalYield: _totalYield,
            paused: paused()
        });
    }

    /* LENDING */

    /// @inheritdoc IStakingVault
    function lend(
        uint256 loanId,
        address borrower,
        uint256 principal,
        uint256 insuranceFee,
        uint256 interest,
        uint256 dueDate,
        uint256 provisionBps
    )
        external
        onlyRole(LENDER_ROLE)
        nonReentrant
        whenNotPaused
    {
        if (borrower == address(0)) revert StakingVaultZeroAddress();
        if (principal == 0) revert StakingVaultZeroAmount();
        if (insuranceFee >= principal) revert StakingVaultInvalidInsuranceFee(principal, insuranceFee);
        uint256 available = _lendableAssets();
        if (principal > available) revert StakingVaultInsufficientLiquidity(principal, available);

        // The fee stays in the vault as reserve: idle falls by the whole principal, totalAssets is unchanged.
        uint256 newTotalBorrowed = _totalBorrowed + principal;
        _totalBorrowed = newTotalBorrowed.toUint96();
        _insuranceReserve = (_insuranceReserve + insuranceFee).toUint96();
        uint256 coverageBps = _insuranceCoverageBps;
        // Within uint112: the principal is within the borrowed uint96 and the coverage at most BPS.
        _coveredPrincipal += uint112(principal * coverageBps);
        // Its expected loss leaves the exit price from now (D-126): an exit before it is due leaves its share behind.
        _startAccrual(loanId, principal, interest, dueDate, coverageBps, Math.min(provisionBps, BPS));
        _provisionChanged(_accrualOf[loanId], 0);

        emit StakingVaultFundsLent(loanId, borrower, principal, insuranceFee, newTotalBorrowed);

        // Cannot underflow: insuranceFee < principal.
        IERC20(asset()).safeTransfer(borrower, principal - insuranceFee);
    }

    /// @inheritdoc IStakingVault
    function recordRepayment(uint256 loanId, uint256 principal, uint256 interest, bool closes)
        external
        onlyRole(LENDER_ROLE)
    {
        uint256 borrowed = _totalBorrowed;
        if (principal > borrowed) revert StakingVaultExceedsBorrowed(principal, borrowed);
        // The loan's own factor, fixed when it was funded: no model call, so no model can block a repayment.
        uint256 reserveShare = interest.mulDiv(_reserveFactorOf(loanId), WAD);
        uint256 impairedPart = _releaseImpairment(loanId, principal);
        // The principal not impaired leaves the reserve's cover at its own coverage (an impaired one left it already).
        _uncover(loanId, principal - impairedPart);

        // The due list counts the principal still out (the loan that closes leaves it below).
        if (principal != 0 && !closes) _reducePrincipal(loanId, principal);

        // Cannot underflow: checked above, and reserveShare <= interest.
        uint256 newTotalBorrowed = borrowed - principal;
        _totalBorrowed = uint96(newTotalBorrowed);
        _insuranceReserve = (_insuranceReserve + reserveShare).toUint96();
        _totalYield = (_totalYield + interest - reserveShare).toUint96();
        // The interest settles what its schedule earned (or pays ahead of it); a loan that closes ends its schedule.
        _payAccrual(loanId, interest - reserveShare);
        if (closes) _endAccrual(loanId);
        _syncImpairedInterest(loanId);

        emit StakingVaultRepaymentRecorded(loanId, principal, interest, reserveShare, newTotalBorrowed);
    }

    /// @inheritdoc IStakingVault
    function rescheduleInterest(uint256 loanId, uint256 interest, uint256 dueDate) external onlyRole(LENDER_ROLE) {
        _rescheduleAccrual(loanId, interest, dueDate);
        _syncImpairedInterest(loanId);
    }

    /// @inheritdoc IStakingVault
    function impairLoan(uint256 loanId, uint256 principal)
        external
        onlyRole(LENDER_ROLE)
        returns (uint256 expectedLoss)
    {
        uint256 borrowed = _totalBorrowed;
        if (principal > borrowed) revert StakingVaultExceedsBorrowed(principal, borrowed);
        Impairment storage impairment = _impairmentOf[loanId];
        if (impairment.principal != 0) revert StakingVaultAlreadyImpaired(loanId);
        // The cover the reserve can still give, after what the other impaired loans count on.
        // The loan's own coverage, fixed when it was funded: a later change is not retroactive.
        uint256 cover = Math.min(
            principal.mulDiv(_uncover(loanId, principal), BPS), uint256(_insuranceReserve).saturatingSub(_impairedCover)
        );
        expectedLoss = principal - cover;

        // The cast is safe: the principal is at most the borrowed uint96.
        impairment.principal = uint96(principal);
        impairment.cover = cover.toUint80();
        _unrealizedLosses = (_unrealizedLosses + expectedLoss).toUint80();
        _impairedCover = (_impairedCover + cover).toUint96();
        // Nothing more accrues; what its schedule counted and it did not pay stays booked, and is expected lost too.
        // Only the exit price falls: the entry price (and so the locked profit) does not move (Maple v2). The impairment
        // takes the place of its provision.
        _stopAccrual(loanId);
        _dropProvision(loanId);
        _syncImpairedInterest(loanId);

        emit StakingVaultLoanImpaired(loanId, principal, expectedLoss, cover, exchangeRate());
    }

    /// @inheritdoc IStakingVault
    function recordLoss(uint256 loanId, uint256 loss)
        external
        onlyRole(LENDER_ROLE)
        returns (uint256 covered, uint256 uncovered)
    {
        uint256 borrowed = _totalBorrowed;
        if (loss > borrowed) revert StakingVaultExceedsBorrowed(loss, borrowed);
        uint256 reserve = _insuranceReserve;
        // An impaired loan's cover was fixed when it was impaired, and its expected loss was out of the exit price
        // already: the exit price moves only by a shortfall of the reserve. Either way the coverage is the loan's own.
        Impairment memory impairment = _impairmentOf[loanId];
        bool impaired = impairment.principal != 0;
        covered = Math.min(impaired ? impairment.cover : loss.mulDiv(_uncover(loanId, loss), BPS), reserve);
        uncovered = loss - covered;
        delete _impairmentOf[loanId];
        _unrealizedLosses -= uint80(impairment.principal - impairment.cover + impairment.interest);
        _impairedCover -= impairment.cover;

        // Cannot underflow: loss <= borrowed and covered <= reserve. The covered USDC turns from reserve into idle.
        _totalBorrowed = uint96(borrowed - loss);
        _insuranceReserve = uint96(reserve - covered);
        // Kept for a recovery, which makes each good in its share; both fit 128 bits (at most the borrowed uint96).
        _lossOf[loanId] = Loss(uint128(covered), uint128(uncovered));
        // Realized now for entries too: the unpaid interest it counted is written off, and the uncovered principal.
        _endAccrual(loanId);
        _absorbLoss(uncovered);

        emit StakingVaultLossRecognized(loanId, loss, covered, uncovered, exchangeRate());
    }

    /// @inheritdoc IStakingVault
    function recordRecovery(uint256 loanId, uint256 amount) external onlyRole(LENDER_ROLE) {
        Loss storage loss = _lossOf[loanId];
        uint256 covered = loss.covered;
        uint256 outstanding = covered + loss.uncovered;
        if (amount > outstanding) revert StakingVaultExceedsLoss(loanId, amount, outstanding);
        // Each party that bore the loss is made good in its share of it (the depositors' favour when rounding).
        uint256 toReserve = amount.mulDiv(covered, outstanding);
        // Cannot underflow: toReserve <= covered and amount - toReserve <= uncovered; the reserve stays within uint96
        // as every USDC the vault holds does.
        loss.covered = uint128(covered - toReserve);
        loss.uncovered = uint128(outstanding - covered - (amount - toReserve));
        _insuranceReserve = (_insuranceReserve + toReserve).toUint96();
        _lockGain(amount - toReserve);

        // The USDC arrives right after this call (the LoanBook transfers it): the rate the event names counts it.
        emit StakingVaultLossRecovered(loanId, amount, toReserve, _exchangeRate(totalAssets() + amount - toReserve));
    }

    /// @inheritdoc IStakingVault
    function returnInterest(uint256 loanId, address to, uint256 amount) external onlyRole(LENDER_ROLE) nonReentrant {
        if (to == address(0)) revert StakingVaultZeroAddress();
        if (amount == 0) revert StakingVaultZeroAmount();
        // The share the reserve took when the interest was paid, at the loan's factor (capped at the reserve).
        uint256 reserve = _insuranceReserve;
        uint256 reserveShare = Math.min(amount.mulDiv(_reserveFactorOf(loanId), WAD), reserve);
        uint256 fromIdle = amount - reserveShare;
        uint256 available = _idleAssets();
        if (fromIdle > available) revert StakingVaultInsufficientLiquidity(fromIdle, available);

        // Cannot underflow: reserveShare <= reserve; the yield credited is floored at zero.
        _insuranceReserve = uint96(reserve - reserveShare);
        _totalYield = uint96(uint256(_totalYield).saturatingSub(fromIdle));
        // Interest of a running schedule is unpaid again (its earned part stays counted); of an ended one, a loss.
        _unpayAccrual(loanId, fromIdle);
        _syncImpairedInterest(loanId);

        emit StakingVaultInterestReturned(loanId, to, amount, reserveShare);

        IERC20(asset()).safeTransfer(to, amount);
    }

    /* YIELD */

    /// @inheritdoc IStakingVault
    function distributeYield(uint256 amount) external onlyRole(YIELD_ROLE) nonReentrant {
        if (amount == 0) revert StakingVaultZeroAmount();
        if (totalSupply() == 0) revert StakingVaultNoShares();

        uint256 newTotalYield = _totalYield + amount;
        _totalYield = newTotalYield.toUint96();
        _lockGain(amount);

        // The rate once the transfer below has landed.
        emit StakingVaultYieldDistributed(_msgSender(), amount, newTotalYield, _exchangeRate(totalAssets() + amount));

        IERC20(asset()).safeTransferFrom(_msgSender(), address(this), amount);
    }

    /* ADMIN */

    /// @inheritdoc IStakingVault
    function releaseReserveSurplus(address to, uint256 amount) external onlyRole(DEFAULT_ADMIN_ROLE) nonReentrant {
        if (to == address(0)) revert StakingVaultZeroAddress();
        if (amount == 0) revert StakingVaultZeroAmount();
        uint256 surplus = reserveSurplus();
        if (amount > surplus) revert StakingVaultExceedsReserveSurplus(amount, surplus);

        // Cannot underflow: the surplus is part of the reserve. Idle (balance less reserve) does not change.
        _insuranceReserve -= uint96(amount);

        emit StakingVaultReserveSurplusReleased(to, amount);

        IERC20(asset()).safeTransfer(to, amount);
    }

    /// @inheritdoc IStakingVault
    function setProfitUnlockPeriod(uint256 newPeriod) external onlyRole(DEFAULT_ADMIN_ROLE) {
        if (newPeriod > MAX_PROFIT_UNLOCK_PERIOD) revert StakingVaultUnlockPeriodTooLong(newPeriod, MAX_PROFIT_UNLOCK_PERIOD);
        // Cannot overflow: at most MAX_PROFIT_UNLOCK_PERIOD.
        _profitUnlockPeriod = uint32(newPeriod);
        emit StakingVaultProfitUnlockPeriodUpdated(newPeriod);
    }

    /// @inheritdoc IStakingVault
    function setMinDeposit(uint256 newMinDeposit) external onlyRole(DEFAULT_ADMIN_ROLE) {
        if (newMinDeposit > MAX_MIN_DEPOSIT) revert StakingVaultMinDepositTooHigh(newMinDeposit, MAX_MIN_DEPOSIT);
        // Cannot overflow: at most MAX_MIN_DEPOSIT.
        _minDeposit = uint32(newMinDeposit);
        emit StakingVaultMinDepositUpdated(newMinDeposit);
    }

    /// @inheritdoc IStakingVault
    function setInsuranceCoverage(uint256 newCoverageBps) external onlyRole(DEFAULT_ADMIN_ROLE) {
        if (newCoverageBps > BPS) revert StakingVaultCoverageTooHigh(newCoverageBps, BPS);
        // Cannot overflow: at most 10_000.
        _insuranceCoverageBps = uint16(newCoverageBps);
        emit StakingVaultInsuranceCoverageUpdated(newCoverageBps);
    }

    /// @inheritdoc IStakingVault
    function setDepositLimit(uint256 newDepositLimit) external onlyRole(DEFAULT_ADMIN_ROLE) {
        // A limit beyond 64 bits (1.8e13 USDC) is no limit.
        bool none = newDepositLimit >= NO_DEPOSIT_LIMIT;
        _depositLimit = none ? NO_DEPOSIT_LIMIT : uint64(newDepositLimit);
        emit StakingVaultDepositLimitUpdated(none ? type(uint256).max : newDepositLimit);
    }

    /// @inheritdoc IStakingVault
    function setMaxUtilization(uint256 newMaxUtilizationBps) external onlyRole(DEFAULT_ADMIN_ROLE) {
        if (newMaxUtilizationBps > BPS) revert StakingVaultMaxUtilizationTooHigh(newMaxUtilizationBps, BPS);
        // Cannot overflow: at most 10_000.
        _maxUtilizationBps = uint16(newMaxUtilizationBps);
        emit StakingVaultMaxUtilizationUpdated(newMaxUtilizationBps);
    }

    /// @inheritdoc IStakingVault
    function setInterestRateModel(IInterestRateModel newModel) external onlyRole(DEFAULT_ADMIN_ROLE) {
        if (address(newModel) == address(0)) revert StakingVaultZeroAddress();
        _interestRateModel = newModel;
        emit StakingVaultInterestRateModelUpdated(address(newModel));
    }

    /// @inheritdoc IStakingVault
    function pause() external onlyRole(PAUSER_ROLE) {
        _pause();
    }

    /// @inheritdoc IStakingVault
    function unpause() external onlyRole(DEFAULT_ADMIN_ROLE) {
        _unpause();
    }

    /* INTERNAL HOOKS */

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

    /// @dev Adds the minimum-deposit check to OpenZeppelin's deposit hook (used by deposit and mint).
    function _deposit(address caller, address receiver, uint256 assets, uint256 shares) internal override {
        uint256 minimum = _minDeposit;
        if (assets < minimum) revert StakingVaultDepositTooSmall(assets, minimum);
        super._deposit(caller, receiver, assets, shares);
    }

    /// @dev Adds the liquidity check to OpenZeppelin's withdraw hook (used by withdraw and redeem).
    function _withdraw(address caller, address receiver, address owner, uint256 assets, uint256 shares)
        internal
        override
    {
        uint256 available = _idleAssets();
        if (assets > available) revert StakingVaultInsufficientLiquidity(assets, available);
        super._withdraw(caller, receiver, owner, assets, shares);
    }

    /// @dev 18 - asset decimals: see the inflation-attack stance in the contract's notes.
    function _decimalsOffset() internal view override returns (uint8) {
        return _DECIMALS_OFFSET;
    }

    /// @dev The vault's USDC minus the insurance reserve. The reserve never exceeds the balance (it only grows by
    /// USDC kept in the vault, and withdrawals and loans only take idle USDC); the floor at zero is defensive.
    function _idleAssets() internal view returns (uint256) {
        return IERC20(asset()).balanceOf(address(this)).saturatingSub(_insuranceReserve);
    }

    /// @dev What the depositors earn now, a year at this pace over `assets` (WAD): the loans' interest accruing and the
    /// profit unlocking, per second. Not the model's curve: a loan at 0 % counts in the utilization and earns nothing.
    function _earningRate(uint256 assets, uint256 rateDue) internal view returns (uint256) {
        if (assets == 0) return 0;
        // The loans past due earn nothing more (their rates stay in the sum until they are impaired or closed).
        uint256 perYear = (uint256(_accrualRate) - rateDue) * 365 days / ACCRUAL_SCALE;
        uint256 end = _unlockEnd;
        if (end > block.timestamp) perYear += _lockedProfitNow().mulDiv(365 days, end - block.timestamp);
        return perYear.mulDiv(WAD, assets);
    }

    /// @dev The depositors' assets at the entry price, out of `grossAssets` (idle + borrowed): with the interest booked,
    /// without the profit still locked. The floor at zero is defensive: the lock is part of what the vault holds.
    function _entryAssets(uint256 grossAssets) internal view returns (uint256 entry) {
        (entry,,) = _assets(grossAssets);
    }

    /// @dev The depositors' assets out of `grossAssets` (idle + borrowed) at the entry price (with the interest booked,
    /// without the profit still locked) and at the exit price (less the unrealized losses: the impaired loans' and, by
    /// the clock, those past due and not impaired yet), and the rates of those past due. The floors at zero are
    /// defensive: the lock and the losses are parts of what the vault holds or has lent.
    function _assets(uint256 grossAssets) internal view returns (uint256 entry, uint256 exit, uint256 rateDue) {
        PastDue memory due = _pastDue();
        int256 assets = int256(grossAssets) + _toAssets(_bookedNow() - int256(due.overCounted)) - int256(_lockedProfitNow());
        entry = assets > 0 ? uint256(assets) : 0;
        exit = entry.saturatingSub(_unrealizedLosses + due.loss);
        rateDue = due.rate;
    }

    /// @dev The depositors' assets at the exit price.
    function _totalAssets(uint256 grossAssets) internal view returns (uint256 exit) {
        (, exit,) = _assets(grossAssets);
    }

    /// @dev {_convertToShares} at the entry price.
    function _convertToEntryShares(uint256 assets, Math.Rounding rounding) internal view returns (uint256) {
        uint256 entry = _entryAssets(_idleAssets() + _totalBorrowed);
        return assets.mulDiv(totalSupply() + 10 ** _DECIMALS_OFFSET, entry + 1, rounding);
    }

    /// @dev {_convertToAssets} at the entry price.
    function _convertToEntryAssets(uint256 shares, Math.Rounding rounding) internal view returns (uint256) {
        uint256 entry = _entryAssets(_idleAssets() + _totalBorrowed);
        return shares.mulDiv(entry + 1, totalSupply() + 10 ** _DECIMALS_OFFSET, rounding);
    }

    /// @dev Before the first shares of an emptied vault: what the last holders left (profit still locked, rounding,
    /// anything else at the entry price) is locked anew, so it unlocks to the next holders over the period rather
    /// than staying with the virtual shares, and no first depositor takes it at once.
    function _relockIfEmpty() internal {
        if (totalSupply() != 0) return;
        uint256 left = _entryAssets(_idleAssets() + _totalBorrowed);
        if (left == 0) return;
        uint256 locked = _lockedProfitNow() + left;
        uint256 unlockEnd = block.timestamp + _profitUnlockPeriod;
        _lockedProfit = locked.toUint96();
        _lockedAt = uint40(block.timestamp);
        // The cast is safe: at most now + MAX_PROFIT_UNLOCK_PERIOD.
        _unlockEnd = uint40(unlockEnd);
        emit StakingVaultProfitLocked(left, locked, unlockEnd);
    }

    /// @dev The booked interest in asset units as every conversion counts it: stopped at the due date of each loan past
    /// due (by the clock, whether or not it was touched).
    function _bookedAssets() internal view returns (int256) {
        return _toAssets(_bookedNow() - int256(_pastDue().overCounted));
    }

    /// @dev Scaled interest in asset units, rounded down (towards minus infinity, so that a payment of whole units moves
    /// it by exactly as many).
    function _toAssets(int256 booked) internal pure returns (int256 assets) {
        assets = booked / int256(ACCRUAL_SCALE);
        if (booked < 0 && booked % int256(ACCRUAL_SCALE) != 0) assets -= 1;
    }

    /// @dev The depositors' interest earned on the loans' schedules less what they paid of it, by now (scaled).
    function _bookedNow() internal view returns (int256) {
        return int256(_booked) + int256(uint256(_accrualRate) * (block.timestamp - _bookedAt));
    }

    /// @dev The loan's reserve factor (WAD), fixed at funding; the model's, capped at 100 %, for a loan never lent.
    function _reserveFactorOf(uint256 loanId) internal view returns (uint256) {
        Accrual storage accrual = _accrualOf[loanId];
        if (accrual.from != 0) return accrual.reserveFactor;
        return Math.min(_interestRateModel.reserveFactor(), WAD);
    }

    /// @dev The depositors' part (after the loan's reserve factor) of `interest`, as a rate from `from` to `until`.
    function _rateOf(uint256 interest, uint256 reserveFactor, uint256 from, uint256 until) internal pure returns (uint256) {
        if (until <= from) return 0;
        return (interest - interest.mulDiv(reserveFactor, WAD)) * ACCRUAL_SCALE / (until - from);
    }

    /// @dev Starts the schedule of a loan funded now: its depositors' interest is earned linearly until `dueDate`.
    function _startAccrual(
        uint256 loanId,
        uint256 principal,
        uint256 interest,
        uint256 dueDate,
        uint256 coverageBps,
        uint256 provisionBps
    ) internal {
        uint256 reserveFactor = Math.min(_interestRateModel.reserveFactor(), WAD);
        dueDate = Math.max(dueDate, block.timestamp);
        uint256 rate = _rateOf(interest, reserveFactor, block.timestamp, dueDate);
        _setBooked(_bookedNow(), _accrualRate + rate);
        // The casts are safe: the factor is at most WAD, the coverage at most BPS, the timestamps fit 40 bits.
        _accrualOf[loanId] = Accrual({
            rate: rate.toUint88(),
            from: uint40(block.timestamp),
            until: uint40(dueDate),
            reserveFactor: uint64(reserveFactor),
            coverageBps: uint16(coverageBps),
            accruing: rate != 0,
            paid: 0,
            ended: false,
            principal: principal.toUint96(),
            listed: false,
            provisionBps: uint16(provisionBps)
        });
        _list(loanId);
    }

    /// @dev `paid` of the loan's depositors' interest arrived: it settles what the schedule earned, or pays ahead of
    /// it. The booked sum falls by exactly what the cash adds, so the share price does not move. A loan without a
    /// running schedule (never lent, or ended: an impaired loan paying late) gives a gain, locked.
    function _payAccrual(uint256 loanId, uint256 paid) internal {
        if (paid == 0) return;
        Accrual storage accrual = _accrualOf[loanId];
        if (accrual.from == 0 || accrual.ended) {
            _lockGain(paid);
            return;
        }
        _setBooked(_bookedNow() - int256(paid * ACCRUAL_SCALE), _accrualRate);
        accrual.paid = (accrual.paid + paid).toUint96();
    }

    /// @dev `returned` of the depositors' interest the loan paid went back to the borrower: unpaid again on a running
    /// schedule (what it earned stays counted), a loss on an ended one.
    function _unpayAccrual(uint256 loanId, uint256 returned) internal {
        Accrual storage accrual = _accrualOf[loanId];
        if (accrual.from == 0 || accrual.ended) {
            _absorbLoss(returned);
            return;
        }
        uint256 unpaid = Math.min(returned, accrual.paid);
        _setBooked(_bookedNow() + int256(unpaid * ACCRUAL_SCALE), _accrualRate);
        accrual.paid -= uint96(unpaid);
        _absorbLoss(returned - unpaid);
    }

    /// @dev Puts the loan's schedule on its new line: `interest` (its whole interest now) earned from its funding until
    /// `dueDate`, as the loan book charges it after an extension or a refund. The change in what it has earned by now
    /// moves the depositors' assets: a gain (locked) or a loss (absorbed).
    function _rescheduleAccrual(uint256 loanId, uint256 interest, uint256 dueDate) internal {
        Accrual memory accrual = _accrualOf[loanId];
        if (accrual.from == 0 || accrual.ended) return;
        int256 before = _bookedAssets();
        bool listed = _unlist(loanId);
        (int256 booked, uint256 sumRate) = _dropFromSum(accrual);
        uint256 rate = _rateOf(interest, accrual.reserveFactor, accrual.from, dueDate);
        // What the old line earned by now is replaced by what the new one did.
        booked += int256(rate * (Math.min(block.timestamp, dueDate) - accrual.from));
        bool accruing = block.timestamp < dueDate && rate != 0;
        _setBooked(booked, accruing ? sumRate + rate : sumRate);
        // The cast is safe: a due date fits 40 bits.
        Accrual storage stored = _accrualOf[loanId];
        stored.rate = rate.toUint88();
        stored.until = uint40(dueDate);
        stored.accruing = accruing;
        if (listed) _list(loanId);
        emit StakingVaultInterestRescheduled(loanId, interest, dueDate, _moveAssets(before));
    }

    /// @dev Stops impaired loan `loanId`'s schedule at its due date (now, if that is still ahead): nothing more accrues,
    /// what it counted by then stays booked, and it leaves the due list, whose view had stopped it there already (so
    /// the entry price does not move).
    function _stopAccrual(uint256 loanId) internal {
        _unlist(loanId);
        Accrual storage accrual = _accrualOf[loanId];
        if (!accrual.accruing || accrual.ended) return;
        uint256 end = Math.min(block.timestamp, accrual.until);
        _setBooked(_bookedNow() - int256(uint256(accrual.rate) * (block.timestamp - end)), _accrualRate - accrual.rate);
        // The cast is safe: a timestamp fits 40 bits.
        accrual.until = uint40(end);
        accrual.accruing = false;
    }

    /// @dev Keeps an impaired loan's expected loss of interest at what its stopped schedule counted and it has not paid
    /// (zero once the schedule ended), in the unrealized losses too. Nothing for a loan that is not impaired.
    function _syncImpairedInterest(uint256 loanId) internal {
        Impairment storage impairment = _impairmentOf[loanId];
        uint256 before = impairment.interest;
        if (impairment.principal == 0 && before == 0) return;
        Accrual memory accrual = _accrualOf[loanId];
        uint256 unpaid;
        if (accrual.from != 0 && !accrual.ended) {
            // Not accruing: it counted `rate` from funding until `until`, in asset units rounded down.
            uint256 counted = uint256(accrual.rate) * (accrual.until - accrual.from) / ACCRUAL_SCALE;
            unpaid = counted.saturatingSub(accrual.paid);
        }
        impairment.interest = unpaid.toUint80();
        _unrealizedLosses = (uint256(_unrealizedLosses) + unpaid - before).toUint80();
    }

    /// @dev Ends the loan's schedule (it closed, or it defaulted): what it paid above what it earned is a gain
    /// (locked: the loan book's minimum charge and whole days), what it earned and did not pay a loss (written off).
    function _endAccrual(uint256 loanId) internal {
        Accrual memory accrual = _accrualOf[loanId];
        if (accrual.from == 0 || accrual.ended) return;
        int256 before = _bookedAssets();
        _unlist(loanId);
        _dropProvision(loanId);
        (int256 booked, uint256 sumRate) = _dropFromSum(accrual);
        // Its earned-less-paid leaves the sum; the cash it paid stays: the difference is the gain or the loss.
        _setBooked(booked + int256(uint256(accrual.paid) * ACCRUAL_SCALE), sumRate);
        _accrualOf[loanId].accruing = false;
        _accrualOf[loanId].ended = true;
        _moveAssets(before);
    }

    /// @dev The booked sum now and the sum of rates, without what the loan earned and its rate (its `paid` stays):
    /// the sum counted `rate * (now - from)` while it accrued, `rate * (until - from)` once it stopped.
    function _dropFromSum(Accrual memory accrual) internal view returns (int256 booked, uint256 sumRate) {
        booked = _bookedNow();
        sumRate = _accrualRate;
        uint256 counted = accrual.accruing ? block.timestamp - accrual.from : accrual.until - accrual.from;
        booked -= int256(uint256(accrual.rate) * counted);
        if (accrual.accruing) sumRate -= accrual.rate;
    }

    function _setBooked(int256 booked, uint256 sumRate) internal {
        _booked = booked.toInt112();
        _bookedAt = uint40(block.timestamp);
        _accrualRate = sumRate.toUint104();
    }

    /// @dev Locks the rise (or absorbs the fall) of the booked interest since `before`, in asset units; returns it.
    function _moveAssets(int256 before) internal returns (int256 change) {
        change = _bookedAssets() - before;
        if (change > 0) _lockGain(uint256(change));
        else _absorbLoss(uint256(-change));
    }

    /* THE DUE LIST (D-123) */

    /// @dev The hour whose bucket lists a loan due at `dueDate`: the first whole hour at or after it (the loan book's
    /// due dates are whole hours, so the bucket falls due with its loans to the second).
    function _hourOf(uint256 dueDate) internal pure returns (uint256) {
        return Math.ceilDiv(dueDate, 1 hours);
    }

    /// @dev What loan `loanId` adds to its bucket: principal out, cover at its coverage, interest its schedule counts by
    /// its due date (not net of what it paid: by the clock it is expected lost until the loan is touched), and its rate
    /// while it is in the sum.
    function _dueShare(Accrual storage accrual)
        internal
        view
        returns (uint256 hour, uint256 principal, uint256 cover, uint256 interest, uint256 rate)
    {
        hour = _hourOf(accrual.until);
        cover = uint256(accrual.principal) * accrual.coverageBps / BPS;
        // Its provision is in the unrealized losses already: by the clock, the rest of its expected loss.
        principal = accrual.principal - _provisionOf(accrual);
        interest = uint256(accrual.rate) * (accrual.until - accrual.from) / ACCRUAL_SCALE;
        rate = accrual.accruing ? accrual.rate : 0;
    }

    /// @dev Lists loan `loanId` in its due hour's bucket (a loan lent, open and not impaired).
    function _list(uint256 loanId) internal {
        Accrual storage accrual = _accrualOf[loanId];
        if (accrual.from == 0 || accrual.ended || accrual.listed || _impairmentOf[loanId].principal != 0) return;
        (uint256 hour, uint256 principal, uint256 cover, uint256 interest, uint256 rate) = _dueShare(accrual);
        DueBucket storage bucket = _dueAt[hour];
        bucket.principal = (bucket.principal + principal).toUint96();
        bucket.cover = (bucket.cover + cover).toUint72();
        bucket.interest = (bucket.interest + interest).toUint72();
        bucket.count += 1;
        bucket.rate = (bucket.rate + rate).toUint104();
        bucket.rateTimesDue = (bucket.rateTimesDue + rate * accrual.until).toUint152();
        _dueHours[hour >> 8] |= 1 << (hour & 255);
        // The cast is safe: an hour of a 40-bit timestamp fits 24 bits.
        if (hour < _nextDueHour) _nextDueHour = uint24(hour);
        ++_listedLoans;
        accrual.listed = true;
    }

    /// @dev Takes loan `loanId` out of its bucket, exactly what {_list} put in (nothing changes its share while listed
    /// but between the two); returns whether it was listed.
    function _unlist(uint256 loanId) internal returns (bool listed) {
        Accrual storage accrual = _accrualOf[loanId];
        if (!accrual.listed) return false;
        (uint256 hour, uint256 principal, uint256 cover, uint256 interest, uint256 rate) = _dueShare(accrual);
        DueBucket storage bucket = _dueAt[hour];
        // The casts are safe: each is at most what the bucket holds.
        bucket.principal -= uint96(principal);
        bucket.cover -= uint72(cover);
        bucket.interest -= uint72(interest);
        bucket.count -= 1;
        bucket.rate -= uint104(rate);
        bucket.rateTimesDue -= uint152(rate * accrual.until);
        --_listedLoans;
        accrual.listed = false;
        if (bucket.count == 0) {
            _dueHours[hour >> 8] &= ~(uint256(1) << (hour & 255));
            // The cast is safe: an hour of a 40-bit timestamp fits 24 bits.
            if (hour == _nextDueHour) _nextDueHour = _listedLoans == 0 ? NO_DUE_HOUR : uint24(_nextListedHour(hour + 1));
        }
        return true;
    }

    /// @dev A repayment of `principal` leaves loan `loanId`'s bucket, and its provision, with the principal still out.
    function _reducePrincipal(uint256 loanId, uint256 principal) internal {
        bool listed = _unlist(loanId);
        Accrual storage accrual = _accrualOf[loanId];
        uint256 before = _provisionOf(accrual);
        accrual.principal = uint96(uint256(accrual.principal).saturatingSub(principal));
        _provisionChanged(accrual, before);
        if (listed) _list(loanId);
    }

    /* PROVISIONS (D-126) */

    /// @dev A loan's provision: its principal out at its rate, rounded up (the favour of the depositors who stay).
    function _provisionOf(Accrual storage accrual) internal view returns (uint256) {
        return Math.mulDiv(accrual.principal, accrual.provisionBps, BPS, Math.Rounding.Ceil);
    }

    /// @dev A loan's provision went from `before` to what {_provisionOf} gives now: the exit price follows at once (the
    /// entry price never counted it, so a release moves no value to anyone who entered meanwhile).
    function _provisionChanged(Accrual storage accrual, uint256 before) internal {
        uint256 provision = _provisionOf(accrual);
        _unrealizedLosses = (uint256(_unrealizedLosses) + provision - before).toUint80();
        _provisioned = (uint256(_provisioned) + provision - before).toUint96();
    }

    /// @dev Loan `loanId` is provisioned no more: impaired (its impairment takes the place) or ended.
    function _dropProvision(uint256 loanId) internal {
        Accrual storage accrual = _accrualOf[loanId];
        uint256 before = _provisionOf(accrual);
        if (before == 0) return;
        accrual.provisionBps = 0;
        _provisionChanged(accrual, before);
    }

    /// @dev The first hour at or after `hour` with a bucket (one is listed there or later).
    function _nextListedHour(uint256 hour) internal view returns (uint256) {
        uint256 word = hour >> 8;
        uint256 bits = _dueHours[word] & (type(uint256).max << (hour & 255));
        while (bits == 0) {
            bits = _dueHours[++word];
        }
        return (word << 8) + _lowestBit(bits);
    }

    /// @dev The index of the lowest set bit of `bits` (not zero).
    function _lowestBit(uint256 bits) internal pure returns (uint256) {
        unchecked {
            return Math.log2(bits & (~bits + 1));
        }
    }

    /// @dev What the listed loans whose due hour has passed take by the clock: the buckets from `_nextDueHour` until now
    /// (none read while the first is ahead: the common case costs no storage read beyond the first slot's).
    function _pastDue() internal view returns (PastDue memory due) {
        uint256 hour = _nextDueHour;
        if (hour == NO_DUE_HOUR || block.timestamp <= hour * 1 hours) return due;
        // The last hour whose loans are past due: due at hour * 1 hours < now.
        uint256 last = (block.timestamp - 1) / 1 hours;
        uint256 principal;
        uint256 cover;
        uint256 rateTimesDue;
        uint256 word = hour >> 8;
        uint256 bits = _dueHours[word] & (type(uint256).max << (hour & 255));
        while (true) {
            while (bits != 0) {
                uint256 at = (word << 8) + _lowestBit(bits);
                if (at > last) break;
                DueBucket memory bucket = _dueAt[at];
                principal += bucket.principal;
                cover += bucket.cover;
                due.loss += bucket.interest;
                due.rate += bucket.rate;
                rateTimesDue += bucket.rateTimesDue;
                bits &= bits - 1;
            }
            if (bits != 0 || (word + 1) << 8 > last) break;
            bits = _dueHours[++word];
        }
        // The reserve covers them as it would impaired ones: within what the impaired loans do not count on already.
        cover = Math.min(cover, uint256(_insuranceReserve).saturatingSub(_impairedCover));
        // Provisions above the uncovered principal (a rate above the share the reserve does not cover) count as they are.
        due.loss += principal.saturatingSub(cover);
        due.overCounted = due.rate * block.timestamp - rateTimesDue;
    }

    /// @dev The profit still locked: what was locked at `_lockedAt`, less its linear unlock since (rounded up, in the
    /// favour of the depositors who stay).
    function _lockedProfitNow() internal view returns (uint256) {
        uint256 end = _unlockEnd;
        if (block.timestamp >= end) return 0;
        // Cannot underflow: _lockedAt <= block.timestamp < end.
        return uint256(_lockedProfit).mulDiv(end - block.timestamp, end - _lockedAt, Math.Rounding.Ceil);
    }

    /// @dev Locks `gain` (already in the vault's balance or books) so that it unlocks over the period: Yearn V3's
    /// weighted end, the new gain over the whole period and what was locked over its remaining time.
    function _lockGain(uint256 gain) internal {
        uint256 period = _profitUnlockPeriod;
        if (gain == 0 || period == 0) return;
        uint256 locked = _lockedProfitNow();
        uint256 remaining = uint256(_unlockEnd).saturatingSub(block.timestamp);
        uint256 newLocked = locked + gain;
        uint256 unlockEnd = block.timestamp + (locked * remaining + gain * period) / newLocked;
        _lockedProfit = newLocked.toUint96();
        _lockedAt = uint40(block.timestamp);
        // The cast is safe: at most now + MAX_PROFIT_UNLOCK_PERIOD.
        _unlockEnd = uint40(unlockEnd);
        emit StakingVaultProfitLocked(gain, newLocked, unlockEnd);
    }

    /// @dev A loss of `loss` is first taken from the profit still locked (Yearn V3), the rest from the share price.
    function _absorbLoss(uint256 loss) internal {
        uint256 locked = _lockedProfitNow();
        if (loss == 0 || locked == 0) return;
        // Cannot overflow: below the locked uint96; the end stays, so what is left unlocks by the same date.
        _lockedProfit = uint96(locked - Math.min(locked, loss));
        _lockedAt = uint40(block.timestamp);
    }

    /// @dev Takes `principal` of loan `loanId` out of the reserve's cover and returns the loan's coverage. Saturating:
    /// the loan book never gives back more than it lent, and a rounding slip must not block a repayment.
    function _uncover(uint256 loanId, uint256 principal) internal returns (uint256 coverageBps) {
        Accrual storage accrual = _accrualOf[loanId];
        if (accrual.from == 0) return _insuranceCoverageBps;
        coverageBps = accrual.coverageBps;
        if (principal == 0 || coverageBps == 0) return coverageBps;
        // The cast is safe: the result is at most the stored uint112.
        _coveredPrincipal = uint112(uint256(_coveredPrincipal).saturatingSub(principal * coverageBps));
    }

    /// @dev A repayment of `principal` on impaired loan `loanId` releases the impairment in proportion (all of it with
    /// the last of the principal) into the exit price at once: the entry price never counted it, so the release moves
    /// no value to anyone who entered while the loan was impaired. Returns the principal repaid that was impaired.
    function _releaseImpairment(uint256 loanId, uint256 principal) internal returns (uint256 part) {
        Impairment storage impairment = _impairmentOf[loanId];
        uint256 impaired = impairment.principal;
        if (impaired == 0 || principal == 0) return 0;
        part = Math.min(principal, impaired);
        uint256 coverReleased = uint256(impairment.cover).mulDiv(part, impaired);
        // The expected loss stays exactly the principal out less its cover, so a default after partial payments
        // writes off what is left with no rounding gain or loss.
        uint256 released = part - coverReleased;
        // The casts are safe: each part is at most the stored value it is taken from.
        impairment.principal = uint96(impaired - part);
        impairment.cover -= uint80(coverReleased);
        _unrealizedLosses -= uint80(released);
        _impairedCover -= uint96(coverReleased);
    }

    /// @dev USDC per whole tmUSDC (WAD), for `assets` depositors' assets: convertToAssets(1e18 shares) / 1e6, kept
    /// at 18-decimal precision. The asset's decimals cancel out: (assets + 1) * 10**(offset + 18) / (supply +
    /// 10**offset).
    function _exchangeRate(uint256 assets) internal view returns (uint256) {
        uint256 virtualShares = 10 ** _DECIMALS_OFFSET;
        return (assets + 1).mulDiv(virtualShares * WAD, totalSupply() + virtualShares);
    }

    /// @dev What a new loan may draw: the idle USDC, and no more than brings the principal out to the cap's share of
    /// idle plus principal out (a loan moves USDC from one to the other, so their sum stays).
    function _lendableAssets() internal view returns (uint256) {
        uint256 idle = _idleAssets();
        uint256 borrowed = _totalBorrowed;
        uint256 capped = (idle + borrowed).mulDiv(_maxUtilizationBps, BPS).saturatingSub(borrowed);
        return Math.min(idle, capped);
    }

    function _utilization(uint256 borrowed, uint256 assets) internal pure returns (uint256) {
        return assets == 0 ? 0 : borrowed.mulDiv(WAD, assets);
    }
}
