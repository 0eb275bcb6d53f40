// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IAccessControl} from "@openzeppelin/contracts/access/IAccessControl.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {ILoanBook} from "../../../contracts/interfaces/ILoanBook.sol";
import {LendingSetup} from "../lending/LendingSetup.sol";

/// Issue #56 item 1 (D-126): a loan's expected loss is provisioned from its funding, at a rate per class of borrower
/// (never repaid a loan in full, or proven), out of the exit price until it is repaid, impaired or written off. Before,
/// a depositor who left before a loan's due date avoided all of its share of the loss if it defaulted; now at most its
/// share of the loss beyond the provision.
contract ProvisionsTest is LendingSetup {
    address internal constant STAYER = address(0x5747);
    address internal constant LEAVER = address(0x1EA7E);
    address internal constant ENTRANT = address(0xE7);
    address internal constant BORROWER = address(0xB0AA0);

    uint256 internal constant PRINCIPAL = 500 * USDC;

    function setUp() public {
        _deploy();
    }

    function _fund(bytes32 ref, address borrower) internal returns (uint256) {
        return book.fundLoan(ref, borrower, PRINCIPAL, 10 * USDC, PRINCIPAL / 10, 30);
    }

    function _repayAs(address payer, uint256 loanId, uint256 amount) internal {
        usdc.mint(payer, amount);
        vm.startPrank(payer);
        usdc.approve(address(book), amount);
        book.repay(loanId, amount);
        vm.stopPrank();
    }

    function _redeemAll(address owner) internal returns (uint256) {
        uint256 shares = vault.balanceOf(owner);
        vm.prank(owner);
        return vault.redeem(shares, owner, owner);
    }

    /// @dev Two depositors of 1,000 USDC and a 500 USDC loan that defaults; the leaver leaves the day before it falls
    /// due, or holds. Returns what the leaver ended with.
    function _aDefault(bool leaves) internal returns (uint256 value) {
        _depositAs(STAYER, 1_000 * USDC);
        _depositAs(LEAVER, 1_000 * USDC);
        uint256 loanId = _fund("defaults", BORROWER);
        ILoanBook.Loan memory loan = book.getLoan(loanId);
        vm.warp(uint256(loan.dueDate) - 1 days);
        if (leaves) value = _redeemAll(LEAVER);
        vm.warp(uint256(loan.dueDate) + 7 days + 1);
        book.markOverdue(loanId);
        book.markDefaulted(loanId);
        if (!leaves) value = vault.previewRedeem(vault.balanceOf(LEAVER));
    }

    function test_anExitBeforeTheDueDateAvoidsOnlyTheLossBeyondTheProvision() public {
        uint256 snapshot = vm.snapshotState();
        uint256 held = _aDefault(false);
        vm.revertToState(snapshot);
        snapshot = vm.snapshotState();
        // Without a provision (the rates at zero, as before): the leaver avoided all of its share of the loss, the 450
        // USDC the reserve (the loan's 50 USDC fee) did not cover and the 10 of interest, half each.
        book.setExpectedLossRates(ILoanBook.ExpectedLossRates(0, 0));
        uint256 avoidedBefore = _aDefault(true) - held;
        assertApproxEqAbs(avoidedBefore, 230 * USDC, 1 * USDC, "before: all of its share");
        vm.revertToState(snapshot);

        // With the provision (5 %: 25 USDC) out of the exit price from the funding, the leaver left its half behind: it
        // avoids its share of the loss beyond the provision, no more.
        uint256 avoided = _aDefault(true) - held;
        uint256 provision = PRINCIPAL * 500 / 10_000;
        assertApproxEqAbs(avoidedBefore - avoided, provision / 2, 2, "the leaver left its share of the provision behind");
    }

    function test_theRateIsTheBorrowersClassAndFollowsThePrincipalOut() public {
        _depositAs(STAYER, 10_000 * USDC);
        uint256 entry0 = vault.entryAssets();
        uint256 unproven = _fund("first", BORROWER);
        assertEq(vault.provisioned(), 25 * USDC, "5 % of a loan to a borrower that never repaid in full");
        assertEq(vault.entryAssets(), entry0, "entries do not buy it");
        assertEq(vault.totalAssets(), entry0 - 25 * USDC, "exits bear it");

        // A partial repayment (interest first) leaves the provision on the principal still out, rounded up.
        vm.warp(block.timestamp + 10 days);
        _repayAs(BORROWER, unproven, 200 * USDC);
        uint256 out = PRINCIPAL - book.getLoan(unproven).principalRepaid;
        assertEq(vault.provisioned(), Math.mulDiv(out, 500, 10_000, Math.Rounding.Ceil));

        // Repaid in full: released to the exit price at once, which the entry price never left.
        _repayAs(BORROWER, unproven, book.payoffAmount(unproven));
        assertEq(vault.provisioned(), 0, "released");
        assertEq(vault.totalAssets(), vault.entryAssets(), "the two prices are one again");

        // The borrower is proven now: 1 %.
        _fund("second", BORROWER);
        assertEq(vault.provisioned(), 5 * USDC, "1 % of a proven borrower's loan");
    }

    function test_anEntrantAfterTheFundingGainsNothingFromTheRelease() public {
        _depositAs(STAYER, 100_000 * USDC);
        uint256 loanId = _fund("released", BORROWER);
        // A large entrant after the funding pays the entry price, then holds through the repayment and its unlock.
        uint256 deposited = 1_000_000 * USDC;
        _depositAs(ENTRANT, deposited);
        vm.warp(block.timestamp + 30 days);
        _repayAs(BORROWER, loanId, book.payoffAmount(loanId));
        vm.warp(block.timestamp + 7 days);
        uint256 received = _redeemAll(ENTRANT);
        // Its share (1,000,000 of 1,100,000) of the loan's 10 USDC of interest while it held, nothing of the 25 USDC
        // provision released (that would be 22.7 more).
        assertLe(received, deposited + Math.mulDiv(10 * USDC, 10, 11) + 1, "its share of the interest, no more");
    }

    function test_pastItsDueDateTheExpectedLossTakesTheProvisionsPlaceTouchedOrNot() public {
        _depositAs(STAYER, 10_000 * USDC);
        uint256 loanId = _fund("due", BORROWER);
        ILoanBook.Loan memory loan = book.getLoan(loanId);
        vm.warp(uint256(loan.dueDate) + 1);
        // By the clock: the principal the reserve does not cover (it holds the loan's 50 USDC fee) and the interest the
        // schedule counted, not the provision on top of it.
        uint256 interest = 10 * USDC - Math.mulDiv(10 * USDC, model.reserveFactor(), 1e18);
        uint256 uncovered = PRINCIPAL - Math.min(PRINCIPAL * 8_000 / 10_000, vault.insuranceReserve());
        assertApproxEqAbs(vault.unrealizedLosses(), uncovered + interest, 1, "by the clock, no double count");
        uint256 exitBefore = vault.totalAssets();
        book.markOverdue(loanId);
        assertEq(vault.provisioned(), 0, "the impairment took its place");
        assertApproxEqAbs(vault.totalAssets(), exitBefore, 1, "the mark moves nothing");
    }

    function test_theRatesChangeOnlyThroughTheAdminWithinBounds() public {
        ILoanBook.ExpectedLossRates memory rates = book.expectedLossRates();
        assertEq(rates.unprovenBps, 500);
        assertEq(rates.provenBps, 100);
        vm.prank(BORROWER);
        vm.expectRevert(
            abi.encodeWithSelector(IAccessControl.AccessControlUnauthorizedAccount.selector, BORROWER, bytes32(0))
        );
        book.setExpectedLossRates(ILoanBook.ExpectedLossRates(0, 0));
        ILoanBook.ExpectedLossRates memory tooHigh = ILoanBook.ExpectedLossRates(10_001, 0);
        vm.expectRevert(abi.encodeWithSelector(ILoanBook.LoanBookInvalidExpectedLossRates.selector, tooHigh));
        book.setExpectedLossRates(tooHigh);

        // A loan keeps the rate it was funded at.
        _depositAs(STAYER, 10_000 * USDC);
        _fund("kept", BORROWER);
        book.setExpectedLossRates(ILoanBook.ExpectedLossRates(1_000, 100));
        assertEq(vault.provisioned(), 25 * USDC);
        _fund("new rate", address(0xB2));
        assertEq(vault.provisioned(), 75 * USDC);
    }
}
