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
import {ILoanBook} from "../interfaces/ILoanBook.sol";
import {IStakingVault} from "../interfaces/IStakingVault.sol";
import {TryPermit} from "../utils/TryPermit.sol";

/// @title LoanBook
/// @notice Loan records of the platform: funding from the staking vault, repayments back to it, extensions, overdue
/// marking and defaults written off against the vault's insurance reserve.
/// @dev Loan state lives here; the vault keeps only the aggregate principal out (`totalBorrowed`), so the LoanBook
/// holds the vault's LENDER_ROLE. The LoanBook never holds USDC: loans are paid out by the vault and repayments are
/// pulled from the payer straight into the vault. A loan's net amount goes to its borrower ({fundLoan}) or, for a
/// purchase financed by the pool, to the recipient the operator names ({fundLoanFor}: the payment router, which
/// holds OPERATOR_ROLE for it); the borrower owes it either way.
///
/// Default limits (the specification's and the product reference's figures): principal up to 500 USDC (the Elite
/// tier's cap; lower tiers are enforced by the service), 7 to 90 days, interest up to 20 % of the principal (the
/// product charges 1-5 %), insurance fee up to 20 % (the product takes 10 %), 7 days' grace before default.
///
/// Meta-transactions: the LoanBook trusts one ERC-2771 forwarder (fixed at construction); the payer and the role
/// holders are read with `_msgSender()`, so a repayment the borrower signed and a relayer submitted pulls from, and
/// names, the borrower.
contract LoanBook is AccessControl, ReentrancyGuardTransient, ERC2771Context, ILoanBook {
    using SafeERC20 for IERC20;
    using TryPermit for IERC20;

    /// @inheritdoc ILoanBook
    bytes32 public constant OPERATOR_ROLE = keccak256("OPERATOR_ROLE");

    /// @inheritdoc ILoanBook
    bytes32 public constant REFUNDER_ROLE = keccak256("REFUNDER_ROLE");

    /// @inheritdoc ILoanBook
    /// @dev Equal to the shortest default term: closing a loan within its first week costs a week's interest.
    uint256 public constant MIN_CHARGED_DAYS = 7;

    uint256 internal constant BPS = 10_000;
    uint256 internal constant WAD = 1e18;

    // Hard bounds of {setLimits}.
    uint256 internal constant MAX_DURATION_DAYS_BOUND = 365;
    uint256 internal constant MAX_GRACE_PERIOD_DAYS_BOUND = 90;
    uint256 internal constant MAX_INSURANCE_FEE_BPS_BOUND = 5_000;
    /// @notice The daily funding cap a new loan book starts with (the timelock sets another).
    uint256 public constant DEFAULT_DAILY_FUNDING_CAP = 100_000e6;

    // The limits on unproven borrowers a new loan book starts with (D-125): a tenth of the pool, at least 2,000 USDC
    // (a hundred first loans of tier New), and 10,000 USDC of new principal a day.
    uint16 internal constant DEFAULT_UNPROVEN_SHARE_BPS = 1_000;
    uint96 internal constant DEFAULT_UNPROVEN_FLOOR = 2_000e6;
    uint96 internal constant DEFAULT_UNPROVEN_DAILY_BUDGET = 10_000e6;

    // The expected-loss rates a new loan book starts with (D-126): a share of the principal the vault provisions from
    // funding, 5 % for an unproven borrower's loan and 1 % for a proven one's.
    uint16 internal constant DEFAULT_UNPROVEN_LOSS_BPS = 500;
    uint16 internal constant DEFAULT_PROVEN_LOSS_BPS = 100;

    /// @dev The funding token bucket, one slot: at most `capacity`, refilled at `capacity` per day since `updatedAt`.
    struct FundingBucket {
        uint96 capacity;
        uint96 available;
        uint40 updatedAt;
    }

    /// @inheritdoc ILoanBook
    IStakingVault public immutable vault;

    IERC20 private immutable _asset;

    LoanLimits private _limits;
    FundingBucket private _funding;

    // Funding an unproven loan reads these together: the principal out on unproven loans and the cap's parameters.
    uint96 private _unprovenOutstanding;
    uint96 private _unprovenFloor;
    uint16 private _unprovenShareBps;
    uint16 private _unprovenLossBps;
    uint16 private _provenLossBps;
    FundingBucket private _unprovenBudget;

    /// @dev A borrower's proof (D-125): the largest principal it repaid in full itself, and the loan that proved it.
    struct Proof {
        uint96 upTo;
        uint64 byLoan;
    }

    mapping(address borrower => Proof) private _proofOf;
    uint256 private _loanCount;
    mapping(uint256 loanId => Loan) private _loans;

    /// @inheritdoc ILoanBook
    mapping(bytes32 ref => uint256 loanId) public loanIdOf;

    /// @param vault_ The staking vault that funds the loans (grant this contract its LENDER_ROLE).
    /// @param admin Receives DEFAULT_ADMIN_ROLE; grants OPERATOR_ROLE after deployment.
    /// @param forwarder The trusted ERC-2771 forwarder (the platform's `TrustMintForwarder`).
    constructor(IStakingVault vault_, address admin, address forwarder) ERC2771Context(forwarder) {
        if (address(vault_) == address(0) || admin == address(0) || forwarder == address(0)) revert LoanBookZeroAddress();
        vault = vault_;
        _asset = IERC20(vault_.asset());
        _grantRole(DEFAULT_ADMIN_ROLE, admin);
        _setLimits(
            LoanLimits({
                maxPrincipal: 500e6,
                minDurationDays: 7,
                maxDurationDays: 90,
                gracePeriodDays: 7,
                maxInterestBps: 2_000,
                maxInsuranceFeeBps: 2_000
            })
        );
        // Full from the start: a new pool lends at once.
        _funding = FundingBucket({
            capacity: uint96(DEFAULT_DAILY_FUNDING_CAP),
            available: uint96(DEFAULT_DAILY_FUNDING_CAP),
            updatedAt: uint40(block.timestamp)
        });
        emit LoanFundingCapUpdated(DEFAULT_DAILY_FUNDING_CAP);
        _setUnprovenLimits(
            UnprovenLimits({
                shareBps: DEFAULT_UNPROVEN_SHARE_BPS,
                floor: DEFAULT_UNPROVEN_FLOOR,
                dailyBudget: DEFAULT_UNPROVEN_DAILY_BUDGET
            })
        );
        _unprovenBudget.available = DEFAULT_UNPROVEN_DAILY_BUDGET;
        _setExpectedLossRates(ExpectedLossRates({unprovenBps: DEFAULT_UNPROVEN_LOSS_BPS, provenBps: DEFAULT_PROVEN_LOSS_BPS}));
    }

    /* VIEWS */

    /// @inheritdoc ILoanBook
    function asset() external view returns (address) {
        return address(_asset);
    }

    /// @inheritdoc ILoanBook
    function loanCount() external view returns (uint256) {
        return _loanCount;
    }

    /// @inheritdoc ILoanBook
    function getLoan(uint256 loanId) external view returns (Loan memory) {
        return _existingLoan(loanId);
    }

    /// @inheritdoc ILoanBook
    function limits() external view returns (LoanLimits memory) {
        return _limits;
    }

    /// @inheritdoc ILoanBook
    function fundingCapacity() external view returns (uint256 dailyCap, uint256 available) {
        return (_funding.capacity, _available(_funding));
    }

    /// @inheritdoc ILoanBook
    function provenUpTo(address borrower) external view returns (uint256) {
        return _proofOf[borrower].upTo;
    }

    /// @inheritdoc ILoanBook
    function unprovenLimits() external view returns (UnprovenLimits memory) {
        return UnprovenLimits({shareBps: _unprovenShareBps, floor: _unprovenFloor, dailyBudget: _unprovenBudget.capacity});
    }

    /// @inheritdoc ILoanBook
    function expectedLossRates() external view returns (ExpectedLossRates memory) {
        return ExpectedLossRates({unprovenBps: _unprovenLossBps, provenBps: _provenLossBps});
    }

    /// @inheritdoc ILoanBook
    function unprovenExposure() external view returns (uint256 outstanding, uint256 available) {
        return (_unprovenOutstanding, _unprovenAvailable());
    }

    /// @inheritdoc ILoanBook
    function minInterestOf(address borrower, uint256 principal) external view returns (uint256) {
        uint256 lossBps = principal > _proofOf[borrower].upTo ? _unprovenLossBps : _provenLossBps;
        // The vault keeps WAD - factor of each interest paid for the depositors (a factor of WAD keeps nothing: no
        // interest is enough, so the floor is as high as it goes).
        uint256 kept = WAD - Math.min(vault.interestRateModel().reserveFactor(), WAD - 1);
        return Math.mulDiv(principal, lossBps * WAD, kept * BPS, Math.Rounding.Ceil);
    }

    /// @inheritdoc ILoanBook
    function remainingBalance(uint256 loanId) external view returns (uint256) {
        return _remainingBalance(_existingLoan(loanId));
    }

    /// @inheritdoc ILoanBook
    function payoffAmount(uint256 loanId) external view returns (uint256) {
        Loan storage loan = _existingLoan(loanId);
        if (!_isOpen(loan.status)) return 0;
        (uint256 interestDue,) = _interestDueNow(loan);
        return loan.principal - loan.principalRepaid + interestDue;
    }

    /// @inheritdoc ILoanBook
    function payoffQuote(uint256 loanId) external view returns (PayoffQuote memory quote) {
        Loan storage loan = _existingLoan(loanId);
        quote.originalTotal = uint256(loan.principal) + loan.interest;
        if (!_isOpen(loan.status)) return quote;
        (uint256 interestDue, uint256 chargedDays) = _interestDueNow(loan);
        quote.payoffAmount = loan.principal - loan.principalRepaid + interestDue;
        quote.remainingBalance = _remainingBalance(loan);
        quote.interestSaved = quote.remainingBalance - quote.payoffAmount;
        quote.daysEarly = loan.durationDays - chargedDays;
    }

    /* OPERATOR */

    /// @inheritdoc ILoanBook
    function fundLoan(
        bytes32 ref,
        address borrower,
        uint256 principal,
        uint256 interest,
        uint256 insuranceFee,
        uint32 durationDays
    ) external onlyRole(OPERATOR_ROLE) nonReentrant returns (uint256) {
        return _fundLoan(ref, borrower, borrower, principal, interest, insuranceFee, durationDays);
    }

    /// @inheritdoc ILoanBook
    function fundLoanFor(
        bytes32 ref,
        address borrower,
        address recipient,
        uint256 principal,
        uint256 interest,
        uint256 insuranceFee,
        uint32 durationDays
    ) external onlyRole(OPERATOR_ROLE) nonReentrant returns (uint256) {
        return _fundLoan(ref, borrower, recipient, principal, interest, insuranceFee, durationDays);
    }

    /// @inheritdoc ILoanBook
    function extend(uint256 loanId, uint32 extraDays, uint256 additionalInterest) external onlyRole(OPERATOR_ROLE) {
        Loan storage loan = _existingLoan(loanId);
        if (loan.status != LoanStatus.Active) revert LoanBookLoanNotActive(loanId, loan.status);
        if (block.timestamp > loan.dueDate) revert LoanBookPastDue(loanId, loan.dueDate);
        LoanLimits memory lim = _limits;
        uint256 newDurationDays = uint256(loan.durationDays) + extraDays;
        if (extraDays == 0 || newDurationDays > lim.maxDurationDays) {
            revert LoanBookInvalidExtension(loanId, extraDays, newDurationDays, lim.maxDurationDays);
        }
        uint256 newInterest = loan.interest + additionalInterest;
        uint256 maxInterest = uint256(loan.principal) * lim.maxInterestBps / BPS;
        if (newInterest > maxInterest) revert LoanBookInterestTooHigh(newInterest, maxInterest);

        uint256 newDueDate = uint256(loan.dueDate) + uint256(extraDays) * 1 days;
        // The casts are safe: the duration is at most 365 days and the interest at most the principal.
        loan.durationDays = uint16(newDurationDays);
        loan.dueDate = uint40(newDueDate);
        loan.interest = uint128(newInterest);

        emit LoanExtended(loanId, loan.borrower, extraDays, additionalInterest, newDueDate);

        vault.rescheduleInterest(loanId, newInterest, newDueDate);
    }

    /// @inheritdoc ILoanBook
    function setLimits(LoanLimits calldata newLimits) external onlyRole(DEFAULT_ADMIN_ROLE) {
        _setLimits(newLimits);
    }

    /// @inheritdoc ILoanBook
    function setDailyFundingCap(uint256 dailyCap) external onlyRole(DEFAULT_ADMIN_ROLE) {
        if (dailyCap == 0) revert LoanBookInvalidFundingCap(dailyCap);
        _resize(_funding, dailyCap);
        emit LoanFundingCapUpdated(dailyCap);
    }

    /// @inheritdoc ILoanBook
    function setUnprovenLimits(UnprovenLimits calldata newLimits) external onlyRole(DEFAULT_ADMIN_ROLE) {
        _setUnprovenLimits(newLimits);
    }

    /// @inheritdoc ILoanBook
    function setExpectedLossRates(ExpectedLossRates calldata newRates) external onlyRole(DEFAULT_ADMIN_ROLE) {
        _setExpectedLossRates(newRates);
    }

    /* REFUNDER */

    /// @inheritdoc ILoanBook
    function refundLoan(uint256 loanId, uint256 principalRefund)
        external
        onlyRole(REFUNDER_ROLE)
        nonReentrant
        returns (uint256 toPool, uint256 principalReturned, uint256 interestReturned)
    {
        // Validate.
        Loan storage loan = _existingLoan(loanId);
        uint256 principal = loan.principal;
        if (principalRefund == 0 || principalRefund > principal) revert LoanBookInvalidRefund(loanId, principalRefund, principal);

        // Effects: the loan shrinks by the refund. What the pool has out (or wrote off) falls by at most the refund;
        // what the borrower paid above the smaller loan goes back to them.
        LoanStatus status = loan.status;
        uint256 newPrincipal = principal - principalRefund;
        toPool = Math.min(principalRefund, principal - loan.principalRepaid);
        principalReturned = principalRefund - toPool;
        // Interest pro rata for every loan, a defaulted one too: a refunded purchase's interest is owed by no one.
        uint256 interestForgiven;
        (interestForgiven, interestReturned) = _forgiveInterest(loan, principalRefund, principal, status == LoanStatus.Defaulted);
        // The casts are safe: both are at most the principal, a uint128.
        if (loan.principalRepaid > newPrincipal) loan.principalRepaid = uint128(newPrincipal);
        loan.principal = uint128(newPrincipal);
        bool closed = _isOpen(status) && _remainingBalance(loan) == 0;
        if (closed) loan.status = LoanStatus.Repaid;
        _refundedExposure(loan, loanId, status, toPool);

        emit LoanRefunded(
            loanId,
            loan.borrower,
            principalRefund,
            interestForgiven,
            toPool,
            principalReturned,
            interestReturned,
            _remainingBalance(loan),
            closed
        );

        // Interactions: the vault's books, the principal back into it, the interest back to the borrower.
        // The schedule follows the smaller interest; the pool's principal comes back, closing the loan if it is all.
        if (status != LoanStatus.Defaulted) vault.rescheduleInterest(loanId, loan.interest, loan.dueDate);
        if (toPool > 0) {
            if (status == LoanStatus.Defaulted) vault.recordRecovery(loanId, toPool);
            else vault.recordRepayment(loanId, toPool, 0, closed);
            _asset.safeTransferFrom(_msgSender(), address(vault), toPool);
        } else if (closed) {
            vault.recordRepayment(loanId, 0, 0, true);
        }
        if (interestReturned > 0) vault.returnInterest(loanId, loan.borrower, interestReturned);
    }

    /* ANYONE */

    /// @inheritdoc ILoanBook
    function repay(uint256 loanId, uint256 amount) external nonReentrant returns (uint256) {
        return _repay(loanId, amount, _msgSender());
    }

    /// @inheritdoc ILoanBook
    function repayWithPermit(uint256 loanId, uint256 amount, uint256 deadline, uint8 v, bytes32 r, bytes32 s)
        external
        nonReentrant
        returns (uint256)
    {
        address payer = _msgSender();
        _asset.tryPermit(payer, amount, deadline, v, r, s);
        return _repay(loanId, amount, payer);
    }

    /// @inheritdoc ILoanBook
    function markOverdue(uint256 loanId) external nonReentrant {
        Loan storage loan = _existingLoan(loanId);
        if (loan.status != LoanStatus.Active) revert LoanBookLoanNotActive(loanId, loan.status);
        if (block.timestamp <= loan.dueDate) revert LoanBookNotYetDue(loanId, loan.dueDate);

        loan.status = LoanStatus.Overdue;

        emit LoanMarkedOverdue(loanId, loan.borrower, loan.dueDate);

        // The vault takes the expected loss into its share price now, before a default anyone can predict.
        vault.impairLoan(loanId, loan.principal - loan.principalRepaid);
    }

    /// @inheritdoc ILoanBook
    function markDefaulted(uint256 loanId) external nonReentrant {
        Loan storage loan = _existingLoan(loanId);
        if (loan.status != LoanStatus.Overdue) {
            if (loan.status == LoanStatus.Active) revert LoanBookLoanNotOverdue(loanId, loan.status);
            revert LoanBookLoanNotOpen(loanId, loan.status);
        }
        uint256 defaultableAfter = uint256(loan.dueDate) + uint256(loan.gracePeriodDays) * 1 days;
        if (block.timestamp <= defaultableAfter) revert LoanBookGracePeriodNotOver(loanId, defaultableAfter);

        loan.status = LoanStatus.Defaulted;
        uint256 loss = loan.principal - loan.principalRepaid;
        // Written off: no longer out (the daily budget, spent, is what bounds the next ones); a defaulter proves nothing.
        if (loan.unproven) _releaseUnproven(loss);
        _revokeProof(loan.borrower, loanId, true);

        // The vault splits the loss between its insurance reserve and the depositors; the event needs the split.
        (uint256 covered, uint256 uncovered) = vault.recordLoss(loanId, loss);

        emit LoanDefaulted(loanId, loan.borrower, loss, covered, uncovered);
    }

    /* INTERNAL */

    /// @dev {fundLoanFor}: records a loan `borrower` owes, then has the vault pay `recipient` the net amount.
    function _fundLoan(
        bytes32 ref,
        address borrower,
        address recipient,
        uint256 principal,
        uint256 interest,
        uint256 insuranceFee,
        uint32 durationDays
    ) private returns (uint256 loanId) {
        if (ref == bytes32(0)) revert LoanBookEmptyRef();
        if (borrower == address(0) || recipient == address(0)) revert LoanBookZeroAddress();
        uint256 existing = loanIdOf[ref];
        if (existing != 0) revert LoanBookDuplicateRef(ref, existing);
        _checkTerms(principal, interest, insuranceFee, durationDays);
        // The operator key is online: what it can lend is bounded per day, whoever holds it.
        uint256 available = _available(_funding);
        if (principal > available) revert LoanBookFundingCapReached(principal, available);
        _take(_funding, available, principal);
        // Exposure to loans above what their borrowers proved they repay is bounded in all and per day (D-125).
        bool unproven = principal > _proofOf[borrower].upTo;
        if (unproven) {
            uint256 room = _unprovenAvailable();
            if (principal > room) revert LoanBookUnprovenLimitReached(borrower, principal, room);
            _take(_unprovenBudget, _available(_unprovenBudget), principal);
            // The cast is safe: at most the cap, below the vault's assets or the uint96 floor.
            _unprovenOutstanding += uint96(principal);
        }

        loanId = ++_loanCount;
        // A whole hour, the first at or after the term's end: the vault's due list counts loans by the hour, so a
        // loan's expected loss enters its exit price to the second it falls due, touched or not (D-123).
        uint256 dueDate = Math.ceilDiv(block.timestamp + uint256(durationDays) * 1 days, 1 hours) * 1 hours;
        _storeLoan(loanId, ref, borrower, principal, interest, insuranceFee, durationDays, dueDate, unproven);
        loanIdOf[ref] = loanId;

        emit LoanFunded(
            loanId, ref, borrower, recipient, principal, principal - insuranceFee, interest, insuranceFee, durationDays, dueDate
        );

        // The vault checks its liquidity and pause, pays the recipient, accrues the interest until the due date and
        // provisions the loan's expected loss at its class's rate (D-126).
        vault.lend(
            loanId, recipient, principal, insuranceFee, interest, dueDate, unproven ? _unprovenLossBps : _provenLossBps
        );
    }

    /// @dev {repay} for `payer` (the caller): records the payment, then pulls it from `payer` into the vault.
    function _repay(uint256 loanId, uint256 amount, address payer) private returns (uint256 paid) {
        Loan storage loan = _existingLoan(loanId);
        if (!_isOpen(loan.status)) revert LoanBookLoanNotOpen(loanId, loan.status);
        if (amount == 0) revert LoanBookZeroRepayment(loanId);

        uint256 principalOutstanding = loan.principal - loan.principalRepaid;
        (uint256 interestDue,) = _interestDueNow(loan);
        uint256 interestPart;
        uint256 principalPart;
        bool closed = amount >= principalOutstanding + interestDue;
        if (closed) {
            (interestPart, principalPart) = (interestDue, principalOutstanding);
            paid = interestDue + principalOutstanding;
        } else {
            // Below the payoff amount, so principalPart < principalOutstanding: the loan stays open with principal.
            interestPart = Math.min(amount, interestDue);
            principalPart = amount - interestPart;
            paid = amount;
        }

        // The casts are safe: the parts are at most the loan's principal and interest (uint128).
        loan.interestRepaid += uint128(interestPart);
        loan.principalRepaid += uint128(principalPart);
        if (closed) loan.status = LoanStatus.Repaid;
        if (loan.unproven) _releaseUnproven(principalPart);
        // Only the borrower's own money, on a loan it held at least a week, proves it: a refund or another payer's
        // money does not (D-88), nor a loan repaid at once.
        address borrower = loan.borrower;
        if (payer != borrower) loan.paidByOthers = true;
        if (closed && !loan.paidByOthers && block.timestamp >= loan.fundedAt + MIN_CHARGED_DAYS * 1 days) {
            _prove(borrower, loanId, loan.principal);
        }

        emit LoanRepaymentMade(
            loanId,
            loan.borrower,
            payer,
            paid,
            interestPart,
            principalPart,
            _remainingBalance(loan),
            uint256(loan.principalRepaid) + loan.interestRepaid,
            closed
        );

        vault.recordRepayment(loanId, principalPart, interestPart, closed);
        _asset.safeTransferFrom(payer, address(vault), paid);
    }

    /// @dev {refundLoan}'s interest: the same share of it as `principalRefund` of `principal`, rounded down (the pool's
    /// favour; all of it for a full refund), forgiven; interest paid above what is left goes back, but never to a loan
    /// that `defaulted`: the pool keeps what it was paid (a refund pays a defaulter nothing the pool lost, D-124), and its
    /// interest falls no lower than that.
    function _forgiveInterest(Loan storage loan, uint256 principalRefund, uint256 principal, bool defaulted)
        private
        returns (uint256 interestForgiven, uint256 interestReturned)
    {
        uint256 newInterest = loan.interest - Math.mulDiv(loan.interest, principalRefund, principal);
        if (loan.interestRepaid > newInterest) {
            if (defaulted) {
                newInterest = loan.interestRepaid;
            } else {
                interestReturned = loan.interestRepaid - newInterest;
                // The cast is safe: newInterest is below the interest, a uint128.
                loan.interestRepaid = uint128(newInterest);
            }
        }
        interestForgiven = loan.interest - newInterest;
        // The cast is safe: at most the interest, a uint128.
        loan.interest = uint128(newInterest);
    }

    /// @dev A bucket refilled until now: at most its capacity.
    function _available(FundingBucket storage bucket) private view returns (uint256) {
        uint256 capacity = bucket.capacity;
        uint256 refill = capacity * (block.timestamp - bucket.updatedAt) / 1 days;
        return Math.min(capacity, uint256(bucket.available) + refill);
    }

    /// @dev Takes `amount` from a bucket that holds `available` now (at least `amount`).
    function _take(FundingBucket storage bucket, uint256 available, uint256 amount) private {
        // Casts are safe: below the capacity, a uint96; timestamps fit 40 bits until the year 36812.
        (bucket.available, bucket.updatedAt) = (uint96(available - amount), uint40(block.timestamp));
    }

    /// @dev Gives a bucket a new capacity, keeping what it holds now (at most the new capacity).
    function _resize(FundingBucket storage bucket, uint256 capacity) private {
        uint96 newCapacity = SafeCast.toUint96(capacity);
        // The cast is safe: at most the new capacity.
        uint96 available = uint96(Math.min(_available(bucket), capacity));
        (bucket.capacity, bucket.available, bucket.updatedAt) = (newCapacity, available, uint40(block.timestamp));
    }

    /// @dev What a new unproven loan may have now: the cap (the larger of the floor and the share of the vault's assets)
    /// less what is out, within the daily budget.
    function _unprovenAvailable() private view returns (uint256) {
        uint256 cap = Math.max(_unprovenFloor, vault.totalAssets() * _unprovenShareBps / BPS);
        return Math.min(Math.saturatingSub(cap, _unprovenOutstanding), _available(_unprovenBudget));
    }

    /// @dev Loan `loanId` of `principal`, repaid in full by `borrower` alone, proves it up to that principal.
    function _prove(address borrower, uint256 loanId, uint256 principal) private {
        if (principal <= _proofOf[borrower].upTo) return;
        // The casts are safe: the principal is at most maxPrincipal (uint96), ids count from 1 by one.
        _proofOf[borrower] = Proof({upTo: uint96(principal), byLoan: uint64(loanId)});
        emit BorrowerProven(borrower, loanId, principal);
    }

    /// @dev Voids `borrower`'s proof: always (`always`, a default), or when loan `loanId` gave it (a refund).
    function _revokeProof(address borrower, uint256 loanId, bool always) private {
        Proof memory proof = _proofOf[borrower];
        if (proof.upTo == 0 || (!always && proof.byLoan != loanId)) return;
        delete _proofOf[borrower];
        emit BorrowerProofRevoked(borrower, loanId);
    }

    /// @dev A refund of `toPool` on loan `loanId` (of `status` before it): a defaulted loan left the unproven principal
    /// out at its default; a refunded loan proves nothing, and a proof it gave is void.
    function _refundedExposure(Loan storage loan, uint256 loanId, LoanStatus status, uint256 toPool) private {
        if (loan.unproven && status != LoanStatus.Defaulted) _releaseUnproven(toPool);
        loan.paidByOthers = true;
        _revokeProof(loan.borrower, loanId, false);
    }

    /// @dev `principal` of an unproven loan came back or was written off. Saturating: a rounding slip never blocks a
    /// repayment.
    function _releaseUnproven(uint256 principal) private {
        // The cast is safe: at most the stored uint96.
        _unprovenOutstanding = uint96(Math.saturatingSub(_unprovenOutstanding, principal));
    }

    function _setExpectedLossRates(ExpectedLossRates memory newRates) private {
        if (newRates.unprovenBps > BPS || newRates.provenBps > BPS) revert LoanBookInvalidExpectedLossRates(newRates);
        (_unprovenLossBps, _provenLossBps) = (newRates.unprovenBps, newRates.provenBps);
        emit LoanExpectedLossRatesUpdated(newRates);
    }

    function _setUnprovenLimits(UnprovenLimits memory newLimits) private {
        if (newLimits.shareBps > BPS) revert LoanBookInvalidUnprovenLimits(newLimits);
        (_unprovenShareBps, _unprovenFloor) = (newLimits.shareBps, newLimits.floor);
        _resize(_unprovenBudget, newLimits.dailyBudget);
        emit LoanUnprovenLimitsUpdated(newLimits);
    }

    function _checkTerms(uint256 principal, uint256 interest, uint256 insuranceFee, uint256 durationDays)
        private
        view
    {
        LoanLimits memory lim = _limits;
        if (principal == 0 || principal > lim.maxPrincipal) revert LoanBookInvalidPrincipal(principal, lim.maxPrincipal);
        if (durationDays < lim.minDurationDays || durationDays > lim.maxDurationDays) {
            revert LoanBookInvalidDuration(durationDays, lim.minDurationDays, lim.maxDurationDays);
        }
        uint256 maxInterest = principal * lim.maxInterestBps / BPS;
        if (interest > maxInterest) revert LoanBookInterestTooHigh(interest, maxInterest);
        uint256 maxFee = principal * lim.maxInsuranceFeeBps / BPS;
        if (insuranceFee > maxFee) revert LoanBookInsuranceFeeTooHigh(insuranceFee, maxFee);
    }

    function _storeLoan(
        uint256 loanId,
        bytes32 ref,
        address borrower,
        uint256 principal,
        uint256 interest,
        uint256 insuranceFee,
        uint256 durationDays,
        uint256 dueDate,
        bool unproven
    ) private {
        // The casts are safe: principal <= maxPrincipal (uint96), interest and fee are at most the principal
        // (checked by _checkTerms), the duration is at most 365 days, and timestamps fit in 40 bits until the year
        // 36812.
        _loans[loanId] = Loan({
            borrower: borrower,
            fundedAt: uint40(block.timestamp),
            dueDate: uint40(dueDate),
            durationDays: uint16(durationDays),
            principal: uint128(principal),
            interest: uint128(interest),
            principalRepaid: 0,
            interestRepaid: 0,
            insuranceFee: uint128(insuranceFee),
            status: LoanStatus.Active,
            // A later change of the limits is never retroactive.
            gracePeriodDays: _limits.gracePeriodDays,
            unproven: unproven,
            paidByOthers: false,
            ref: ref
        });
    }

    function _setLimits(LoanLimits memory newLimits) private {
        if (
            newLimits.maxPrincipal == 0 || newLimits.minDurationDays == 0
                || newLimits.minDurationDays > newLimits.maxDurationDays
                || newLimits.maxDurationDays > MAX_DURATION_DAYS_BOUND
                || newLimits.gracePeriodDays > MAX_GRACE_PERIOD_DAYS_BOUND || newLimits.maxInterestBps > BPS
                || newLimits.maxInsuranceFeeBps > MAX_INSURANCE_FEE_BPS_BOUND
        ) revert LoanBookInvalidLimits(newLimits);
        _limits = newLimits;
        emit LoanLimitsUpdated(newLimits);
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

    function _existingLoan(uint256 loanId) private view returns (Loan storage loan) {
        loan = _loans[loanId];
        if (loan.status == LoanStatus.None) revert LoanBookLoanNotFound(loanId);
    }

    function _isOpen(LoanStatus status) private pure returns (bool) {
        return status == LoanStatus.Active || status == LoanStatus.Overdue;
    }

    function _remainingBalance(Loan storage loan) private view returns (uint256) {
        if (!_isOpen(loan.status)) return 0;
        return uint256(loan.principal) - loan.principalRepaid + loan.interest - loan.interestRepaid;
    }

    /// @dev The interest earned by now and not yet paid, and the days charged. Earned = interest * chargedDays /
    /// durationDays rounded up (in the vault's favour); chargedDays = whole days since funding rounded up, at least
    /// MIN_CHARGED_DAYS, at most durationDays (reached at the due date). Earned never exceeds the interest, so the
    /// payoff never exceeds the remaining balance.
    function _interestDueNow(Loan storage loan) private view returns (uint256 interestDue, uint256 chargedDays) {
        uint256 durationDays = loan.durationDays;
        uint256 elapsedDays = Math.ceilDiv(block.timestamp - loan.fundedAt, 1 days);
        chargedDays = Math.min(Math.max(elapsedDays, MIN_CHARGED_DAYS), durationDays);
        uint256 earned = Math.mulDiv(loan.interest, chargedDays, durationDays, Math.Rounding.Ceil);
        interestDue = Math.saturatingSub(earned, loan.interestRepaid);
    }
}
