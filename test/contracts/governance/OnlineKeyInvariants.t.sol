// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TestBase} from "../lib/TestBase.sol";
import {IAccessControl} from "@openzeppelin/contracts/access/IAccessControl.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {ILoanBook} from "../../../contracts/interfaces/ILoanBook.sol";
import {IInterestRateModel} from "../../../contracts/interfaces/IInterestRateModel.sol";
import {IPaymentRouter} from "../../../contracts/interfaces/IPaymentRouter.sol";
import {IStakingVault} from "../../../contracts/interfaces/IStakingVault.sol";
import {PlatformSetup} from "./PlatformSetup.sol";

/// @notice The service's online key, stolen: it calls whatever it can, in any order (loans to itself or to addresses
/// it owns, purchases paid to itself, extensions, yield, pauses, every admin call and role grant it might try), while
/// time passes and anyone marks loans overdue and defaulted. Depositors keep depositing.
contract OnlineKeyHandler is PlatformSetup {
    address[3] internal owned = [ONLINE_KEY, address(0x0A1), address(0x0A2)];
    address internal constant DEPOSITOR = address(0xD0);

    uint256 public currentTime;
    uint256 public ghostDeposits;
    uint256 public ghostYield;
    uint256 public ghostLentNet;
    uint256 public ghostPrincipal;
    bool public adminCallSucceeded;
    bool public assetsFellOutsideALoss;

    bool private _lossAllowed;

    constructor() {
        _deployPlatform();
        currentTime = block.timestamp;
    }

    /// @dev Time only moves forward; the vault's assets fall only in a call that marks a loan past due.
    modifier step() {
        vm.warp(currentTime);
        uint256 before = vault.totalAssets();
        _lossAllowed = false;
        _;
        if (vault.totalAssets() < before && !_lossAllowed) assetsFellOutsideALoss = true;
    }

    function deposit(uint256 assets) external step {
        if (vault.paused()) return;
        assets = bound(assets, USDC, 1_000_000 * USDC);
        _depositAs(DEPOSITOR, assets);
        ghostDeposits += assets;
    }

    function fundLoan(uint256 borrowerSeed, uint256 principal, uint256 interestBps, uint256 feeBps, uint256 days_)
        external
        step
    {
        uint256 idle = vault.lendableAssets();
        if (vault.paused() || idle == 0) return;
        principal = bound(principal, 1, Math.min(500 * USDC, idle));
        uint256 fee = principal * bound(feeBps, 0, 2_000) / 10_000;
        vm.prank(ONLINE_KEY);
        book.fundLoan(
            keccak256(abi.encode("loan", book.loanCount())),
            owned[borrowerSeed % owned.length],
            principal,
            principal * bound(interestBps, 0, 2_000) / 10_000,
            fee,
            uint32(bound(days_, 7, 90))
        );
        ghostLentNet += principal - fee;
        ghostPrincipal += principal;
    }

    /// @dev A purchase on credit paid to an address the key owns.
    function payWithLoans(uint256 merchantSeed, uint256 principal, uint256 count) external step {
        uint256 idle = vault.lendableAssets();
        count = bound(count, 1, 3);
        if (vault.paused() || idle < count) return;
        principal = bound(principal, 1, Math.min(500 * USDC, idle / count));
        IPaymentRouter.Installment[] memory installments = new IPaymentRouter.Installment[](count);
        for (uint256 i; i < count; ++i) {
            installments[i] = IPaymentRouter.Installment(
                keccak256(abi.encode("purchase", book.loanCount(), i)),
                principal,
                principal,
                book.minInterestOf(owned[0], principal),
                principal / 10,
                uint32(7 * (i + 1))
            );
        }
        vm.prank(ONLINE_KEY);
        router.payWithLoans(keccak256(abi.encode("order", book.loanCount())), owned[merchantSeed % owned.length], owned[0], installments);
        ghostLentNet += principal * count;
        ghostPrincipal += principal * count;
    }

    function extend(uint256 loanSeed, uint256 extraDays, uint256 interest) external step {
        uint256 count = book.loanCount();
        if (count == 0) return;
        vm.prank(ONLINE_KEY);
        try book.extend(loanSeed % count + 1, uint32(bound(extraDays, 1, 90)), bound(interest, 0, 100 * USDC)) {} catch {}
    }

    function distributeYield(uint256 amount) external step {
        if (vault.totalSupply() == 0) return;
        amount = bound(amount, 1, 1_000 * USDC);
        usdc.mint(ONLINE_KEY, amount);
        vm.startPrank(ONLINE_KEY);
        usdc.approve(address(vault), amount);
        vault.distributeYield(amount);
        vm.stopPrank();
        ghostYield += amount;
    }

    /// @dev The online key pauses (a fast brake); lifting a pause is the timelock's, so its unpause must fail.
    function togglePause() external step {
        bool paused = vault.paused();
        vm.prank(ONLINE_KEY);
        if (!paused) return vault.pause();
        (bool lifted,) = address(vault).call(abi.encodeCall(vault.unpause, ()));
        if (lifted) adminCallSucceeded = true;
        vm.prank(address(timelock));
        vault.unpause();
    }

    function passTime(uint256 seconds_) external step {
        currentTime += bound(seconds_, 1, 60 days);
        vm.warp(currentTime);
    }

    /// @dev Anyone may mark a loan past its due date: the only calls that may take value out of the share price.
    function markPastDue(uint256 loanSeed, bool defaulted) external step {
        uint256 count = book.loanCount();
        if (count == 0) return;
        _lossAllowed = true;
        uint256 loanId = loanSeed % count + 1;
        if (defaulted) try book.markDefaulted(loanId) {} catch {}
        else try book.markOverdue(loanId) {} catch {}
    }

    /// @dev The vault's USDC, the sum of the book's principals, and whether each loan is within the default limits.
    function state() external view returns (uint256 held, uint256 principals, bool withinLimits) {
        held = usdc.balanceOf(address(vault));
        withinLimits = true;
        for (uint256 id = 1; id <= book.loanCount(); ++id) {
            ILoanBook.Loan memory loan = book.getLoan(id);
            principals += loan.principal;
            if (loan.principal > 500 * USDC || loan.interest > loan.principal / 5 || loan.insuranceFee > loan.principal / 5) {
                withinLimits = false;
            }
        }
    }

    /// @dev Every admin call and role grant the key might try, and the vault's lender calls themselves.
    function tryAdmin(uint256 which, uint256 amount) external step {
        amount = bound(amount, 1, 1_000_000 * USDC);
        uint256[5] memory rates = [uint256(0), 0, 0, 0, 0];
        ILoanBook.LoanLimits memory wide = ILoanBook.LoanLimits(type(uint96).max, 1, 365, 0, 10_000, 5_000);
        bytes32[6] memory roles =
            [bytes32(0), vault.LENDER_ROLE(), vault.YIELD_ROLE(), book.OPERATOR_ROLE(), book.REFUNDER_ROLE(), keccak256("x")];
        address[4] memory contracts = [address(model), address(vault), address(book), address(router)];
        address target;
        bytes memory data;
        which = which % 12;
        if (which == 0) {
            (target, data) = (contracts[amount % 4], abi.encodeCall(IAccessControl.grantRole, (roles[amount % 6], ONLINE_KEY)));
        } else if (which == 1) {
            (target, data) = (address(vault), abi.encodeCall(IStakingVault.lend, (99, ONLINE_KEY, amount, 0, 0, currentTime, 0)));
        } else if (which == 2) {
            (target, data) = (address(vault), abi.encodeCall(IStakingVault.releaseReserveSurplus, (ONLINE_KEY, amount)));
        } else if (which == 3) {
            (target, data) = (address(vault), abi.encodeCall(IStakingVault.setInterestRateModel, (IInterestRateModel(ONLINE_KEY))));
        } else if (which == 4) {
            (target, data) = (address(vault), abi.encodeCall(IStakingVault.setInsuranceCoverage, (0)));
        } else if (which == 5) {
            (target, data) = (address(book), abi.encodeCall(ILoanBook.setLimits, (wide)));
        } else if (which == 6) {
            (target, data) = (address(router), abi.encodeCall(IPaymentRouter.setFee, (1_000, ONLINE_KEY)));
        } else if (which == 7) {
            (target, data) = (address(model), abi.encodeCall(IInterestRateModel.setBorrowRates, (rates)));
        } else if (which == 8) {
            (target, data) = (address(vault), abi.encodeCall(IStakingVault.recordLoss, (1, amount)));
        } else if (which == 9) {
            (target, data) = (address(vault), abi.encodeCall(IStakingVault.returnInterest, (1, ONLINE_KEY, amount)));
        } else if (which == 10) {
            (target, data) = (address(book), abi.encodeCall(ILoanBook.refundLoan, (1, amount)));
        } else {
            (target, data) = (address(timelock), abi.encodeCall(timelock.schedule, (address(vault), 0, "", 0, 0, 2 days)));
        }
        vm.prank(ONLINE_KEY);
        (bool ok,) = target.call(data);
        if (ok) adminCallSucceeded = true;
    }
}

/// Issue #43 item 2, "done when" (D-100): the online key cannot reduce the pool's assets except by funding a loan
/// the book approves. Whatever it calls, the only USDC that leaves the vault is the net amount of loans within the
/// book's limits, and the share price falls only when a loan is marked past its due date.
contract OnlineKeyInvariantsTest is TestBase {
    OnlineKeyHandler internal handler;

    function setUp() public {
        handler = new OnlineKeyHandler();
        targetContract(address(handler));
    }

    /// forge-config: default.invariant.runs = 64
    /// forge-config: default.invariant.depth = 60
    function invariant_onlyApprovedLoansLeaveThePool() public view {
        (uint256 held, uint256 principals, bool withinLimits) = handler.state();
        assertEq(
            held,
            handler.ghostDeposits() + handler.ghostYield() - handler.ghostLentNet(),
            "USDC left the vault only as the net amount of the loans funded"
        );
        assertEq(principals, handler.ghostPrincipal(), "the book's loans are the ones funded");
        assertTrue(withinLimits, "every loan within the book's limits");
        assertTrue(!handler.adminCallSucceeded(), "no admin or lender call from the online key went through");
        assertTrue(!handler.assetsFellOutsideALoss(), "the pool's assets fell only when a loan was marked past due");
    }
}
