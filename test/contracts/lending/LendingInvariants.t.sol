// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TestBase} from "../lib/TestBase.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {ILoanBook} from "../../../contracts/interfaces/ILoanBook.sol";
import {MockUSDC} from "../../../contracts/mocks/MockUSDC.sol";
import {InterestRateModel} from "../../../contracts/vault/InterestRateModel.sol";
import {StakingVault} from "../../../contracts/vault/StakingVault.sol";
import {LoanBook} from "../../../contracts/lending/LoanBook.sol";
import {LendingSetup} from "./LendingSetup.sol";

/// @notice Random deposits, mints, withdrawals, redemptions, loans (paid to the borrower, or to another recipient as
/// for a purchase financed by the pool), repayments, extensions, overdue marks, defaults, yield, parameter changes,
/// pauses and unauthorized calls, with ghost variables for the invariants.
/// @dev The handler keeps its own clock (`currentTime`) and warps to it at every call, so time only moves forward
/// and moves the same way whether or not the runner keeps warps between calls.
contract LendingHandler is TestBase {
    MockUSDC internal immutable usdc;
    InterestRateModel internal immutable model;
    StakingVault internal immutable vault;
    LoanBook internal immutable book;

    uint256 internal constant USDC = 1e6;
    uint256 internal constant VIRTUAL_SHARES = 1e12;
    address internal constant STRANGER = address(0x5757);
    address internal constant MERCHANT = address(0x3E5C4A);

    address[4] internal actors = [address(0xA1), address(0xA2), address(0xA3), address(0xA4)];

    uint256 public currentTime;

    // Ghosts.
    uint256 public ghostFees;
    uint256 public ghostReserveShares;
    uint256 public ghostCovered;
    uint256 public ghostUncovered;
    uint256 public ghostYield;
    uint256 public ghostReleased;
    bool public releaseBelowCover;
    bool public loanAboveCap;
    uint256 public defaults;
    uint256 public loansForAnotherRecipient;
    bool public priceDroppedWithoutLoss;
    bool public gainMovedPriceAtOnce;
    bool public defaultMovedPrice;
    uint256 public impairments;
    bool public lossMismatch;
    bool public unauthorizedSucceeded;
    bool public netAmountMismatch;
    bool public sandwichGained;
    bool public provenMismatch;
    uint256 public maxAssetsSeen;

    /// @dev The model of the loan book's proofs (D-125): the largest principal a borrower repaid in full alone after a
    /// week, zero after a default; which loans another payer paid into; each loan's class at funding.
    mapping(address borrower => uint256) public modelProvenUpTo;
    mapping(uint256 loanId => bool) private _paidByOthers;
    mapping(uint256 loanId => bool) public fundedUnproven;

    uint256 private _uncoveredThisCall;
    bool private _provisionedThisCall;
    bool public provisionMismatch;

    /// @dev Each loan's expected-loss rate, its borrower's class's when it was funded (D-126).
    mapping(uint256 loanId => uint256) public provisionBpsOf;

    /// @dev Each loan's reserve factor, the model's when it was funded (D-96: never retroactive).
    mapping(uint256 loanId => uint256) public reserveFactorOf;

    /// @dev Each loan's insurance coverage, the vault's when it was funded (D-100: never retroactive).
    mapping(uint256 loanId => uint256) public coverageOf;

    constructor(MockUSDC usdc_, InterestRateModel model_, StakingVault vault_, LoanBook book_) {
        (usdc, model, vault, book) = (usdc_, model_, vault_, book_);
        currentTime = block.timestamp;
    }

    /// @dev Checks after every action that neither the exit nor the entry price fell but by a recorded loss (an
    /// emptied vault's first deposit starts the price anew).
    modifier step() {
        _beforeStep();
        _;
        _afterStep();
    }

    uint256 private _exitNum;
    uint256 private _entryNum;
    uint256 private _den;
    bool private _wasEmpty;

    function _beforeStep() internal {
        vm.warp(currentTime);
        (_exitNum, _den) = _price();
        (_entryNum,) = _entryPrice();
        _wasEmpty = vault.totalSupply() == 0;
        _uncoveredThisCall = 0;
        _provisionedThisCall = false;
    }

    function _afterStep() internal {
        (uint256 num1, uint256 den1) = _price();
        (uint256 entryNum1,) = _entryPrice();
        // A funding lowers the exit price alone, by its provision (checked where it is funded). An exit price at zero
        // before and after (expected losses above the unlocked assets) did not drop: only the virtual asset moved.
        bool exitDropped = num1 * _den < _exitNum * den1 && !_provisionedThisCall && (num1 > 1 || _exitNum > 1);
        bool dropped = exitDropped || entryNum1 * _den < _entryNum * den1;
        if (dropped && _uncoveredThisCall == 0 && !_wasEmpty) priceDroppedWithoutLoss = true;
        maxAssetsSeen = Math.max(maxAssetsSeen, vault.totalAssets());
        for (uint256 i; i < actors.length; ++i) {
            if (book.provenUpTo(actors[i]) != modelProvenUpTo[actors[i]]) provenMismatch = true;
        }
    }

    /* DEPOSITORS */

    function deposit(uint256 actorSeed, uint256 assets) external step {
        if (vault.paused()) return;
        address actor = _actor(actorSeed);
        assets = bound(assets, vault.minDeposit(), 100_000 * USDC);
        usdc.mint(actor, assets);
        vm.startPrank(actor);
        usdc.approve(address(vault), assets);
        vault.deposit(assets, actor);
        vm.stopPrank();
    }

    function mint(uint256 actorSeed, uint256 shares) external step {
        if (vault.paused()) return;
        address actor = _actor(actorSeed);
        shares = bound(shares, 1e18, 100_000e18);
        uint256 assets = vault.previewMint(shares);
        if (assets < vault.minDeposit()) return;
        usdc.mint(actor, assets);
        vm.startPrank(actor);
        usdc.approve(address(vault), assets);
        vault.mint(shares, actor);
        vm.stopPrank();
    }

    function redeem(uint256 actorSeed, uint256 shares) external step {
        address actor = _actor(actorSeed);
        shares = bound(shares, 0, vault.maxRedeem(actor));
        if (shares == 0) return;
        vm.prank(actor);
        vault.redeem(shares, actor, actor);
    }

    function withdraw(uint256 actorSeed, uint256 assets) external step {
        address actor = _actor(actorSeed);
        assets = bound(assets, 0, vault.maxWithdraw(actor));
        if (assets == 0) return;
        vm.prank(actor);
        vault.withdraw(assets, actor, actor);
    }

    /* LOANS */

    function fundLoan(uint256 borrowerSeed, uint256 principal, uint256 interestBps, uint256 feeBps, uint256 durationDays)
        external
        step
    {
        address borrower = _actor(borrowerSeed);
        uint256 idle = Math.min(vault.lendableAssets(), _roomFor(borrower));
        if (vault.paused() || idle == 0) return;
        principal = bound(principal, 1, Math.min(500 * USDC, idle));
        uint256 interest = principal * bound(interestBps, 0, 2_000) / 10_000;
        uint256 fee = principal * bound(feeBps, 0, 2_000) / 10_000;
        uint256 provisioned0 = _beforeFunding(borrower, principal);
        book.fundLoan(
            keccak256(abi.encode("loan", book.loanCount())),
            borrower,
            principal,
            interest,
            fee,
            uint32(bound(durationDays, 7, 90))
        );
        ghostFees += fee;
        reserveFactorOf[book.loanCount()] = model.reserveFactor();
        _checkCap();
        coverageOf[book.loanCount()] = vault.insuranceCoverageBps();
        _afterFunding(principal, provisioned0);
    }

    /// @dev A purchase financed by the pool: the borrower owes, a merchant (or another actor) receives the net amount.
    function fundLoanFor(
        uint256 borrowerSeed,
        uint256 recipientSeed,
        uint256 principal,
        uint256 interestBps,
        uint256 feeBps,
        uint256 durationDays
    ) external step {
        address borrower = _actor(borrowerSeed);
        uint256 idle = Math.min(vault.lendableAssets(), _roomFor(borrower));
        if (vault.paused() || idle == 0) return;
        principal = bound(principal, 1, Math.min(500 * USDC, idle));
        uint256 fee = principal * bound(feeBps, 0, 2_000) / 10_000;
        address recipient = recipientSeed % 2 == 0 ? MERCHANT : _actor(recipientSeed / 2);
        uint256 recipientBefore = usdc.balanceOf(recipient);
        uint256 provisioned0 = _beforeFunding(borrower, principal);
        _fundLoanFor(
            borrower,
            recipient,
            principal,
            principal * bound(interestBps, 0, 2_000) / 10_000,
            fee,
            uint32(bound(durationDays, 7, 90))
        );
        if (usdc.balanceOf(recipient) != recipientBefore + principal - fee) netAmountMismatch = true;
        ghostFees += fee;
        reserveFactorOf[book.loanCount()] = model.reserveFactor();
        _checkCap();
        coverageOf[book.loanCount()] = vault.insuranceCoverageBps();
        _afterFunding(principal, provisioned0);
        ++loansForAnotherRecipient;
    }

    function repay(uint256 loanSeed, uint256 actorSeed, uint256 amount) external step {
        (uint256 loanId, ILoanBook.Loan memory before) = _pickLoan(loanSeed);
        if (loanId == 0 || !_isOpen(before.status)) return;
        address payer = _actor(actorSeed);
        amount = bound(amount, 1, book.remainingBalance(loanId));
        usdc.mint(payer, amount);
        vm.startPrank(payer);
        usdc.approve(address(book), amount);
        (uint256 num0, uint256 den0) = _price();
        (uint256 entryNum0,) = _entryPrice();
        uint256 unrealized0 = vault.unrealizedLosses();
        book.repay(loanId, amount);
        vm.stopPrank();
        // Only the borrower's own money, repaying in full a loan held a week, proves it, up to that loan's principal.
        if (payer != before.borrower) _paidByOthers[loanId] = true;
        bool closed = book.getLoan(loanId).status == ILoanBook.LoanStatus.Repaid;
        bool heldAWeek = block.timestamp >= uint256(before.fundedAt) + 7 days;
        if (closed && !_paidByOthers[loanId] && heldAWeek && before.principal > modelProvenUpTo[payer]) {
            modelProvenUpTo[payer] = before.principal;
        }
        // A repayment that lowers the expected losses (the loan's own, past due; or any loan's by the clock, as the
        // reserve covering them grows) gives them back to the exit price at once (the entry price never counted them);
        // any other gain is locked.
        _noJump(num0, den0, entryNum0, vault.unrealizedLosses() < unrealized0);
        _noSandwich(num0, den0);
        uint256 interestPaid = book.getLoan(loanId).interestRepaid - before.interestRepaid;
        uint256 reserveShare = Math.mulDiv(interestPaid, reserveFactorOf[loanId], 1e18);
        ghostReserveShares += reserveShare;
        ghostYield += interestPaid - reserveShare;
    }

    function extend(uint256 loanSeed, uint256 extraDays, uint256 additionalInterest) external step {
        (uint256 loanId, ILoanBook.Loan memory loan) = _pickLoan(loanSeed);
        if (loanId == 0 || loan.status != ILoanBook.LoanStatus.Active || block.timestamp > loan.dueDate) return;
        if (loan.durationDays >= 90) return;
        extraDays = bound(extraDays, 1, 90 - loan.durationDays);
        uint256 maxInterest = uint256(loan.principal) * 2_000 / 10_000;
        additionalInterest = bound(additionalInterest, 0, maxInterest - loan.interest);
        book.extend(loanId, uint32(extraDays), additionalInterest);
        // Pro-rated over the longer term, the loan book charges less by now when the added interest is small: the
        // vault follows its line, and the interest no longer earned is a loss it records (D-96).
        _uncoveredThisCall = 1;
    }

    function markOverdue(uint256 loanSeed) external step {
        (uint256 loanId, ILoanBook.Loan memory loan) = _pickLoan(loanSeed);
        if (loanId == 0 || loan.status != ILoanBook.LoanStatus.Active || block.timestamp <= loan.dueDate) return;
        _impair(loanId);
    }

    /// @dev Moves time past the grace period when needed, as a keeper would find it.
    function markDefaulted(uint256 loanSeed) external step {
        (uint256 loanId, ILoanBook.Loan memory loan) = _pickLoan(loanSeed);
        if (loanId == 0 || !_isOpen(loan.status)) return;
        uint256 defaultableAfter = uint256(loan.dueDate) + 7 days;
        if (currentTime <= defaultableAfter) {
            currentTime = defaultableAfter + 1;
            vm.warp(currentTime);
        }
        // A keeper marks it overdue first (only an impaired loan defaults), and the time moved: a new baseline.
        if (loan.status == ILoanBook.LoanStatus.Active) _impair(loanId);
        modelProvenUpTo[loan.borrower] = 0;
        (uint256 num0, uint256 den0) = _price();
        uint256 assetsBefore = vault.totalAssets();
        uint256 reserveBefore = vault.insuranceReserve();
        (uint256 impaired, uint256 expectedLoss, uint256 cover,) = vault.impairmentOf(loanId);
        uint256 loss = loan.principal - loan.principalRepaid;
        if (impaired != loss) lossMismatch = true;
        book.markDefaulted(loanId);
        uint256 covered = reserveBefore - vault.insuranceReserve();
        uint256 uncovered = loss - covered;
        if (covered != Math.min(cover, reserveBefore)) lossMismatch = true;
        // The impairment took the expected loss from the exit price already: the default lowers it only by a reserve
        // shortfall (it may rise by the locked profit that absorbs the realized loss), and the entry price by at most
        // what the impairment had counted.
        if (covered == cover && vault.totalAssets() + 1 < assetsBefore) lossMismatch = true;
        (uint256 num1, uint256 den1) = _price();
        if (covered == cover && num1 * den0 + den1 < num0 * den1) defaultMovedPrice = true;
        _noSandwich(num0, den0);
        // Realized now for the entry price (the exit price had it).
        _uncoveredThisCall += uncovered + 1;
        if (uncovered > expectedLoss) _uncoveredThisCall += uncovered - expectedLoss;
        ghostCovered += covered;
        ghostUncovered += uncovered;
        ++defaults;
    }

    /* YIELD, TIME AND PARAMETERS */

    function distributeYield(uint256 amount) external step {
        if (vault.totalSupply() == 0) return;
        amount = bound(amount, 1, 10_000 * USDC);
        usdc.mint(address(this), amount);
        usdc.approve(address(vault), amount);
        (uint256 num0, uint256 den0) = _price();
        (uint256 entryNum0,) = _entryPrice();
        vault.distributeYield(amount);
        _noJump(num0, den0, entryNum0, false);
        ghostYield += amount;
    }

    /// @dev Time alone lowers the exit price when a loan falls due (by the clock, D-123): a loss the vault records.
    function passTime(uint256 secondsForward) external step {
        currentTime += bound(secondsForward, 1 hours, 30 days);
        vm.warp(currentTime);
        _uncoveredThisCall = 1;
    }

    function tuneParameters(uint256 reserveFactor, uint256 coverageBps, uint256 minDeposit, uint256 unlockPeriod)
        external
        step
    {
        model.setReserveFactor(bound(reserveFactor, 0, 0.5e18));
        vault.setInsuranceCoverage(bound(coverageBps, 0, 10_000));
        vault.setMinDeposit(bound(minDeposit, 0, 100 * USDC));
        vault.setProfitUnlockPeriod(bound(unlockPeriod, 0, 30 days));
        // The utilization cap (D-101), from half the pool to all of it.
        vault.setMaxUtilization(5_000 + uint256(keccak256(abi.encode(unlockPeriod))) % 5_001);
    }

    /// @dev A loan never takes the principal out above the utilization cap's share of idle plus principal out.
    function _checkCap() internal {
        uint256 borrowed = vault.totalBorrowed();
        if (borrowed * 10_000 > vault.maxUtilizationBps() * (vault.idleAssets() + borrowed)) loanAboveCap = true;
    }

    /// @dev What covers the loans out: each performing loan's principal out at its own coverage (rounded up once),
    /// plus the covers the impaired loans count on.
    function loansCover() public view returns (uint256) {
        uint256 covered;
        uint256 impairedCovers;
        for (uint256 id = 1; id <= book.loanCount(); ++id) {
            ILoanBook.Loan memory loan = book.getLoan(id);
            (,, uint256 cover,) = vault.impairmentOf(id);
            impairedCovers += cover;
            if (loan.status == ILoanBook.LoanStatus.Active) covered += (loan.principal - loan.principalRepaid) * coverageOf[id];
        }
        return Math.ceilDiv(covered, 10_000) + impairedCovers;
    }

    /// @dev The admin (the timelock) sends part of the reserve's surplus to the treasury (D-98).
    function releaseSurplus(uint256 amount) external step {
        uint256 surplus = vault.reserveSurplus();
        if (surplus == 0) return;
        amount = bound(amount, 1, surplus);
        vault.releaseReserveSurplus(STRANGER, amount);
        ghostReleased += amount;
        if (vault.insuranceReserve() < loansCover()) releaseBelowCover = true;
    }

    function togglePause() external step {
        if (vault.paused()) vault.unpause();
        else vault.pause();
    }

    /// @dev A stranger tries one role-gated action; any success is recorded.
    function unauthorizedCall(uint256 which) external step {
        bytes[14] memory calls = [
            abi.encodeCall(vault.lend, (1, STRANGER, 1 * USDC, 0, 0, block.timestamp + 7 days, 0)),
            abi.encodeCall(vault.recordRepayment, (1, 0, 1, false)),
            abi.encodeCall(vault.recordLoss, (1, 0)),
            abi.encodeCall(vault.distributeYield, (1)),
            abi.encodeCall(vault.pause, ()),
            abi.encodeCall(vault.setMinDeposit, (0)),
            abi.encodeCall(vault.impairLoan, (1, 0)),
            abi.encodeCall(vault.setProfitUnlockPeriod, (0)),
            abi.encodeCall(vault.releaseReserveSurplus, (STRANGER, 1)),
            abi.encodeCall(book.fundLoan, (keccak256("stranger"), STRANGER, 1 * USDC, 0, 0, 7)),
            abi.encodeCall(book.extend, (1, 1, 0)),
            abi.encodeCall(book.setLimits, (book.limits())),
            abi.encodeCall(book.fundLoanFor, (keccak256("stranger for"), STRANGER, STRANGER, 1 * USDC, 0, 0, 7)),
            abi.encodeCall(model.setReserveFactor, (0))
        ];
        which = bound(which, 0, 13);
        address target = which < 9 ? address(vault) : which < 13 ? address(book) : address(model);
        vm.prank(STRANGER);
        (bool success,) = target.call(calls[which]);
        if (success) unauthorizedSucceeded = true;
    }

    /* HELPERS */

    /// @dev Marks a past-due loan overdue: the vault impairs it, and the exit price may fall by its expected loss
    /// (principal and unpaid interest); the entry price does not move, so redeem, mark, deposit gains nothing.
    function _impair(uint256 loanId) internal {
        uint256 unrealizedBefore = vault.unrealizedLosses();
        (uint256 num0, uint256 den0) = _price();
        (uint256 entryNum0,) = _entryPrice();
        book.markOverdue(loanId);
        (uint256 entryNum1,) = _entryPrice();
        if (entryNum1 != entryNum0) lossMismatch = true;
        // The impairment takes the place of its provision.
        _uncoveredThisCall += Math.saturatingSub(vault.unrealizedLosses(), unrealizedBefore);
        _noSandwich(num0, den0);
        ++impairments;
    }

    /// @dev A gain (interest paid ahead of its accrual, a distribution) is locked: at its instant neither price rises
    /// (unless the admin set the unlock period to zero, which counts gains at once). A released impairment raises the
    /// exit price alone, to the entry price it never left.
    function _noJump(uint256 num0, uint256 den0, uint256 entryNum0, bool releases) internal {
        if (vault.profitUnlockPeriod() == 0) return;
        (uint256 num1, uint256 den1) = _price();
        (uint256 entryNum1,) = _entryPrice();
        if (entryNum1 * den0 > entryNum0 * den1) gainMovedPriceAtOnce = true;
        if (!releases && num1 * den0 > num0 * den1) gainMovedPriceAtOnce = true;
        if (num1 > entryNum1) gainMovedPriceAtOnce = true;
    }

    /// @dev A permissionless transaction sandwiched by a redemption before it and a deposit after it gains nothing:
    /// the exit price before it is at most the entry price after it (one unit of rounding).
    function _noSandwich(uint256 num0, uint256 den0) internal {
        (uint256 entryNum1, uint256 den1) = _entryPrice();
        if (num0 * den1 > (entryNum1 + 1) * den0) sandwichGained = true;
    }

    function _fundLoanFor(
        address borrower,
        address recipient,
        uint256 principal,
        uint256 interest,
        uint256 fee,
        uint32 durationDays
    ) internal {
        bytes32 ref = keccak256(abi.encode("loan", book.loanCount()));
        book.fundLoanFor(ref, borrower, recipient, principal, interest, fee, durationDays);
    }

    /// @dev The rate the next loan to `borrower` is provisioned at (its class's now); returns the provisions before it.
    function _beforeFunding(address borrower, uint256 principal) internal returns (uint256) {
        ILoanBook.ExpectedLossRates memory rates = book.expectedLossRates();
        bool unproven = principal > modelProvenUpTo[borrower];
        fundedUnproven[book.loanCount() + 1] = unproven;
        provisionBpsOf[book.loanCount() + 1] = unproven ? rates.unprovenBps : rates.provenBps;
        return vault.provisioned();
    }

    /// @dev The loan just funded is provisioned at its rate, in the exit price alone.
    function _afterFunding(uint256 principal, uint256 provisioned0) internal {
        uint256 expected = Math.mulDiv(principal, provisionBpsOf[book.loanCount()], 10_000, Math.Rounding.Ceil);
        if (vault.provisioned() != provisioned0 + expected) provisionMismatch = true;
        _provisionedThisCall = true;
    }

    /// @dev The most the loan book lends `borrower` now: what it proved it repays, or the room left for unproven loans.
    function _roomFor(address borrower) internal view returns (uint256) {
        (, uint256 room) = book.unprovenExposure();
        return Math.max(book.provenUpTo(borrower), room);
    }

    function _actor(uint256 seed) internal view returns (address) {
        return actors[seed % actors.length];
    }

    function _pickLoan(uint256 seed) internal view returns (uint256 loanId, ILoanBook.Loan memory loan) {
        uint256 count = book.loanCount();
        if (count == 0) return (0, loan);
        loanId = seed % count + 1;
        loan = book.getLoan(loanId);
    }

    function _isOpen(ILoanBook.LoanStatus status) internal pure returns (bool) {
        return status == ILoanBook.LoanStatus.Active || status == ILoanBook.LoanStatus.Overdue;
    }

    function _price() internal view returns (uint256 num, uint256 den) {
        return (vault.totalAssets() + 1, vault.totalSupply() + VIRTUAL_SHARES);
    }

    function _entryPrice() internal view returns (uint256 num, uint256 den) {
        return (vault.entryAssets() + 1, vault.totalSupply() + VIRTUAL_SHARES);
    }
}

/// @notice Accounting invariants of the vault and the loan book under the handler's random actions.
/// @dev 128 runs of 100 calls per invariant (the default 256 x 500 also passes but takes 40-75 s here for the four);
/// 100 calls see a dozen loans through funding, repayment, extension and default.
contract LendingInvariantsTest is LendingSetup {
    LendingHandler internal handler;

    function setUp() public {
        _deploy();
        handler = new LendingHandler(usdc, model, vault, book);
        usdc.grantRole(usdc.FAUCET_ROLE(), address(handler));
        book.grantRole(book.OPERATOR_ROLE(), address(handler));
        vault.grantRole(vault.YIELD_ROLE(), address(handler));
        vault.grantRole(vault.PAUSER_ROLE(), address(handler));
        vault.grantRole(vault.DEFAULT_ADMIN_ROLE(), address(handler));
        model.grantRole(model.DEFAULT_ADMIN_ROLE(), address(handler));
        targetContract(address(handler));
    }

    /// @dev Every share can be paid: the assets of all shares never exceed the vault's assets.
    /// forge-config: default.invariant.runs = 128
    /// forge-config: default.invariant.depth = 100
    function invariant_sharesAreCovered() public view {
        assertLe(vault.convertToAssets(vault.totalSupply()), vault.totalAssets(), "shares covered by assets");
        assertLe(vault.maxWithdraw(address(0xA1)), vault.idleAssets(), "withdrawals within idle USDC");
    }

    /// @dev USDC held, the reserve, the principal out and the loan records agree.
    /// forge-config: default.invariant.runs = 128
    /// forge-config: default.invariant.depth = 100
    function invariant_accountingIsConsistent() public view {
        uint256 held = usdc.balanceOf(address(vault));
        uint256 reserve = vault.insuranceReserve();
        assertGe(held, reserve, "the reserve is held in USDC");
        assertEq(
            int256(vault.entryAssets() + vault.lockedProfit()) - vault.accruedInterest(),
            int256(held - reserve + vault.totalBorrowed()),
            "entry assets + locked profit - accrued interest = idle + borrowed"
        );
        assertEq(
            vault.totalAssets(),
            Math.saturatingSub(vault.entryAssets(), vault.unrealizedLosses()),
            "exit assets = entry assets - unrealized losses"
        );
        assertEq(vault.idleAssets(), held - reserve, "idle = held - reserve");

        uint256 outstanding;
        uint256 expectedLosses;
        uint256 provisions;
        uint256 count = book.loanCount();
        uint256 pastDueLoss = _pastDueLoss(reserve);
        for (uint256 id = 1; id <= count; ++id) {
            ILoanBook.Loan memory loan = book.getLoan(id);
            if (loan.status == ILoanBook.LoanStatus.Active || loan.status == ILoanBook.LoanStatus.Overdue) {
                outstanding += loan.principal - loan.principalRepaid;
            }
            if (loan.status == ILoanBook.LoanStatus.Active) provisions += _provisionOf(id, loan);
            (uint256 impaired, uint256 expectedLoss,, uint256 interest) = vault.impairmentOf(id);
            if (loan.status == ILoanBook.LoanStatus.Overdue) {
                assertEq(impaired, loan.principal - loan.principalRepaid, "an overdue loan is impaired by its principal out");
            } else {
                assertEq(impaired + expectedLoss + interest, 0, "only overdue loans are impaired");
            }
            expectedLosses += expectedLoss + interest;
            assertLe(loan.principalRepaid, loan.principal, "never more principal back than lent");
            assertLe(loan.interestRepaid, loan.interest, "never more interest than agreed");
        }
        assertEq(vault.totalBorrowed(), outstanding, "totalBorrowed = open loans' principal");
        // A loan past due and untouched counts by the clock: its principal out less its cover (capped by the reserve
        // the impaired loans leave), and its depositors' interest (rounded per loan).
        assertEq(vault.provisioned(), provisions, "provisions = each open loan not impaired at its rate");
        assertTrue(!handler.provisionMismatch(), "a funding provisioned other than its rate");
        assertApproxEqAbs(
            vault.unrealizedLosses(),
            expectedLosses + pastDueLoss + provisions,
            count + 1,
            "unrealized losses = the provisions, the impaired loans' expected losses and, by the clock, those past due"
        );
        assertEq(
            reserve,
            handler.ghostFees() + handler.ghostReserveShares() - handler.ghostCovered() - handler.ghostReleased(),
            "reserve = fees + interest share - covered losses - released surplus"
        );
        assertTrue(!handler.releaseBelowCover(), "a release left the reserve below the loans' cover");
        assertTrue(!handler.loanAboveCap(), "a loan took the utilization above the cap");
        assertEq(
            vault.reserveSurplus(),
            Math.saturatingSub(reserve, handler.loansCover()),
            "surplus = reserve - each loan's principal out at its own coverage - impaired covers"
        );
        assertEq(vault.totalYield(), handler.ghostYield(), "total yield = distributed + depositors' interest");
        assertEq(usdc.balanceOf(address(book)), 0, "the loan book holds no USDC");
        assertTrue(!handler.netAmountMismatch(), "a loan's recipient received other than the net amount");
    }

    /// @dev The unproven principal out is what the loans funded above what their borrowers had proven still have out,
    /// within the cap; a borrower proves itself only by repaying in full alone a loan it held a week, and a default voids
    /// it.
    /// forge-config: default.invariant.runs = 128
    /// forge-config: default.invariant.depth = 100
    function invariant_unprovenExposureIsTheUnprovenLoansOut() public view {
        uint256 out;
        uint256 count = book.loanCount();
        for (uint256 id = 1; id <= count; ++id) {
            ILoanBook.Loan memory loan = book.getLoan(id);
            bool open = loan.status == ILoanBook.LoanStatus.Active || loan.status == ILoanBook.LoanStatus.Overdue;
            if (open && loan.unproven) out += loan.principal - loan.principalRepaid;
            assertTrue(loan.unproven == handler.fundedUnproven(id), "unproven exactly above what the borrower proved");
        }
        assertTrue(!handler.provenMismatch(), "proven by a full repayment of its own after a week, void after a default");
        (uint256 outstanding,) = book.unprovenExposure();
        assertEq(outstanding, out, "unproven outstanding = the unproven loans' principal out");
        ILoanBook.UnprovenLimits memory limits = book.unprovenLimits();
        assertLe(
            outstanding,
            Math.max(limits.floor, handler.maxAssetsSeen() * limits.shareBps / 10_000),
            "within the cap"
        );
    }

    /// @dev The share price falls only by a recorded uncovered default loss, and by exactly that loss.
    /// forge-config: default.invariant.runs = 128
    /// forge-config: default.invariant.depth = 100
    function invariant_sharePriceFallsOnlyByRecordedLosses() public view {
        assertTrue(!handler.priceDroppedWithoutLoss(), "price dropped without a recorded loss");
        assertTrue(!handler.lossMismatch(), "a loss moved assets other than recorded");
    }

    /// @dev No exit timed around a known event moves value: a gain never moves the price at its instant (it unlocks
    /// over time), and a default never moves it (its loss was taken when the loan was impaired, past due).
    /// forge-config: default.invariant.runs = 128
    /// forge-config: default.invariant.depth = 100
    function invariant_noExitTimedAroundAKnownEventMovesValue() public view {
        assertTrue(!handler.gainMovedPriceAtOnce(), "a gain moved the price at once");
        assertTrue(!handler.defaultMovedPrice(), "a default moved the price");
        assertTrue(!handler.sandwichGained(), "redeem, a permissionless transaction, deposit gained");
        assertLe(vault.totalAssets(), vault.entryAssets(), "never exit above the entry price");
    }

    /// @dev The expected loss of the loans past due and not marked, as the vault counts it by the clock.
    function _pastDueLoss(uint256 reserve) internal view returns (uint256 loss) {
        uint256 principal;
        uint256 cover;
        uint256 impairedCovers;
        for (uint256 id = 1; id <= book.loanCount(); ++id) {
            ILoanBook.Loan memory loan = book.getLoan(id);
            (,, uint256 impairedCover,) = vault.impairmentOf(id);
            impairedCovers += impairedCover;
            if (loan.status != ILoanBook.LoanStatus.Active || block.timestamp <= loan.dueDate) continue;
            uint256 out = loan.principal - loan.principalRepaid;
            // Its provision is counted already: by the clock, the rest.
            principal += out - _provisionOf(id, loan);
            cover += out * handler.coverageOf(id) / 10_000;
            loss += loan.interest - Math.mulDiv(loan.interest, handler.reserveFactorOf(id), 1e18);
        }
        loss += Math.saturatingSub(principal, Math.min(cover, Math.saturatingSub(reserve, impairedCovers)));
    }

    /// @dev An open loan's provision: its principal out at the rate it was funded at, rounded up.
    function _provisionOf(uint256 id, ILoanBook.Loan memory loan) internal view returns (uint256) {
        return Math.mulDiv(loan.principal - loan.principalRepaid, handler.provisionBpsOf(id), 10_000, Math.Rounding.Ceil);
    }

    /// @dev No role-gated action ever succeeded for a stranger.
    /// forge-config: default.invariant.runs = 128
    /// forge-config: default.invariant.depth = 100
    function invariant_onlyRolesActOnRoles() public view {
        assertTrue(!handler.unauthorizedSucceeded(), "a stranger used a role");
    }
}
