// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TestBase} from "../lib/TestBase.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {ILoanBook} from "../../../contracts/interfaces/ILoanBook.sol";
import {IStakingVault} from "../../../contracts/interfaces/IStakingVault.sol";
import {IPaymentRouter} from "../../../contracts/interfaces/IPaymentRouter.sol";
import {ERC3009} from "../../../contracts/mocks/ERC3009.sol";
import {MockUSDC} from "../../../contracts/mocks/MockUSDC.sol";
import {PaymentRouter} from "../../../contracts/payments/PaymentRouter.sol";
import {LoanBook} from "../../../contracts/lending/LoanBook.sol";
import {StakingVault} from "../../../contracts/vault/StakingVault.sol";
import {LendingSetup} from "../lending/LendingSetup.sol";

/// @notice Deploys routers from a fresh address, so that the address of its first deployment is known beforehand
/// (a contract's first CREATE uses nonce 1).
contract PaymentRouterDeployer {
    function deploy(IERC20 asset, ILoanBook loanBook, address admin, address treasury, address forwarder)
        external
        returns (PaymentRouter)
    {
        return new PaymentRouter(asset, loanBook, admin, treasury, forwarder);
    }

    /// @dev The address of this deployer's first CREATE: keccak256(rlp([this, 1])).
    function firstAddress() external view returns (address) {
        bytes32 hash = keccak256(abi.encodePacked(bytes1(0xd6), bytes1(0x94), address(this), bytes1(0x01)));
        return address(uint160(uint256(hash)));
    }
}

/// @notice Fuzz tests of the payment router's arithmetic: the fee split of a payment, the bound on refunds, and the
/// amount, fee and caller checks; and of the three review findings: a payment is its terms (ref, merchant, amount),
/// so paying the ref under other terms leaves it payable; a merchant's refund refs are its own; the router is never
/// a merchant or the treasury. And of payments on credit: the amount split exactly between the merchant and the
/// treasury from the vault's loans, and refunds applied to the payer's loans first. This contract is the admin and
/// the router's operator. Flows, events and permits: PaymentRouter.test.ts and PaymentRouter.credit.test.ts.
contract PaymentRouterTest is LendingSetup {
    address internal constant PAYER = address(0xBA7E5);
    address internal constant MERCHANT = address(0x3E5C4A);
    address internal constant TREASURY = address(0x7E5A);
    address internal constant SQUATTER = address(0x5C0A7);
    address internal constant DEPOSITOR = address(0xD0);
    bytes32 internal constant REF = keccak256("order-1");
    uint256 internal constant POOL = 100_000e6;

    PaymentRouter internal router;

    function setUp() public {
        _deploy();
        router = new PaymentRouter(usdc, book, address(this), TREASURY, address(forwarder));
        book.grantRole(book.OPERATOR_ROLE(), address(router));
        book.grantRole(book.REFUNDER_ROLE(), address(router));
        router.grantRole(router.OPERATOR_ROLE(), address(this));
        _depositAs(DEPOSITOR, POOL);
        vm.prank(PAYER);
        usdc.approve(address(router), type(uint256).max);
        vm.prank(MERCHANT);
        usdc.approve(address(router), type(uint256).max);
        vm.prank(SQUATTER);
        usdc.approve(address(router), type(uint256).max);
    }

    function _pay(bytes32 ref, uint256 amount) internal {
        usdc.mint(PAYER, amount);
        vm.prank(PAYER);
        router.pay(ref, MERCHANT, amount);
    }

    function _hash(IPaymentRouter.Payment memory p) internal pure returns (bytes32) {
        return keccak256(abi.encode(p));
    }

    /// Any amount that fits 128 bits, at any fee the admin may set: the payer pays exactly the amount, the merchant
    /// and the treasury receive exactly the amount between them, the fee is amount * bps / 10,000 rounded down, and
    /// the router keeps nothing.
    function testFuzz_paymentSplitsTheAmountExactly(uint256 amount, uint256 bps) public {
        amount = bound(amount, 1, type(uint128).max);
        bps = bound(bps, 0, router.MAX_FEE_BPS());
        router.setFee(bps, TREASURY);
        uint256 fee = amount * bps / 10_000;

        usdc.mint(PAYER, amount);
        vm.expectEmit();
        emit IPaymentRouter.PaymentPaid(REF, PAYER, MERCHANT, amount, fee);
        vm.prank(PAYER);
        router.pay(REF, MERCHANT, amount);

        uint256 toMerchant = usdc.balanceOf(MERCHANT);
        uint256 toTreasury = usdc.balanceOf(TREASURY);
        assertEq(usdc.balanceOf(PAYER), 0, "the payer paid exactly the amount");
        assertEq(toMerchant + toTreasury, amount, "merchant + treasury = amount");
        assertEq(toTreasury, fee, "fee = amount * bps / 10,000");
        // Rounded down: fee * 10,000 <= amount * bps < (fee + 1) * 10,000.
        assertLe(toTreasury * 10_000, amount * bps, "the fee is not rounded up");
        assertTrue(amount * bps < (toTreasury + 1) * 10_000, "the fee is rounded down by less than one unit");
        assertLe(toTreasury, amount / 10, "at most 10 %");
        assertEq(usdc.balanceOf(address(router)), 0, "the router holds no USDC");

        IPaymentRouter.Payment memory p = router.paymentOf(REF, MERCHANT, amount);
        assertEq(p.payer, PAYER, "payer recorded");
        assertEq(p.merchant, MERCHANT, "merchant recorded");
        assertEq(p.amount, amount, "amount recorded");
        assertEq(p.fee, fee, "fee recorded");
        assertEq(p.refunded, 0, "nothing refunded");
    }

    /// A payment by the payer's EIP-3009 authorization (D-120), whoever submits it: the payer pays exactly the amount,
    /// split as {pay} splits it, through the router and out in the same call; the authorization's nonce is the
    /// payment's key, so it pays these terms once and no others.
    function testFuzz_payWithAuthorizationPaysTheTermsOnce(uint256 amount, uint256 bps, uint256 signerKey, address submitter)
        public
    {
        amount = bound(amount, 1, type(uint128).max - 1);
        bps = bound(bps, 0, router.MAX_FEE_BPS());
        signerKey = bound(signerKey, 1, 2 ** 128);
        address payer = vm.addr(signerKey);
        vm.assume(payer != MERCHANT && payer != TREASURY && payer != address(router));
        vm.assume(submitter != address(0) && submitter != address(forwarder));
        router.setFee(bps, TREASURY);
        uint256 fee = amount * bps / 10_000;
        usdc.mint(payer, amount);
        uint256 validBefore = block.timestamp + 600;
        bytes32 key = router.paymentKey(REF, MERCHANT, amount);
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(signerKey, _receiveDigest(payer, amount, validBefore, key));

        // Another amount under this signature: the router derives another nonce, so the token refuses it.
        usdc.mint(payer, 1);
        vm.prank(submitter);
        vm.expectRevert(abi.encodeWithSelector(ERC3009.ERC3009InvalidSignature.selector, payer));
        router.payWithAuthorization(REF, MERCHANT, amount + 1, payer, 0, validBefore, v, r, s);

        vm.prank(submitter);
        router.payWithAuthorization(REF, MERCHANT, amount, payer, 0, validBefore, v, r, s);
        assertEq(usdc.balanceOf(payer), 1, "the payer paid exactly the amount");
        assertEq(usdc.balanceOf(MERCHANT), amount - fee, "the merchant got the amount less the fee");
        assertEq(usdc.balanceOf(TREASURY), fee, "the treasury got the fee");
        assertEq(usdc.balanceOf(address(router)), 0, "the router holds no USDC");
        assertTrue(usdc.authorizationState(payer, key), "the authorization is used");
        assertEq(router.paymentOf(REF, MERCHANT, amount).payer, payer, "the signer is the payer");

        vm.prank(submitter);
        vm.expectRevert(abi.encodeWithSelector(IPaymentRouter.PaymentRouterAlreadyPaid.selector, REF, MERCHANT, amount));
        router.payWithAuthorization(REF, MERCHANT, amount, payer, 0, validBefore, v, r, s);
    }

    /// The digest of a `ReceiveWithAuthorization` to the router over the token's domain.
    function _receiveDigest(address from, uint256 value, uint256 validBefore, bytes32 nonce) internal view returns (bytes32) {
        bytes32 structHash = keccak256(
            abi.encode(usdc.RECEIVE_WITH_AUTHORIZATION_TYPEHASH(), from, address(router), value, 0, validBefore, nonce)
        );
        return keccak256(abi.encodePacked("\x19\x01", usdc.DOMAIN_SEPARATOR(), structHash));
    }

    /// The key of a payment is keccak256(abi.encode(ref, merchant, amount)), as the interface documents (the service
    /// computes it off-chain).
    function testFuzz_paymentKeyIsTheHashOfTheTerms(bytes32 ref, address merchant, uint256 amount) public view {
        bytes32 expected = keccak256(abi.encode(ref, merchant, amount));
        assertTrue(router.paymentKey(ref, merchant, amount) == expected, "key = hash of the terms");
    }

    /// After a first refund, a second one succeeds exactly when it is positive and within what is left; either way
    /// the sum of refunds stays within the amount and the payer gets back exactly what was refunded.
    function testFuzz_refundsStayWithinTheAmount(uint256 amount, uint256 first, uint256 second) public {
        amount = bound(amount, 1, 1e18);
        _pay(REF, amount);
        usdc.mint(MERCHANT, amount); // the merchant can always cover the refunds (it bears the fee)
        first = bound(first, 1, amount);
        second = bound(second, 0, 2 * amount);

        vm.prank(MERCHANT);
        router.refund(REF, amount, keccak256("refund-1"), first);
        uint256 left = amount - first;
        uint256 merchantBefore = usdc.balanceOf(MERCHANT);

        if (second == 0 || second > left) {
            vm.expectRevert(
                second == 0
                    ? abi.encodeWithSelector(IPaymentRouter.PaymentRouterInvalidAmount.selector, 0)
                    : abi.encodeWithSelector(IPaymentRouter.PaymentRouterRefundTooLarge.selector, REF, second, left)
            );
            vm.prank(MERCHANT);
            router.refund(REF, amount, keccak256("refund-2"), second);
            assertEq(router.paymentOf(REF, MERCHANT, amount).refunded, first, "a refused refund changes nothing");
            assertTrue(!router.refundMade(MERCHANT, keccak256("refund-2")), "a refused refund is not recorded");
            assertEq(usdc.balanceOf(PAYER), first, "the payer got the first refund only");
        } else {
            vm.expectEmit();
            emit IPaymentRouter.PaymentRefunded(
                REF, keccak256("refund-2"), MERCHANT, PAYER, amount, second, first + second
            );
            vm.prank(MERCHANT);
            router.refund(REF, amount, keccak256("refund-2"), second);
            assertEq(router.paymentOf(REF, MERCHANT, amount).refunded, first + second, "refunds add up");
            assertEq(usdc.balanceOf(PAYER), first + second, "the payer got both refunds");
            assertEq(merchantBefore - usdc.balanceOf(MERCHANT), second, "the merchant paid the refund");
        }
        assertLe(router.paymentOf(REF, MERCHANT, amount).refunded, amount, "refunds within the amount");
        assertEq(usdc.balanceOf(address(router)), 0, "the router holds no USDC");
    }

    /// Nobody but the payment's merchant refunds it (the forwarder aside: its calls name their signer): anyone else
    /// finds no payment of its own under these terms, and nothing changes.
    function testFuzz_onlyTheMerchantRefunds(address caller, uint256 amount) public {
        vm.assume(caller != MERCHANT && caller != address(forwarder));
        _pay(REF, 100e6);
        bytes32 before = _hash(router.paymentOf(REF, MERCHANT, 100e6));
        amount = bound(amount, 1, 100e6);
        vm.expectRevert(abi.encodeWithSelector(IPaymentRouter.PaymentRouterNotPaid.selector, REF, caller, 100e6));
        vm.prank(caller);
        router.refund(REF, 100e6, keccak256("refund-1"), amount);
        assertTrue(_hash(router.paymentOf(REF, MERCHANT, 100e6)) == before, "the payment is unchanged");
        assertTrue(!router.refundMade(caller, keccak256("refund-1")), "no refund of the caller recorded");
        assertTrue(!router.refundMade(MERCHANT, keccak256("refund-1")), "no refund of the merchant recorded");
    }

    /// The merchant names its payment by the ref and its amount: any other amount finds nothing.
    function testFuzz_refundNeedsThePaymentsAmount(uint256 paymentAmount) public {
        vm.assume(paymentAmount != 100e6);
        _pay(REF, 100e6);
        vm.expectRevert(
            abi.encodeWithSelector(IPaymentRouter.PaymentRouterNotPaid.selector, REF, MERCHANT, paymentAmount)
        );
        vm.prank(MERCHANT);
        router.refund(REF, paymentAmount, keccak256("refund-1"), 1);
        assertEq(router.paymentOf(REF, MERCHANT, 100e6).refunded, 0, "nothing refunded");
    }

    /// Finding 1: paying the ref first under other terms (another merchant, another amount, or both; any amount, even
    /// 1 micro-unit to oneself) is another payment: the real one stays unpaid, then is paid normally, and each keeps
    /// its own record and refuses a second payment of its own terms only.
    function testFuzz_payingTheRefUnderOtherTermsLeavesThePaymentPayable(
        address otherMerchant,
        uint256 otherAmount,
        uint256 amount,
        uint256 whichTerms
    ) public {
        amount = bound(amount, 1, 1e18);
        otherAmount = bound(otherAmount, 1, 1e18);
        whichTerms %= 3;
        if (whichTerms == 0) {
            otherMerchant = MERCHANT; // the same merchant, another amount
            if (otherAmount == amount) otherAmount = amount == 1 ? 2 : amount - 1;
        } else if (whichTerms == 1) {
            otherAmount = amount; // another merchant, the same amount
        }
        vm.assume(otherMerchant != MERCHANT || whichTerms == 0);
        vm.assume(otherMerchant != address(0) && otherMerchant != address(router) && otherMerchant != TREASURY);
        vm.assume(otherMerchant != PAYER && otherMerchant != SQUATTER);

        usdc.mint(SQUATTER, otherAmount);
        vm.prank(SQUATTER);
        router.pay(REF, otherMerchant, otherAmount);
        IPaymentRouter.Payment memory real = router.paymentOf(REF, MERCHANT, amount);
        assertEq(real.payer, address(0), "the real payment is still unpaid");
        assertEq(real.amount, 0, "nothing recorded for the real payment");
        bytes32 squat = _hash(router.paymentOf(REF, otherMerchant, otherAmount));
        uint256 merchantBefore = usdc.balanceOf(MERCHANT);

        uint256 fee = amount * 100 / 10_000;
        usdc.mint(PAYER, amount);
        vm.expectEmit();
        emit IPaymentRouter.PaymentPaid(REF, PAYER, MERCHANT, amount, fee);
        vm.prank(PAYER);
        router.pay(REF, MERCHANT, amount);
        real = router.paymentOf(REF, MERCHANT, amount);
        assertEq(real.payer, PAYER, "the real payer recorded");
        assertEq(real.merchant, MERCHANT, "the real merchant recorded");
        assertEq(real.amount, amount, "the real amount recorded");
        assertEq(real.fee, fee, "the real fee recorded");
        assertEq(usdc.balanceOf(MERCHANT) - merchantBefore, amount - fee, "the merchant received the real payment");
        assertTrue(_hash(router.paymentOf(REF, otherMerchant, otherAmount)) == squat, "the other payment is unchanged");

        vm.expectRevert(
            abi.encodeWithSelector(IPaymentRouter.PaymentRouterAlreadyPaid.selector, REF, MERCHANT, amount)
        );
        vm.prank(PAYER);
        router.pay(REF, MERCHANT, amount);
        usdc.mint(SQUATTER, otherAmount);
        vm.expectRevert(
            abi.encodeWithSelector(IPaymentRouter.PaymentRouterAlreadyPaid.selector, REF, otherMerchant, otherAmount)
        );
        vm.prank(SQUATTER);
        router.pay(REF, otherMerchant, otherAmount);
    }

    /// Finding 2: another merchant's refunds, whatever their refund refs, never use up this merchant's: both make a
    /// refund of their own payment (the same ref, even) with the same refund ref, each once, and each payment's
    /// refunds stay its own.
    function testFuzz_anotherMerchantCannotUseUpARefundRef(address other, bytes32 refundRef, uint256 otherAmount)
        public
    {
        vm.assume(uint160(other) > 0xffff && other != MERCHANT && other != PAYER && other != TREASURY);
        vm.assume(other != address(router) && other != address(forwarder) && other != address(usdc));
        vm.assume(other != address(vm));
        vm.assume(other != address(this) && refundRef != bytes32(0));
        otherAmount = bound(otherAmount, 1, 1e18);
        _pay(REF, 100e6);
        usdc.mint(PAYER, otherAmount);
        vm.prank(PAYER);
        router.pay(REF, other, otherAmount); // the other merchant's payment of the same ref
        vm.prank(other);
        usdc.approve(address(router), type(uint256).max);

        // The other merchant refunds first, with the merchant's refund ref: only its own payment and ref change.
        vm.prank(other);
        router.refund(REF, otherAmount, refundRef, 1);
        assertTrue(router.refundMade(other, refundRef), "the other merchant's refund made");
        assertTrue(!router.refundMade(MERCHANT, refundRef), "the merchant's refund ref is still free");
        assertEq(router.paymentOf(REF, other, otherAmount).refunded, 1, "the other payment refunded");
        assertEq(router.paymentOf(REF, MERCHANT, 100e6).refunded, 0, "the merchant's payment untouched");

        // The merchant still uses it, on its own payment.
        vm.expectEmit();
        emit IPaymentRouter.PaymentRefunded(REF, refundRef, MERCHANT, PAYER, 100e6, 5e6, 5e6);
        vm.prank(MERCHANT);
        router.refund(REF, 100e6, refundRef, 5e6);
        assertTrue(router.refundMade(MERCHANT, refundRef), "the merchant's refund made");
        assertEq(router.paymentOf(REF, MERCHANT, 100e6).refunded, 5e6, "the merchant's payment refunded");
        assertEq(router.paymentOf(REF, other, otherAmount).refunded, 1, "the other payment unchanged");

        // Each merchant's refund ref is used once, by that merchant.
        vm.expectRevert(abi.encodeWithSelector(IPaymentRouter.PaymentRouterRefundExists.selector, MERCHANT, refundRef));
        vm.prank(MERCHANT);
        router.refund(REF, 100e6, refundRef, 1);
        if (otherAmount > 1) {
            vm.expectRevert(
                abi.encodeWithSelector(IPaymentRouter.PaymentRouterRefundExists.selector, other, refundRef)
            );
            vm.prank(other);
            router.refund(REF, otherAmount, refundRef, 1);
        }
        assertEq(usdc.balanceOf(address(router)), 0, "the router holds no USDC");
    }

    /// Finding 3: the router is never a merchant (pay) or the treasury (constructor, setFee).
    function test_theRouterIsNeverTheMerchantOrTheTreasury() public {
        usdc.mint(PAYER, 100e6);
        vm.expectRevert(IPaymentRouter.PaymentRouterSelfAddress.selector);
        vm.prank(PAYER);
        router.pay(REF, address(router), 100e6);
        assertEq(router.paymentOf(REF, address(router), 100e6).amount, 0, "nothing recorded");
        assertEq(usdc.balanceOf(PAYER), 100e6, "nothing moved");

        vm.expectRevert(IPaymentRouter.PaymentRouterSelfAddress.selector);
        router.setFee(200, address(router));
        assertEq(router.treasury(), TREASURY, "the treasury is unchanged");
        assertEq(router.feeBps(), 100, "the fee is unchanged");

        PaymentRouterDeployer deployer = new PaymentRouterDeployer();
        address next = deployer.firstAddress();
        vm.expectRevert(IPaymentRouter.PaymentRouterSelfAddress.selector);
        deployer.deploy(usdc, book, address(this), next, address(forwarder));
        // The same deployment with another treasury lands at that address: the refused treasury was the router.
        PaymentRouter deployed = deployer.deploy(usdc, book, address(this), TREASURY, address(forwarder));
        assertEq(address(deployed), next, "the router's address");
    }

    /// Amounts that do not fit 128 bits are refused before any transfer.
    function testFuzz_rejectsAmountsAbove128Bits(uint256 amount) public {
        amount = bound(amount, uint256(type(uint128).max) + 1, type(uint256).max);
        vm.expectRevert(abi.encodeWithSelector(IPaymentRouter.PaymentRouterInvalidAmount.selector, amount));
        vm.prank(PAYER);
        router.pay(REF, MERCHANT, amount);
    }

    /// The admin sets any fee up to MAX_FEE_BPS and none above.
    function testFuzz_setFeeWithinTheBound(uint256 bps) public {
        if (bps > router.MAX_FEE_BPS()) {
            vm.expectRevert(abi.encodeWithSelector(IPaymentRouter.PaymentRouterInvalidFee.selector, bps));
            router.setFee(bps, TREASURY);
            assertEq(router.feeBps(), 100, "the fee is unchanged");
        } else {
            router.setFee(bps, MERCHANT);
            assertEq(router.feeBps(), bps, "the fee is set");
            assertEq(router.treasury(), MERCHANT, "the treasury is set");
        }
    }

    /* PAYMENTS ON CREDIT */

    /// Any 1 to 12 installments within the loan book's limits, at any fee up to MAX_FEE_BPS and any insurance share up
    /// to the loan book's 20 % (D-127): the vault lends the principals and pays out exactly the amount less the fee,
    /// which the merchant receives; each principal above its net amount stays in the insurance reserve; the payer
    /// pays nothing now and owes each loan on its terms, and the router keeps nothing.
    function testFuzz_payWithLoansSplitsTheAmountExactly(
        uint256 count,
        uint256 amount,
        uint256 interestBps,
        uint256 feeBps,
        uint256 insuranceBps,
        uint256 durationDays
    ) public {
        count = bound(count, 1, 12);
        // At least 20 micro-units a loan (below, 5 % of interest rounded up is above the loan book's 20 %), and at
        // most 400 USDC (its principal within the loan book's 500 at any insurance share).
        amount = bound(amount, count * 20, count * 400e6);
        feeBps = bound(feeBps, 0, 1_000);
        // An insurance share at least the fee's keeps each principal at least its price.
        IPaymentRouter.Installment[] memory list = _installments(
            amount,
            count,
            bound(interestBps, 500, 1_500),
            feeBps,
            bound(insuranceBps, feeBps, 2_000),
            uint32(bound(durationDays, 7, 90))
        );
        uint256 fee;
        uint256 principals;
        for (uint256 i; i < count; ++i) {
            fee += list[i].fee;
            principals += list[i].principal;
        }

        router.payWithLoans(REF, MERCHANT, PAYER, list);

        assertEq(POOL - usdc.balanceOf(address(vault)), amount - fee, "the vault paid out the amount less the fee");
        assertEq(vault.totalBorrowed(), principals, "the principals are out on loans");
        assertEq(vault.insuranceReserve(), principals - (amount - fee), "the principals above the net are the reserve's");
        assertEq(usdc.balanceOf(MERCHANT), amount - fee, "the merchant received the amount less the fee");
        assertEq(usdc.balanceOf(TREASURY), 0, "the treasury received nothing of a payment on credit");
        assertLe(fee, amount / 10, "at most 10 %");
        assertEq(usdc.balanceOf(PAYER), 0, "the payer paid nothing now");
        assertEq(usdc.balanceOf(address(router)), 0, "the router holds no USDC");

        IPaymentRouter.Payment memory p = router.paymentOf(REF, MERCHANT, amount);
        assertEq(p.payer, PAYER, "payer recorded");
        assertEq(p.merchant, MERCHANT, "merchant recorded");
        assertEq(p.amount, amount, "amount recorded");
        assertEq(p.fee, fee, "fee recorded");
        assertTrue(
            p.method == (count == 1 ? IPaymentRouter.PaymentMethod.Credit : IPaymentRouter.PaymentMethod.Split), "method"
        );
        _checkLoans(router.loansOf(REF, MERCHANT, amount), list);
    }

    /// A refund of a payment on credit, at any time, after any repayment by the payer and with any loan defaulted
    /// (D-89): the loans' principals fall by exactly the refund, in proportion to them; the refund splits exactly
    /// between the pool and the payer; the pool takes back at most what it had out (or wrote off); the payer gets back
    /// only what they had paid above the smaller loans; the router keeps no USDC and no allowance.
    function testFuzz_creditRefundSettlesTheLoans(
        uint256 count,
        uint256 amount,
        uint256 repaidSeed,
        uint256[2] memory elapsed,
        uint256 defaultSeed,
        uint256 refundAmount
    ) public {
        count = bound(count, 1, 12);
        amount = bound(amount, count * 20, count * 450e6);
        uint256[] memory ids = _creditPaymentWithHistory(count, amount, repaidSeed, elapsed, defaultSeed);

        refundAmount = bound(refundAmount, 1, amount);
        usdc.mint(MERCHANT, refundAmount); // beyond the net amount it received, whatever the fee
        LoanSums memory before = _sums(ids);
        assertGe(before.principals, amount, "the principals add up to at least what is left to refund (D-127)");
        uint256 vaultBefore = usdc.balanceOf(address(vault));
        uint256 merchantBefore = usdc.balanceOf(MERCHANT);

        vm.prank(MERCHANT);
        router.refund(REF, amount, keccak256("refund-1"), refundAmount);

        LoanSums memory sums = _sums(ids);
        assertEq(before.principals - sums.principals, refundAmount, "the loans shrink by exactly the refund");
        uint256 payerGot = usdc.balanceOf(PAYER);
        assertEq(merchantBefore - usdc.balanceOf(MERCHANT), refundAmount, "the merchant paid the refund");
        assertEq(before.paid - sums.paid, payerGot, "the payer got back exactly what the loans no longer count as paid");
        // The refund, and the interest the vault paid back, went to the vault and the payer and nowhere else.
        assertEq(usdc.balanceOf(address(vault)) + payerGot, vaultBefore + refundAmount, "the refund splits between pool and payer");
        // The pool's part is what its claim on the loans fell by: never more than the refund.
        assertLe(before.outstanding - sums.outstanding, refundAmount, "the pool's part is within the refund");
        assertEq(vault.totalBorrowed(), sums.openOutstanding, "the vault's principal out is the open loans'");
        assertEq(sums.overpaid, 0, "no loan paid above itself");
        assertEq(router.paymentOf(REF, MERCHANT, amount).refunded, refundAmount, "refund recorded");
        assertEq(usdc.balanceOf(address(router)), 0, "the router holds no USDC");
        assertEq(usdc.allowance(address(router), address(book)), 0, "the router leaves no allowance");
        // Nothing reaches a defaulter while the pool still carries its default (D-124, D-127).
        if (payerGot > 0) {
            for (uint256 i; i < ids.length; ++i) {
                ILoanBook.Loan memory loan = book.getLoan(ids[i]);
                if (loan.status == ILoanBook.LoanStatus.Defaulted) {
                    assertEq(loan.principal, loan.principalRepaid, "no loss left while the payer is paid");
                }
            }
        }
    }

    /// The red team's case (D-127): a split of two 50 USDC parts, each a 54.72 loan; the first repaid, the second
    /// defaulted; the merchant refunds the 100 in full. Shared by principals, half went to the payer as cash (52.5)
    /// while 4.72 stayed written off on the defaulted loan. The defaulted loan's loss is made good first.
    function test_aFullRefundMakesTheDefaultGoodBeforeThePayerGetsAnything() public {
        IPaymentRouter.Installment[] memory list = _installments(100e6, 2, 500, 150, 1_000, 7);
        list[1].durationDays = 14;
        router.payWithLoans(REF, MERCHANT, PAYER, list);
        uint256[] memory ids = router.loansOf(REF, MERCHANT, 100e6);
        vm.warp(block.timestamp + 7 days);
        uint256 owed = book.payoffAmount(ids[0]);
        usdc.mint(PAYER, owed);
        vm.startPrank(PAYER);
        usdc.approve(address(book), owed);
        book.repay(ids[0], owed);
        vm.stopPrank();
        ILoanBook.Loan memory second = book.getLoan(ids[1]);
        vm.warp(uint256(second.dueDate) + uint256(second.gracePeriodDays) * 1 days + 1);
        book.markOverdue(ids[1]);
        book.markDefaulted(ids[1]);
        uint256 written = book.getLoan(ids[1]).principal;
        assertEq(written, 54_722_222, "the defaulted loan's principal, all written off");

        usdc.mint(MERCHANT, 100e6);
        vm.prank(MERCHANT);
        router.refund(REF, 100e6, keccak256("refund"), 100e6);

        ILoanBook.Loan memory after_ = book.getLoan(ids[1]);
        assertEq(after_.principal, after_.principalRepaid, "the default made good first: no loss left");
        // The rest (45.277778) went to the repaid loan: that much of the principal the payer had paid, and its interest
        // pro rata, come back to it.
        uint256 rest = 100e6 - written;
        uint256 interestBack = Math.mulDiv(list[0].interest, rest, list[0].principal);
        assertEq(usdc.balanceOf(PAYER), rest + interestBack, "the payer gets only the rest");
        assertEq(usdc.balanceOf(address(router)), 0, "the router holds no USDC");
    }

    struct LoanSums {
        uint256 principals;
        uint256 paid;
        uint256 outstanding;
        uint256 openOutstanding;
        uint256 overpaid;
    }

    /// @dev The loans' principals, what was paid on them, the principal out on them (all, and the open ones'), and
    /// how many are paid above principal and interest.
    function _sums(uint256[] memory ids) internal view returns (LoanSums memory sums) {
        for (uint256 i; i < ids.length; ++i) {
            ILoanBook.Loan memory loan = book.getLoan(ids[i]);
            uint256 paid = uint256(loan.principalRepaid) + loan.interestRepaid;
            sums.principals += loan.principal;
            sums.paid += paid;
            sums.outstanding += loan.principal - loan.principalRepaid;
            if (loan.status == ILoanBook.LoanStatus.Active || loan.status == ILoanBook.LoanStatus.Overdue) {
                sums.openOutstanding += loan.principal - loan.principalRepaid;
            }
            if (paid > uint256(loan.principal) + loan.interest) ++sums.overpaid;
        }
    }

    /// @dev PAYER buys REF of `amount` from MERCHANT on credit in `count` installments (5 % interest, 1.5 % fee, 30
    /// days); up to 20 days later it repays part or all of one loan itself; up to 40 days after that, one loan
    /// defaults if it can and is open. Returns the payment's loans.
    function _creditPaymentWithHistory(
        uint256 count,
        uint256 amount,
        uint256 repaidSeed,
        uint256[2] memory elapsed,
        uint256 defaultSeed
    ) internal returns (uint256[] memory ids) {
        router.payWithLoans(REF, MERCHANT, PAYER, _installments(amount, count, 500, 150, 1_000, 30));
        ids = router.loansOf(REF, MERCHANT, amount);

        vm.warp(block.timestamp + bound(elapsed[0], 0, 20 days));
        uint256 which = ids[repaidSeed % count];
        uint256 part = bound(repaidSeed >> 8, 0, book.payoffAmount(which));
        if (part > 0) {
            usdc.mint(PAYER, part);
            vm.startPrank(PAYER);
            usdc.approve(address(book), part);
            book.repay(which, part);
            vm.stopPrank();
        }
        vm.warp(block.timestamp + bound(elapsed[1], 0, 40 days));
        uint256 defaulted = ids[defaultSeed % count];
        if (block.timestamp > book.getLoan(defaulted).dueDate + 7 days && book.payoffAmount(defaulted) > 0) {
            if (book.getLoan(defaulted).status == ILoanBook.LoanStatus.Active) book.markOverdue(defaulted);
            book.markDefaulted(defaulted);
        }
    }

    /// @dev `count` installments of `amount` with equal prices (the first takes the remainder), each with a fee of
    /// `feeBps` of its price, a principal that leaves `insuranceBps` (at least `feeBps`) of it as the insurance fee
    /// (the service's gross-up, D-127: the net amount over 1 - insuranceBps, rounded down) and `interestBps` of it as
    /// interest (rounded up) over `durationDays` days.
    function _installments(
        uint256 amount,
        uint256 count,
        uint256 interestBps,
        uint256 feeBps,
        uint256 insuranceBps,
        uint32 durationDays
    ) internal pure returns (IPaymentRouter.Installment[] memory list) {
        list = new IPaymentRouter.Installment[](count);
        for (uint256 i; i < count; ++i) {
            uint256 price = amount / count + (i == 0 ? amount % count : 0);
            uint256 fee = price * feeBps / 10_000;
            uint256 principal = (price - fee) * 10_000 / (10_000 - insuranceBps);
            list[i] = IPaymentRouter.Installment(
                keccak256(abi.encode("loan", i)),
                price,
                principal,
                Math.mulDiv(principal, interestBps, 10_000, Math.Rounding.Ceil),
                fee,
                durationDays
            );
        }
    }

    /// @dev Each of `ids` is a loan the payer owes on its installment's terms, its fee the loan's insurance fee.
    function _checkLoans(uint256[] memory ids, IPaymentRouter.Installment[] memory list) internal view {
        assertEq(ids.length, list.length, "one loan per installment");
        for (uint256 i; i < ids.length; ++i) {
            ILoanBook.Loan memory loan = book.getLoan(ids[i]);
            assertEq(book.loanIdOf(list[i].loanRef), ids[i], "the installment's loan ref");
            assertEq(loan.borrower, PAYER, "the payer owes the loan");
            assertEq(loan.principal, list[i].principal, "principal");
            assertEq(loan.interest, list[i].interest, "interest");
            assertEq(loan.durationDays, list[i].durationDays, "term");
            assertEq(
                loan.insuranceFee,
                list[i].principal - (list[i].price - list[i].fee),
                "the principal above the net amount is the insurance fee (D-101, D-127)"
            );
            assertTrue(loan.status == ILoanBook.LoanStatus.Active, "active");
        }
    }

    function _paidOn(uint256 loanId) internal view returns (uint256) {
        ILoanBook.Loan memory loan = book.getLoan(loanId);
        return uint256(loan.principalRepaid) + loan.interestRepaid;
    }
}

/// @notice Random payments, refunds and fee changes by four actors (each may pay, be paid and refund) over small pools
/// of refs and refund refs (the zero ref among them). Each ref has a real payment (a fixed merchant and amount); a
/// payment pays it, or pays the same ref under other terms (another merchant, another amount from a small pool or any
/// amount, or the router itself as the merchant), so that repeated terms, squatted refs, reused refund refs of the
/// same and of other merchants, other merchants' refund attempts, refunds above what is left and unfunded payers all
/// happen. Every call is checked against an independent model keyed by the terms: a call that succeeds where the
/// model says it must fail, or the reverse, is counted in `ghostWrongOutcomes`; a call that changes the record of a
/// payment (a real one, or any paid so far) other than the one its own terms name (a payment of those terms, or a
/// refund by that payment's merchant), or another merchant's refund ref, is counted in `ghostForeignChanges`.
///
/// Payments on credit: the handler is the router's operator and pays refs on credit for a payer (the router now and
/// then), mostly to the ref's real merchant of one of the ref's credit amounts, sometimes under a paid payment's
/// terms (by either method), to another merchant or of any amount, in 0 to 13 installments whose fees, interest,
/// terms and loan refs are now and then out of bounds or reused; the pool's liquidity varies with deposits,
/// withdrawals, loans and repayments, so shortfalls happen. The model predicts each call's exact error (the router's,
/// then the loan book's and the vault's, installment by installment): a wrong one counts in `ghostWrongOutcomes`.
/// Payers repay their loans in part or whole, time passes and loans default, so that refunds meet open, partly
/// repaid, closed and defaulted loans; each refund of a payment on credit must settle each loan exactly as the model
/// plans it (shares in proportion to the principals, the pool's outstanding principal first, interest pro rata, the
/// rest back to the payer: D-89), else it counts in `ghostWrongApplications`.
/// The handler keeps its own clock (`currentTime`), as the lending handler does.
contract PaymentHandler is TestBase {
    MockUSDC internal immutable usdc;
    PaymentRouter internal immutable router;
    LoanBook internal immutable book;
    StakingVault internal immutable vault;

    uint256 internal constant REFS = 12; // ref 0 is bytes32(0)
    uint256 internal constant AMOUNTS = 3; // per ref; the first is its real payment's
    uint256 internal constant REFUND_REFS = 24; // refund ref 0 is bytes32(0)
    uint256 internal constant MAX_AMOUNT = 1_000_000e6;
    // The loan book's default limits, which the handler never changes.
    uint256 internal constant MAX_PRINCIPAL = 500e6;
    uint256 internal constant MAX_CREDIT_AMOUNT = 12 * MAX_PRINCIPAL;
    address internal constant DEPOSITOR = address(0xD0);

    address[4] internal _actors = [address(0xA1), address(0xA2), address(0xA3), address(0xA4)];
    address[2] internal _treasuries = [address(0x7E1), address(0x7E2)];

    struct Terms {
        bytes32 ref;
        address merchant;
        uint256 amount;
    }

    struct Model {
        address payer;
        address merchant;
        uint256 amount;
        uint256 fee;
        uint256 refunded;
        uint256 timesPaid;
        IPaymentRouter.PaymentMethod method;
    }

    /// @dev A refund of a payment on credit as the model plans it (D-89): each loan's share (in proportion to the
    /// principals), what of it goes to the pool and back to the payer, the interest the vault pays back, whether it
    /// closes the loan; each loan's principal and payments before it.
    struct Application {
        uint256[] loanIds;
        uint256[] shares;
        uint256[] toPool;
        uint256[] returned;
        uint256[] interestBack;
        bool[] closes;
        bool[] wasClosed;
        uint256[] principalBefore;
        uint256[] repaidBefore;
        uint256 toLoans;
        uint256 toPayer;
        uint256 interestBackTotal;
        bool feasible; // the vault's idle USDC pays the interest back, loan by loan
    }

    /// @dev A loan the router funded, as the model expects the loan book to hold it.
    struct LoanModel {
        address borrower;
        uint256 principal;
        uint256 interest;
        uint256 durationDays;
        bytes32 ref;
        uint256 insuranceFee;
    }

    mapping(bytes32 key => Model) internal _model;
    mapping(bytes32 key => uint256[]) internal _loanIdsOf;
    LoanModel[] internal _loans; // loan id k is _loans[k - 1]
    mapping(bytes32 loanRef => bool) public loanRefUsed;
    uint256 internal _nextLoanRef;
    uint256 public currentTime;
    bytes32[] internal _paidKeys; // in the order of their first payment
    mapping(bytes32 key => Terms) internal _termsOf;
    mapping(address merchant => mapping(bytes32 refundRef => bool)) public refundUsed;
    mapping(address holder => uint256) public expectedBalance;

    uint256 public ghostMinted;
    uint256 public ghostInsuranceFees; // the loans' insurance fees: the insurance reserve's only income
    uint256 public ghostWrongOutcomes;
    uint256 public ghostForeignChanges;
    uint256 public ghostWrongApplications;
    // Coverage, to see that the campaign reached the interesting paths.
    uint256 public pays;
    uint256 public otherTermsPays; // payments of a ref under other terms than its real payment's
    uint256 public refusedPays;
    uint256 public selfAddressRefusals; // the router as the merchant or the treasury, refused
    uint256 public refunds;
    uint256 public sharedRefundRefs; // refunds with a refund ref another merchant used already
    uint256 public refusedRefunds;
    uint256 public crossRefundAttempts; // refunds of another merchant's payment's terms
    uint256 public crossRefundRefusals;
    uint256 public creditPays;
    uint256 public splitPays;
    uint256 public refusedCreditPays;
    uint256 public liquidityRefusals; // payments on credit the vault refused for want of idle USDC
    uint256 public creditRefunds;
    uint256 public refundsReachingThePayer; // refunds on credit with something left for the payer
    uint256 public loansClosedByRefunds;
    uint256 public refundsMeetingClosedLoans; // refunds on credit that met a repaid or defaulted loan
    uint256 public payerRepayments;
    uint256 public defaults;

    constructor(MockUSDC usdc_, PaymentRouter router_, LoanBook book_, StakingVault vault_) {
        (usdc, router, book, vault) = (usdc_, router_, book_, vault_);
        currentTime = block.timestamp;
    }

    /// @dev Every action runs at the handler's clock, which only moves forward.
    modifier step() {
        vm.warp(currentTime);
        _;
    }

    /* ACTIONS */

    /// @dev A random actor pays a random ref of the pool, funded or not: half the time under its real payment's terms,
    /// else to a random merchant (the router now and then) of another amount of the ref's pool or of any amount.
    function pay(
        uint256 payerSeed,
        uint256 refSeed,
        uint256 termsSeed,
        uint256 merchantSeed,
        uint256 amountSeed,
        bool fund
    ) external step {
        uint256 i = refSeed % REFS;
        Terms memory t = realTerms(i);
        uint256 mode = termsSeed % 4;
        if (mode == 2) (t.merchant, t.amount) = (_merchant(merchantSeed), amountAt(i, amountSeed % AMOUNTS));
        if (mode == 3) (t.merchant, t.amount) = (_merchant(merchantSeed), bound(amountSeed, 0, MAX_AMOUNT));
        address payer = _actor(payerSeed);
        if (fund) _mint(payer, t.amount);
        _pay(payer, t, keyOf(t.ref, t.merchant, t.amount) != realKey(i));
    }

    /// @dev Refunds a payment: mostly one that was paid (real or not), sometimes a real one whether paid or not;
    /// mostly by its merchant, sometimes by any actor; with a random refund ref of the pool shared by all merchants,
    /// and an amount up to a little above what is left of the caller's own payment of these terms.
    function refund(uint256 callerSeed, uint256 targetSeed, uint256 refundRefSeed, uint256 amount, bool fund)
        external
        step
    {
        Terms memory t;
        if (_paidKeys.length > 0 && targetSeed % 8 != 0) t = _termsOf[_paidKeys[(targetSeed / 8) % _paidKeys.length]];
        else t = realTerms((targetSeed / 8) % REFS);
        address caller = callerSeed % 3 != 0 ? t.merchant : _actor(callerSeed / 3);
        // The only payment the call may touch: the caller's own of these ref and amount.
        Model storage m = _model[keyOf(t.ref, caller, t.amount)];
        uint256 left = m.amount - m.refunded;
        amount = bound(amount, 0, left + 2);
        if (fund) _mint(caller, amount);
        _refund(caller, t, refundRefAt(refundRefSeed % REFUND_REFS), amount);
    }

    /// @dev The admin (this handler) sets a random fee, sometimes above the bound, and one of two treasuries or, now
    /// and then, the router.
    function setFee(uint256 bps, uint256 treasurySeed) external step {
        bps = bound(bps, 0, 1_200);
        address treasury = treasurySeed % 3 == 2 ? address(router) : _treasuries[treasurySeed % 3];
        bool valid = bps <= 1_000 && treasury != address(router);
        try router.setFee(bps, treasury) {
            if (!valid) ++ghostWrongOutcomes;
        } catch {
            if (valid) ++ghostWrongOutcomes;
            if (treasury == address(router)) ++selfAddressRefusals;
        }
    }

    /// @dev The operator pays a ref on credit; see the contract's notes.
    function payWithLoans(
        uint256 payerSeed,
        uint256 refSeed,
        uint256 termsSeed,
        uint256 merchantSeed,
        uint256 amountSeed,
        uint256 shapeSeed
    ) external step {
        uint256 i = refSeed % REFS;
        Terms memory t = Terms(refAt(i), _actors[i % _actors.length], creditAmountAt(i, amountSeed % AMOUNTS));
        uint256 mode = termsSeed % 5;
        if (mode == 1 && _paidKeys.length > 0) t = _termsOf[_paidKeys[(termsSeed / 5) % _paidKeys.length]];
        if (mode == 2) t.merchant = _merchant(merchantSeed);
        if (mode == 3) t.amount = bound(amountSeed, 0, MAX_CREDIT_AMOUNT + 1e6);
        address payer = payerSeed % 9 == 8 ? address(router) : _actor(payerSeed);
        _payWithLoans(payer, t, _installments(t.amount, shapeSeed));
    }

    /// @dev A random actor pays directly the terms of a payment already paid (by either method): always refused.
    function payAPaidKey(uint256 payerSeed, uint256 keySeed) external step {
        if (_paidKeys.length == 0) return;
        Terms memory t = _termsOf[_paidKeys[keySeed % _paidKeys.length]];
        address payer = _actor(payerSeed);
        _mint(payer, t.amount);
        _pay(payer, t, true);
    }

    /// @dev The borrower of a random loan repays part or all of what it owes, from its own USDC.
    function payerRepays(uint256 loanSeed, uint256 amount) external step {
        if (_loans.length == 0) return;
        uint256 loanId = loanSeed % _loans.length + 1;
        uint256 owed = book.remainingBalance(loanId);
        if (owed == 0) return;
        address payer = _loans[loanId - 1].borrower;
        amount = bound(amount, 1, owed);
        _mint(payer, amount);
        vm.startPrank(payer);
        usdc.approve(address(book), amount);
        uint256 paid = book.repay(loanId, amount);
        vm.stopPrank();
        expectedBalance[payer] -= paid;
        expectedBalance[address(vault)] += paid;
        ++payerRepayments;
    }

    function passTime(uint256 secondsForward) external step {
        currentTime += bound(secondsForward, 1 hours, 20 days);
        vm.warp(currentTime);
    }

    /// @dev A keeper defaults a random open loan, moving time past its grace period when needed. No USDC moves: no
    /// loan of the router has an insurance fee, so the reserve is empty and covers nothing.
    function markDefaulted(uint256 loanSeed) external step {
        if (_loans.length == 0) return;
        uint256 loanId = loanSeed % _loans.length + 1;
        ILoanBook.Loan memory loan = book.getLoan(loanId);
        if (loan.status != ILoanBook.LoanStatus.Active && loan.status != ILoanBook.LoanStatus.Overdue) return;
        uint256 defaultableAfter = uint256(loan.dueDate) + 7 days;
        if (currentTime <= defaultableAfter) {
            currentTime = defaultableAfter + 1;
            vm.warp(currentTime);
        }
        if (loan.status == ILoanBook.LoanStatus.Active) book.markOverdue(loanId);
        book.markDefaulted(loanId);
        ++defaults;
    }

    /// @dev The depositor adds liquidity to the pool.
    function deposit(uint256 amount) external step {
        amount = bound(amount, 1e6, 20_000e6);
        _mint(DEPOSITOR, amount);
        vm.startPrank(DEPOSITOR);
        usdc.approve(address(vault), amount);
        vault.deposit(amount, DEPOSITOR);
        vm.stopPrank();
        expectedBalance[DEPOSITOR] -= amount;
        expectedBalance[address(vault)] += amount;
    }

    /// @dev The depositor takes liquidity out, up to what it may withdraw.
    function withdraw(uint256 amount) external step {
        amount = bound(amount, 0, vault.maxWithdraw(DEPOSITOR));
        if (amount == 0) return;
        vm.prank(DEPOSITOR);
        vault.withdraw(amount, DEPOSITOR, DEPOSITOR);
        expectedBalance[DEPOSITOR] += amount;
        expectedBalance[address(vault)] -= amount;
    }

    /* VIEWS FOR THE INVARIANTS */

    function refCount() external pure returns (uint256) {
        return REFS;
    }

    function refAt(uint256 i) public pure returns (bytes32) {
        return i == 0 ? bytes32(0) : keccak256(abi.encode("ref", i));
    }

    /// @dev The `j`th amount of ref `i`'s pool, in [1, MAX_AMOUNT].
    function amountAt(uint256 i, uint256 j) public pure returns (uint256) {
        return uint256(keccak256(abi.encode("amount", i, j))) % MAX_AMOUNT + 1;
    }

    /// @dev The `j`th credit amount of ref `i`'s pool, in [1, MAX_CREDIT_AMOUNT].
    function creditAmountAt(uint256 i, uint256 j) public pure returns (uint256) {
        return uint256(keccak256(abi.encode("credit amount", i, j))) % MAX_CREDIT_AMOUNT + 1;
    }

    /// @dev The real payment of ref `i`: to actor `i % 4`, of the first amount of its pool.
    function realTerms(uint256 i) public view returns (Terms memory) {
        return Terms(refAt(i), _actors[i % _actors.length], amountAt(i, 0));
    }

    function realKey(uint256 i) public view returns (bytes32) {
        Terms memory t = realTerms(i);
        return keyOf(t.ref, t.merchant, t.amount);
    }

    /// @dev The model's own key of a payment's terms (independent of the router's {paymentKey}).
    function keyOf(bytes32 ref, address merchant, uint256 amount) public pure returns (bytes32) {
        return keccak256(abi.encode(ref, merchant, amount));
    }

    function refundRefCount() external pure returns (uint256) {
        return REFUND_REFS;
    }

    function refundRefAt(uint256 i) public pure returns (bytes32) {
        return i == 0 ? bytes32(0) : keccak256(abi.encode("refund", i));
    }

    function paidKeyCount() external view returns (uint256) {
        return _paidKeys.length;
    }

    function paidTermsAt(uint256 k) external view returns (Terms memory) {
        return _termsOf[_paidKeys[k]];
    }

    function modelOf(bytes32 key) external view returns (Model memory) {
        return _model[key];
    }

    function loanIdsOf(bytes32 key) external view returns (uint256[] memory) {
        return _loanIdsOf[key];
    }

    function loanCount() external view returns (uint256) {
        return _loans.length;
    }

    function loanAt(uint256 loanId) external view returns (LoanModel memory) {
        return _loans[loanId - 1];
    }

    function actors() external view returns (address[4] memory) {
        return _actors;
    }

    /// @dev Every address the handler ever pays through the router: actors and treasuries.
    function holders() public view returns (address[] memory list) {
        list = new address[](_actors.length + _treasuries.length);
        for (uint256 i; i < _actors.length; ++i) list[i] = _actors[i];
        for (uint256 i; i < _treasuries.length; ++i) list[_actors.length + i] = _treasuries[i];
    }

    /// @dev Every address that may hold USDC: the holders, the depositor and the vault, and the router and the loan
    /// book (which must hold none).
    function balanceHolders() external view returns (address[] memory list) {
        address[] memory base = holders();
        list = new address[](base.length + 4);
        for (uint256 i; i < base.length; ++i) list[i] = base[i];
        (list[base.length], list[base.length + 1]) = (DEPOSITOR, address(vault));
        (list[base.length + 2], list[base.length + 3]) = (address(router), address(book));
    }

    /* HELPERS */

    function _pay(address payer, Terms memory t, bool otherTerms) internal {
        bytes32 key = keyOf(t.ref, t.merchant, t.amount);
        Model storage m = _model[key];
        uint256 fee = t.amount * router.feeBps() / 10_000;
        address treasury = router.treasury();
        bool valid = t.ref != bytes32(0) && t.merchant != address(router) && t.amount > 0 && m.timesPaid == 0
            && usdc.balanceOf(payer) >= t.amount;
        bytes32[] memory before = _records();

        vm.prank(payer);
        try router.pay(t.ref, t.merchant, t.amount) {
            if (!valid) ++ghostWrongOutcomes;
            if (m.timesPaid == 0) {
                _paidKeys.push(key);
                _termsOf[key] = t;
            }
            ++m.timesPaid;
            (m.payer, m.merchant, m.amount, m.fee) = (payer, t.merchant, t.amount, fee);
            expectedBalance[payer] -= t.amount;
            expectedBalance[t.merchant] += t.amount - fee;
            expectedBalance[treasury] += fee;
            ++pays;
            if (otherTerms) ++otherTermsPays;
        } catch {
            if (valid) ++ghostWrongOutcomes;
            if (t.merchant == address(router)) ++selfAddressRefusals;
            ++refusedPays;
        }
        // Only the payment of these terms may have changed.
        _checkRecords(before, key);
    }

    function _refund(address caller, Terms memory t, bytes32 refundRef, uint256 amount) internal {
        bytes32 key = keyOf(t.ref, caller, t.amount);
        Model storage m = _model[key];
        bool valid = m.timesPaid > 0 && refundRef != bytes32(0) && !refundUsed[caller][refundRef] && amount > 0
            && amount <= m.amount - m.refunded && usdc.balanceOf(caller) >= amount;
        bool cross = caller != t.merchant;
        bool shared = _usedByAnother(caller, refundRef);
        if (cross) ++crossRefundAttempts;
        bytes32[] memory before = _records();
        bool[4] memory madeBefore = _refundMade(refundRef);

        // On credit: how the refund settles each of the payment's loans, from the loans now.
        Application memory plan = _plan(_loanIdsOf[key], amount);
        valid = valid && (plan.loanIds.length == 0 || plan.feasible);

        vm.prank(caller);
        try router.refund(t.ref, t.amount, refundRef, amount) {
            if (!valid) ++ghostWrongOutcomes;
            m.refunded += amount;
            refundUsed[caller][refundRef] = true;
            expectedBalance[caller] -= amount;
            if (plan.loanIds.length == 0) {
                expectedBalance[m.payer] += amount;
            } else {
                expectedBalance[m.payer] += plan.toPayer + plan.interestBackTotal;
                expectedBalance[address(vault)] += plan.toLoans;
                expectedBalance[address(vault)] -= plan.interestBackTotal;
            }
            ++refunds;
            if (shared) ++sharedRefundRefs;
            if (plan.loanIds.length > 0) _checkApplication(plan, amount);
        } catch {
            if (valid) ++ghostWrongOutcomes;
            if (cross) ++crossRefundRefusals;
            ++refusedRefunds;
        }
        // Only the caller's own payment of these terms, and only the caller's refund ref, may have changed.
        _checkRecords(before, key);
        bool[4] memory madeAfter = _refundMade(refundRef);
        for (uint256 a; a < _actors.length; ++a) {
            if (_actors[a] != caller && madeAfter[a] != madeBefore[a]) ++ghostForeignChanges;
        }
    }

    /// @dev `count` installments of `amount` (0 to 13, from `seed`): equal prices, the first taking the remainder,
    /// with interest up to 20.99 % (above 20 % refused by the loan book, below the provision by the router), fees up to
    /// 10.99 % (above 10 % refused by the router), principals of the price and a premium, terms of 7 to 91 days (91 refused),
    /// fresh loan refs or, one time in sixteen, the last one again.
    function _installments(uint256 amount, uint256 seed) internal returns (IPaymentRouter.Installment[] memory list) {
        // Bit fields of the seed: bits 0-7, 8-23, 24-39, 40-55, 56-63, 64-79 and 80-87 (see the test's `_shape`).
        uint256 count = uint8(seed) % 14;
        uint256 interestBps = uint16(seed >> 8) % 2_100;
        uint256 premiumBps = uint16(seed >> 64) % 2_300;
        bool short = uint8(seed >> 80) % 16 == 15;
        uint256 feeBps = uint16(seed >> 24) % 1_100;
        uint32 durationDays = uint32(7 + uint16(seed >> 40) % 85);
        bool reuse = uint8(seed >> 56) % 16 == 0 && _nextLoanRef > 0;
        list = new IPaymentRouter.Installment[](count);
        for (uint256 k; k < count; ++k) {
            uint256 price = amount / count + (k == 0 ? amount % count : 0);
            uint256 fee = price * feeBps / 10_000;
            // The price and a premium of up to 22.99 % of it (an insurance fee above 20 % refused by the loan book),
            // or, one time in sixteen, a micro-unit short of the price (refused by the router).
            uint256 principal = price + price * premiumBps / 10_000;
            if (short && price > 0) principal = price - 1;
            bytes32 loanRef = reuse && k == count - 1 ? _loanRefAt(_nextLoanRef - 1) : _loanRefAt(_nextLoanRef++);
            list[k] = IPaymentRouter.Installment(loanRef, price, principal, principal * interestBps / 10_000, fee, durationDays);
        }
    }

    function _loanRefAt(uint256 n) internal pure returns (bytes32) {
        return keccak256(abi.encode("loan", n));
    }

    function _payWithLoans(address payer, Terms memory t, IPaymentRouter.Installment[] memory list) internal {
        bytes32 key = keyOf(t.ref, t.merchant, t.amount);
        Model storage m = _model[key];
        (bytes4 expected, uint256 fee) = _creditOutcome(payer, t, list, m.timesPaid);
        bytes32[] memory before = _records();

        try router.payWithLoans(t.ref, t.merchant, payer, list) {
            if (expected != bytes4(0)) ++ghostWrongOutcomes;
            if (m.timesPaid == 0) {
                _paidKeys.push(key);
                _termsOf[key] = t;
            }
            ++m.timesPaid;
            (m.payer, m.merchant, m.amount, m.fee) = (payer, t.merchant, t.amount, fee);
            m.method = list.length == 1 ? IPaymentRouter.PaymentMethod.Credit : IPaymentRouter.PaymentMethod.Split;
            uint256 insuranceFees;
            for (uint256 k; k < list.length; ++k) {
                IPaymentRouter.Installment memory inst = list[k];
                uint256 insuranceFee = inst.principal - (inst.price - inst.fee);
                _loans.push(LoanModel(payer, inst.principal, inst.interest, inst.durationDays, inst.loanRef, insuranceFee));
                insuranceFees += insuranceFee;
                _loanIdsOf[key].push(_loans.length);
                loanRefUsed[inst.loanRef] = true;
            }
            // The vault pays out the amount less the fee; each principal above its net amount is the reserve's (D-127).
            expectedBalance[address(vault)] -= t.amount - fee;
            expectedBalance[t.merchant] += t.amount - fee;
            ghostInsuranceFees += insuranceFees;
            if (list.length == 1) ++creditPays;
            else ++splitPays;
        } catch (bytes memory reason) {
            if (expected == bytes4(0) || bytes4(reason) != expected) ++ghostWrongOutcomes;
            if (bytes4(reason) == IStakingVault.StakingVaultInsufficientLiquidity.selector) ++liquidityRefusals;
            if (t.merchant == address(router) || payer == address(router)) ++selfAddressRefusals;
            ++refusedCreditPays;
        }
        _checkRecords(before, key);
    }

    /// @dev The error the router must revert with for this payment on credit (zero: it must succeed), from the model
    /// alone: the router's checks in its order, then for each installment in turn the loan book's and the vault's
    /// (what the vault may lend, its idle USDC within the utilization cap, falls by each principal lent), and the fee.
    function _creditOutcome(address payer, Terms memory t, IPaymentRouter.Installment[] memory list, uint256 timesPaid)
        internal
        view
        returns (bytes4, uint256 fee)
    {
        uint256 count = list.length;
        if (payer == address(router)) return (IPaymentRouter.PaymentRouterSelfAddress.selector, 0);
        if (count == 0 || count > 12) return (IPaymentRouter.PaymentRouterInvalidInstallments.selector, 0);
        for (uint256 k; k < count; ++k) {
            IPaymentRouter.Installment memory inst = list[k];
            if (inst.fee > inst.price * 1_000 / 10_000) return (IPaymentRouter.PaymentRouterInstallmentFeeTooHigh.selector, 0);
            if (inst.principal < inst.price) return (IPaymentRouter.PaymentRouterPrincipalBelowPrice.selector, 0);
            if (inst.interest < _minInterest(payer, inst.principal)) {
                return (IPaymentRouter.PaymentRouterInterestBelowExpectedLoss.selector, 0);
            }
            fee += inst.fee;
        }
        if (t.ref == bytes32(0)) return (IPaymentRouter.PaymentRouterEmptyRef.selector, 0);
        if (t.merchant == address(router)) return (IPaymentRouter.PaymentRouterSelfAddress.selector, 0);
        if (t.amount == 0) return (IPaymentRouter.PaymentRouterInvalidAmount.selector, 0);
        if (timesPaid > 0) return (IPaymentRouter.PaymentRouterAlreadyPaid.selector, 0);
        uint256 lendable = vault.lendableAssets();
        for (uint256 k; k < count; ++k) {
            bytes4 refused = _loanOutcome(list, k, lendable);
            if (refused != bytes4(0)) return (refused, 0);
            lendable -= list[k].principal;
        }
        return (bytes4(0), fee);
    }

    /// @dev The provision of a loan of `principal` to `payer` as interest (D-127), from the rates and the proof rule
    /// (D-125, D-126) with no reserve factor: 5 % above what `payer` proved, 1 % within it, rounded up.
    function _minInterest(address payer, uint256 principal) internal view returns (uint256) {
        ILoanBook.ExpectedLossRates memory rates = book.expectedLossRates();
        uint256 lossBps = principal > book.provenUpTo(payer) ? rates.unprovenBps : rates.provenBps;
        return Math.mulDiv(principal, lossBps, 10_000, Math.Rounding.Ceil);
    }

    /// @dev The loan book's and the vault's answer to installment `k` with `idle` USDC left in the vault.
    function _loanOutcome(IPaymentRouter.Installment[] memory list, uint256 k, uint256 idle)
        internal
        view
        returns (bytes4)
    {
        IPaymentRouter.Installment memory inst = list[k];
        bool reused = loanRefUsed[inst.loanRef];
        for (uint256 j; j < k; ++j) {
            if (list[j].loanRef == inst.loanRef) reused = true;
        }
        if (reused) return ILoanBook.LoanBookDuplicateRef.selector;
        if (inst.principal == 0 || inst.principal > MAX_PRINCIPAL) return ILoanBook.LoanBookInvalidPrincipal.selector;
        if (inst.durationDays < 7 || inst.durationDays > 90) return ILoanBook.LoanBookInvalidDuration.selector;
        if (inst.interest > inst.principal * 2_000 / 10_000) return ILoanBook.LoanBookInterestTooHigh.selector;
        if (inst.principal - (inst.price - inst.fee) > inst.principal * 2_000 / 10_000) {
            return ILoanBook.LoanBookInsuranceFeeTooHigh.selector;
        }
        if (inst.principal > idle) return IStakingVault.StakingVaultInsufficientLiquidity.selector;
        return bytes4(0);
    }

    /// @dev How a refund of `amount` settles `loanIds` (D-89), modelled independently of the router and the loan book:
    /// a defaulted loan's written-off principal first, then shares in proportion to what is left of the principals
    /// (rounded down, the last taking what is left within its room, a second pass placing the rest); each share takes the pool's outstanding principal first (a defaulted loan's
    /// written-off principal alike) and gives the payer the rest; every loan's interest falls pro rata, and the
    /// interest paid above it comes back from the vault, which must have the idle USDC for it.
    function _plan(uint256[] memory loanIds, uint256 amount) internal view returns (Application memory a) {
        uint256 n = loanIds.length;
        a.loanIds = loanIds;
        a.shares = new uint256[](n);
        a.toPool = new uint256[](n);
        a.returned = new uint256[](n);
        a.interestBack = new uint256[](n);
        a.closes = new bool[](n);
        a.wasClosed = new bool[](n);
        a.principalBefore = new uint256[](n);
        a.repaidBefore = _repaid(loanIds);
        a.feasible = true;
        if (n == 0) return a;
        // A defaulted loan's written-off principal first (D-124, D-127), then the rest pro rata to what is left.
        uint256 left = amount;
        for (uint256 k; k < n; ++k) {
            ILoanBook.Loan memory loan = book.getLoan(loanIds[k]);
            a.principalBefore[k] = loan.principal;
            if (loan.status == ILoanBook.LoanStatus.Defaulted) {
                a.shares[k] = Math.min(left, loan.principal - loan.principalRepaid);
                left -= a.shares[k];
            }
        }
        uint256 total;
        for (uint256 k; k < n; ++k) {
            total += a.principalBefore[k] - a.shares[k];
        }
        uint256 rest = left;
        for (uint256 k; k < n && left > 0; ++k) {
            uint256 room = a.principalBefore[k] - a.shares[k];
            uint256 share = k == n - 1 ? left : rest * room / total;
            share = Math.min(share, Math.min(room, left));
            a.shares[k] += share;
            left -= share;
        }
        for (uint256 k; k < n && left > 0; ++k) {
            uint256 more = Math.min(left, a.principalBefore[k] - a.shares[k]);
            a.shares[k] += more;
            left -= more;
        }
        uint256 idle = vault.idleAssets();
        for (uint256 k; k < n; ++k) {
            ILoanBook.Loan memory loan = book.getLoan(loanIds[k]);
            bool open = loan.status == ILoanBook.LoanStatus.Active || loan.status == ILoanBook.LoanStatus.Overdue;
            a.wasClosed[k] = !open;
            uint256 share = a.shares[k];
            if (share == 0) continue;
            uint256 newPrincipal = loan.principal - share;
            a.toPool[k] = Math.min(share, loan.principal - loan.principalRepaid);
            a.returned[k] = share - a.toPool[k];
            uint256 newInterest = loan.interest - loan.interest * share / loan.principal;
            // A defaulter gets no interest back (D-124).
            bool defaulted = loan.status == ILoanBook.LoanStatus.Defaulted;
            if (!defaulted && loan.interestRepaid > newInterest) a.interestBack[k] = loan.interestRepaid - newInterest;
            uint256 principalRepaid = Math.min(loan.principalRepaid, newPrincipal);
            uint256 interestRepaid = Math.min(loan.interestRepaid, newInterest);
            a.closes[k] = open && newPrincipal - principalRepaid + newInterest - interestRepaid == 0;
            idle += a.toPool[k];
            if (a.interestBack[k] > idle) a.feasible = false;
            else idle -= a.interestBack[k];
            a.toLoans += a.toPool[k];
            a.toPayer += a.returned[k];
            a.interestBackTotal += a.interestBack[k];
        }
    }

    /// @dev What each loan has been paid so far (principal and interest).
    function _repaid(uint256[] memory loanIds) internal view returns (uint256[] memory paid) {
        paid = new uint256[](loanIds.length);
        for (uint256 k; k < loanIds.length; ++k) {
            ILoanBook.Loan memory loan = book.getLoan(loanIds[k]);
            paid[k] = uint256(loan.principalRepaid) + loan.interestRepaid;
        }
    }

    /// @dev Each loan shrank by exactly its planned share, what it was paid fell by exactly what went back to the
    /// payer, and the loans planned to close closed (the others kept their state); keeps the model's loans in step and
    /// counts the paths met.
    function _checkApplication(Application memory a, uint256 amount) internal {
        uint256[] memory repaidAfter = _repaid(a.loanIds);
        bool metClosed;
        for (uint256 k; k < a.loanIds.length; ++k) {
            ILoanBook.Loan memory loan = book.getLoan(a.loanIds[k]);
            if (loan.principal != a.principalBefore[k] - a.shares[k]) ++ghostWrongApplications;
            if (a.repaidBefore[k] - repaidAfter[k] != a.returned[k] + a.interestBack[k]) ++ghostWrongApplications;
            bool closedNow = loan.status == ILoanBook.LoanStatus.Repaid || loan.status == ILoanBook.LoanStatus.Defaulted;
            if (closedNow != (a.wasClosed[k] || a.closes[k])) ++ghostWrongApplications;
            if (a.closes[k]) ++loansClosedByRefunds;
            if (a.wasClosed[k]) metClosed = true;
            LoanModel storage model = _loans[a.loanIds[k] - 1];
            model.principal = loan.principal;
            model.interest = loan.interest;
        }
        ++creditRefunds;
        if (a.toPayer + a.interestBackTotal > 0) ++refundsReachingThePayer;
        if (metClosed) ++refundsMeetingClosedLoans;
        if (amount != a.toLoans + a.toPayer) ++ghostWrongApplications;
    }

    /// @dev The payments watched for foreign changes: the real ones (by ref), then every one paid so far.
    function _watchedAt(uint256 k) internal view returns (Terms memory) {
        return k < REFS ? realTerms(k) : _termsOf[_paidKeys[k - REFS]];
    }

    /// @dev The hash of each watched payment's record as the router has it.
    function _records() internal view returns (bytes32[] memory hashes) {
        hashes = new bytes32[](REFS + _paidKeys.length);
        for (uint256 k; k < hashes.length; ++k) {
            Terms memory t = _watchedAt(k);
            hashes[k] = keccak256(abi.encode(router.paymentOf(t.ref, t.merchant, t.amount)));
        }
    }

    /// @dev Counts each payment watched in `before`, other than `allowedKey`'s, whose record changed since.
    function _checkRecords(bytes32[] memory before, bytes32 allowedKey) internal {
        for (uint256 k; k < before.length; ++k) {
            Terms memory t = _watchedAt(k);
            if (keyOf(t.ref, t.merchant, t.amount) == allowedKey) continue;
            bytes32 record = keccak256(abi.encode(router.paymentOf(t.ref, t.merchant, t.amount)));
            if (record != before[k]) ++ghostForeignChanges;
        }
    }

    function _refundMade(bytes32 refundRef) internal view returns (bool[4] memory made) {
        for (uint256 a; a < _actors.length; ++a) made[a] = router.refundMade(_actors[a], refundRef);
    }

    function _usedByAnother(address merchant, bytes32 refundRef) internal view returns (bool) {
        for (uint256 a; a < _actors.length; ++a) {
            if (_actors[a] != merchant && refundUsed[_actors[a]][refundRef]) return true;
        }
        return false;
    }

    function _actor(uint256 seed) internal view returns (address) {
        return _actors[seed % _actors.length];
    }

    /// @dev An actor, or one time in five the router itself.
    function _merchant(uint256 seed) internal view returns (address) {
        return seed % 5 == 4 ? address(router) : _actors[seed % _actors.length];
    }

    function _mint(address to, uint256 amount) internal {
        usdc.mint(to, amount);
        ghostMinted += amount;
        expectedBalance[to] += amount;
    }
}

/// @notice The router's invariants under the handler's random payments (direct and on credit), refunds, fee changes,
/// repayments, defaults, time and liquidity, with the lending pool deployed and wired as the platform does it.
/// @dev 128 runs of 100 calls per invariant, as the lending invariants.
contract PaymentRouterInvariantsTest is LendingSetup {
    PaymentRouter internal router;
    PaymentHandler internal handler;

    function setUp() public {
        _deploy();
        // The model is the router's: the loan book's limits on unproven borrowers (UnprovenBorrowers.t.sol) are opened,
        // and a day on their budget is full.
        book.setUnprovenLimits(ILoanBook.UnprovenLimits(10_000, type(uint96).max, type(uint96).max));
        vm.warp(block.timestamp + 1 days);
        // The first treasury is the handler's first; the test contract is a temporary admin.
        router = new PaymentRouter(usdc, book, address(this), address(0x7E1), address(forwarder));
        handler = new PaymentHandler(usdc, router, book, vault);
        usdc.grantRole(usdc.FAUCET_ROLE(), address(handler));
        book.grantRole(book.OPERATOR_ROLE(), address(router));
        book.grantRole(book.REFUNDER_ROLE(), address(router));
        router.grantRole(router.OPERATOR_ROLE(), address(handler));
        router.grantRole(router.DEFAULT_ADMIN_ROLE(), address(handler));
        router.renounceRole(router.DEFAULT_ADMIN_ROLE(), address(this));
        address[] memory holders = handler.holders();
        for (uint256 i; i < holders.length; ++i) {
            vm.prank(holders[i]);
            usdc.approve(address(router), type(uint256).max);
        }
        handler.deposit(20_000e6); // the pool's first liquidity
        targetContract(address(handler));
    }

    /// @dev For every paid payment and every real one, the sum of its refunds is within its amount, and is what the
    /// model refunded; every merchant's refund refs are the model's.
    /// forge-config: default.invariant.runs = 128
    /// forge-config: default.invariant.depth = 100
    function invariant_refundsNeverExceedTheAmount() public view {
        uint256 paid = handler.paidKeyCount();
        for (uint256 k; k < paid; ++k) {
            _checkRefunds(handler.paidTermsAt(k));
        }
        uint256 count = handler.refCount();
        for (uint256 i; i < count; ++i) {
            _checkRefunds(handler.realTerms(i));
        }
        address[4] memory actors = handler.actors();
        uint256 refundRefs = handler.refundRefCount();
        for (uint256 i; i < refundRefs; ++i) {
            bytes32 refundRef = handler.refundRefAt(i);
            for (uint256 a; a < actors.length; ++a) {
                assertTrue(
                    router.refundMade(actors[a], refundRef) == handler.refundUsed(actors[a], refundRef),
                    "refundMade = the model's refund refs, merchant by merchant"
                );
            }
        }
    }

    /// @dev The router never holds USDC, nor an allowance of the loan book.
    /// forge-config: default.invariant.runs = 128
    /// forge-config: default.invariant.depth = 100
    function invariant_routerHoldsNoUsdc() public view {
        assertEq(usdc.balanceOf(address(router)), 0, "the router holds no USDC");
        assertEq(usdc.allowance(address(router), address(book)), 0, "the router leaves no allowance");
    }

    /// @dev The router creates and destroys no USDC: the supply is what the handler minted, all of it is with the
    /// actors, the treasuries, the depositor and the vault, and each holds exactly what the model says (the router
    /// and the loan book nothing).
    /// forge-config: default.invariant.runs = 128
    /// forge-config: default.invariant.depth = 100
    function invariant_supplyIsConserved() public view {
        assertEq(usdc.totalSupply(), handler.ghostMinted(), "supply = minted");
        address[] memory holders = handler.balanceHolders();
        uint256 held;
        for (uint256 i; i < holders.length; ++i) {
            uint256 balance = usdc.balanceOf(holders[i]);
            assertEq(balance, handler.expectedBalance(holders[i]), "balance = the model's balance");
            held += balance;
        }
        assertEq(held, usdc.totalSupply(), "all the supply is with the actors, the treasuries and the pool");
    }

    /// @dev Every payment key (ref, merchant, amount) is paid at most once, the zero ref and the router never, and
    /// the stored payment is the first one's; a real payment is stored exactly as the model has it (unpaid included).
    /// forge-config: default.invariant.runs = 128
    /// forge-config: default.invariant.depth = 100
    function invariant_eachPaymentKeyPaidAtMostOnce() public view {
        uint256 paid = handler.paidKeyCount();
        for (uint256 k; k < paid; ++k) {
            PaymentHandler.Terms memory t = handler.paidTermsAt(k);
            assertTrue(t.ref != bytes32(0), "the zero ref is never paid");
            assertTrue(t.merchant != address(router), "the router is never paid");
            _checkFirstPayment(t);
        }
        uint256 count = handler.refCount();
        for (uint256 i; i < count; ++i) {
            _checkFirstPayment(handler.realTerms(i));
        }
    }

    /// @dev Every call succeeded exactly when the model says it must (the handler's checks; see PaymentHandler).
    /// forge-config: default.invariant.runs = 128
    /// forge-config: default.invariant.depth = 100
    function invariant_everyOutcomeIsTheModels() public view {
        assertEq(handler.ghostWrongOutcomes(), 0, "a call succeeded or failed against the model");
    }

    /// @dev A payment's record (every real one, every one paid) changes only through its own terms (a payment of
    /// them, a refund by its merchant), never by a payment of its ref under other terms or another merchant's refund;
    /// a merchant's refund refs change only through its own refunds.
    /// forge-config: default.invariant.runs = 128
    /// forge-config: default.invariant.depth = 100
    function invariant_paymentsChangeOnlyThroughTheirOwnTerms() public view {
        assertEq(handler.ghostForeignChanges(), 0, "a call changed a payment or a refund ref it does not own");
    }

    /// @dev Every refund of a payment on credit settled each of its loans exactly as the model planned (D-89), closing
    /// those it paid off and skipping closed ones, and sent the payer exactly the rest (the balances: above).
    /// forge-config: default.invariant.runs = 128
    /// forge-config: default.invariant.depth = 100
    function invariant_refundsSettleTheLoansAsModelled() public view {
        assertEq(handler.ghostWrongApplications(), 0, "a refund settled a loan otherwise than the model");
    }

    /// @dev The loan book holds exactly the router's loans as the model funded them (the payer as the borrower, the
    /// installments' terms, their fees as insurance fees), never repaid beyond their terms; and the vault's accounting
    /// holds: entry assets = idle + borrowed + accrued interest - locked profit, totalAssets the same less unrealized
    /// losses (at least zero), borrowed = the open
    /// loans' principal, a reserve of at most the fees paid into it, every share covered, and the loan book holds no
    /// USDC.
    /// forge-config: default.invariant.runs = 128
    /// forge-config: default.invariant.depth = 100
    function invariant_loansAndTheVaultAgree() public view {
        uint256 count = book.loanCount();
        assertEq(count, handler.loanCount(), "the loan book's loans are the model's");
        uint256 outstanding;
        for (uint256 id = 1; id <= count; ++id) {
            ILoanBook.Loan memory loan = book.getLoan(id);
            PaymentHandler.LoanModel memory expected = handler.loanAt(id);
            assertEq(loan.borrower, expected.borrower, "the payer is the borrower");
            assertEq(loan.principal, expected.principal, "principal");
            assertEq(loan.interest, expected.interest, "interest");
            assertEq(loan.durationDays, expected.durationDays, "term");
            assertEq(loan.insuranceFee, expected.insuranceFee, "the installment's fee is the insurance fee (D-101)");
            assertTrue(loan.ref == expected.ref, "loan ref");
            assertEq(book.loanIdOf(expected.ref), id, "loan id of the ref");
            assertLe(loan.principalRepaid, loan.principal, "never more principal back than lent");
            assertLe(loan.interestRepaid, loan.interest, "never more interest than agreed");
            if (loan.status == ILoanBook.LoanStatus.Active || loan.status == ILoanBook.LoanStatus.Overdue) {
                outstanding += loan.principal - loan.principalRepaid;
            }
        }
        uint256 held = usdc.balanceOf(address(vault));
        uint256 reserve = vault.insuranceReserve();
        assertLe(reserve, handler.ghostInsuranceFees(), "the reserve holds at most the fees (no reserve factor)");
        assertEq(vault.totalBorrowed(), outstanding, "totalBorrowed = open loans' principal");
        // The entry price's assets, and the exit price's: the same less the unrealized losses, floored at zero (a
        // past-due loan counts its interest as lost in full until it is marked or repaid, D-123, which can exceed them).
        int256 entry = int256(held - reserve + vault.totalBorrowed()) + vault.accruedInterest() - int256(vault.lockedProfit());
        assertEq(int256(vault.entryAssets()), entry, "entry assets = idle + borrowed + accrued interest - locked profit");
        uint256 unrealized = vault.unrealizedLosses();
        assertEq(
            vault.totalAssets(),
            entry > int256(unrealized) ? uint256(entry) - unrealized : 0,
            "totalAssets = entry assets - unrealized losses, at least zero"
        );
        assertLe(vault.convertToAssets(vault.totalSupply()), vault.totalAssets(), "shares covered by assets");
        assertEq(usdc.balanceOf(address(book)), 0, "the loan book holds no USDC");
    }

    /// The handler's model and detectors on a scripted run of the three findings: the ref squatted by another
    /// merchant and by another amount, the router refused as merchant and treasury, another merchant's refund of the
    /// real payment refused, and one refund ref used by two merchants.
    function test_handlerScriptedFindings() public {
        // Ref 1's real payment: to actor 1 (0xA2) of amountAt(1, 0). Actor 3 (0xA4) is the squatter.
        handler.pay(0, 1, 2, 4, 0, true); // to the router: refused
        handler.setFee(100, 2); // the router as the treasury: refused
        handler.pay(3, 1, 3, 3, 1, true); // the squatter pays ref 1 to itself, 1 micro-unit
        handler.pay(0, 1, 0, 0, 0, true); // the real payment, by actor 0
        handler.pay(2, 1, 2, 1, 1, true); // ref 1 to the real merchant, another amount of the pool
        handler.pay(2, 1, 1, 0, 0, true); // the real payment again: refused
        handler.refund(9, 8 * 1 + 1, 5, 1, false); // the squatter refunds the real payment's terms: refused
        handler.refund(1, 8 * 0 + 1, 5, 1, false); // the squatter refunds its own payment, refund ref 5
        handler.refund(1, 8 * 1 + 1, 5, 10e6, false); // the real merchant, with the same refund ref 5
        handler.refund(1, 8 * 1 + 1, 5, 10e6, false); // again: refused

        assertEq(handler.pays(), 3, "three payments");
        assertEq(handler.otherTermsPays(), 2, "two of them under other terms than the real payment's");
        assertEq(handler.refusedPays(), 2, "the router and the repeated real payment refused");
        assertEq(handler.selfAddressRefusals(), 2, "the router refused as the merchant and the treasury");
        assertEq(handler.refunds(), 2, "two refunds");
        assertEq(handler.sharedRefundRefs(), 1, "one refund ref used by two merchants");
        assertEq(handler.crossRefundAttempts(), 1, "one refund of another merchant's payment attempted");
        assertEq(handler.crossRefundRefusals(), 1, "and refused");
        assertEq(handler.refusedRefunds(), 2, "the cross refund and the repeated refund ref refused");

        PaymentHandler.Terms memory real = handler.realTerms(1);
        IPaymentRouter.Payment memory p = router.paymentOf(real.ref, real.merchant, real.amount);
        assertEq(p.payer, address(0xA1), "the real payer");
        assertEq(p.refunded, 10e6, "the real merchant's refund only");
        assertEq(router.paymentOf(real.ref, address(0xA4), 1).refunded, 1, "the squatter's own refund");
        assertTrue(router.refundMade(address(0xA4), handler.refundRefAt(5)), "the squatter's refund ref");
        assertTrue(router.refundMade(real.merchant, handler.refundRefAt(5)), "the real merchant's refund ref");

        invariant_refundsNeverExceedTheAmount();
        invariant_routerHoldsNoUsdc();
        invariant_supplyIsConserved();
        invariant_eachPaymentKeyPaidAtMostOnce();
        invariant_everyOutcomeIsTheModels();
        invariant_paymentsChangeOnlyThroughTheirOwnTerms();
        invariant_refundsSettleTheLoansAsModelled();
        invariant_loansAndTheVaultAgree();
    }

    /// The handler's model and detectors on a scripted run of payments on credit: a credit payment and a split one, a
    /// shortfall of liquidity, a partial repayment by the payer, a partial refund (the loan shrinks pro rata), a full
    /// one (closing the loans; what the payer had paid comes back, interest included), a default and a refund of the
    /// defaulted loan (to the pool, which wrote it off), and payments of paid terms by the other method, refused.
    function test_handlerScriptedCredit() public {
        // Ref 2's merchant is actor 2 (0xA3), ref 3's actor 3 (0xA4). Mode 3 keeps the merchant and takes the amount.
        handler.payWithLoans(0, 2, 3, 0, 300e6, _shape(1, 500, 200, 30)); // 0xA1 on credit: loan 1
        handler.payWithLoans(1, 3, 3, 0, 900e6, _shape(3, 500, 150, 60)); // 0xA2 in 3 installments: loans 2-4
        handler.withdraw(18_700e6); // leaves 100 USDC idle
        handler.payWithLoans(2, 4, 3, 0, 200e6, _shape(1, 500, 0, 7)); // refused: the vault lacks liquidity
        handler.deposit(10_000e6);
        handler.passTime(10 days);
        handler.payerRepays(1, 100e6); // 0xA2 repays 100 USDC of loan 2
        handler.refund(1, 1, 1, 50e6, true); // 0xA3 refunds 50 USDC: loan 1 is now 250 at 12.5 interest
        handler.refund(1, 9, 2, 900e6, true); // 0xA4 refunds it all: loans 2-4 closed, 0xA2's 97.5 + 2.5 back
        handler.markDefaulted(0); // loan 1, past its grace period: 250 written off
        handler.refund(1, 1, 3, 100e6, true); // 0xA3 again: all 100 to the pool, a recovery of loan 1
        handler.pay(0, 1, 0, 0, 0, true); // ref 1's real payment, direct
        handler.payAPaidKey(0, 1); // the split payment's terms, directly: refused
        handler.payWithLoans(0, 0, 1 + 5 * 2, 0, 0, _shape(1, 500, 0, 7)); // the direct payment's terms on credit: refused

        assertEq(handler.creditPays(), 1, "one payment on credit");
        assertEq(handler.splitPays(), 1, "one split payment");
        assertEq(handler.refusedCreditPays(), 2, "the shortfall and the paid terms refused");
        assertEq(handler.liquidityRefusals(), 1, "one shortfall");
        assertEq(handler.refusedPays(), 1, "the split payment's terms refused as a direct payment");
        assertEq(handler.payerRepayments(), 1, "one repayment by the payer");
        assertEq(handler.defaults(), 1, "one default");
        assertEq(handler.creditRefunds(), 3, "three refunds on credit");
        assertEq(handler.loansClosedByRefunds(), 3, "the full refund closed the split payment's three loans");
        assertEq(handler.refundsReachingThePayer(), 1, "the full refund gave the payer back what it had paid");
        assertEq(handler.refundsMeetingClosedLoans(), 1, "the refund of the defaulted loan");

        PaymentHandler.Terms memory credit = handler.paidTermsAt(0);
        PaymentHandler.Terms memory split = handler.paidTermsAt(1);
        assertTrue(router.paymentOf(credit.ref, credit.merchant, credit.amount).method == IPaymentRouter.PaymentMethod.Credit, "credit");
        assertTrue(router.paymentOf(split.ref, split.merchant, split.amount).method == IPaymentRouter.PaymentMethod.Split, "split");
        assertEq(router.paymentOf(credit.ref, credit.merchant, credit.amount).refunded, 150e6, "two refunds");
        assertEq(router.paymentOf(split.ref, split.merchant, split.amount).refunded, 900e6, "refunded in full");
        assertTrue(book.getLoan(1).status == ILoanBook.LoanStatus.Defaulted, "loan 1 defaulted");
        // Loan 1 shrank by both refunds; the pool's claim on it (its written-off 250) by the second's 100.
        assertEq(book.getLoan(1).principal, 150e6, "loan 1 is 150 of principal");
        assertEq(book.getLoan(1).principalRepaid, 0, "none of it repaid: 150 still written off");
        for (uint256 id = 2; id <= 4; ++id) {
            assertTrue(book.getLoan(id).status == ILoanBook.LoanStatus.Repaid, "split loans closed");
        }
        assertEq(book.loanCount(), 4, "four loans");

        invariant_refundsNeverExceedTheAmount();
        invariant_routerHoldsNoUsdc();
        invariant_supplyIsConserved();
        invariant_eachPaymentKeyPaidAtMostOnce();
        invariant_everyOutcomeIsTheModels();
        invariant_paymentsChangeOnlyThroughTheirOwnTerms();
        invariant_refundsSettleTheLoansAsModelled();
        invariant_loansAndTheVaultAgree();
    }

    /// @dev The handler's `shapeSeed` for `count` installments with the given interest, fee and term (a fresh ref),
    /// each principal its price (no premium).
    function _shape(uint256 count, uint256 interestBps, uint256 feeBps, uint256 durationDays)
        internal
        pure
        returns (uint256)
    {
        return count | interestBps << 8 | feeBps << 24 | (durationDays - 7) << 40 | 1 << 56;
    }

    function _checkRefunds(PaymentHandler.Terms memory t) internal view {
        IPaymentRouter.Payment memory p = router.paymentOf(t.ref, t.merchant, t.amount);
        assertLe(p.refunded, p.amount, "refunded <= amount");
        PaymentHandler.Model memory m = handler.modelOf(handler.keyOf(t.ref, t.merchant, t.amount));
        assertEq(p.refunded, m.refunded, "refunded = the model's");
    }

    function _checkFirstPayment(PaymentHandler.Terms memory t) internal view {
        bytes32 key = handler.keyOf(t.ref, t.merchant, t.amount);
        PaymentHandler.Model memory m = handler.modelOf(key);
        IPaymentRouter.Payment memory p = router.paymentOf(t.ref, t.merchant, t.amount);
        assertLe(m.timesPaid, 1, "paid at most once");
        assertEq(p.payer, m.payer, "the first payer");
        assertEq(p.merchant, m.merchant, "the first merchant");
        assertEq(p.amount, m.amount, "the first amount");
        assertEq(p.fee, m.fee, "the first fee");
        assertTrue(p.method == m.method, "the first method");
        uint256[] memory loanIds = router.loansOf(t.ref, t.merchant, t.amount);
        uint256[] memory expected = handler.loanIdsOf(key);
        assertEq(loanIds.length, expected.length, "as many loans as installments");
        for (uint256 k; k < loanIds.length; ++k) {
            assertEq(loanIds[k], expected[k], "the payment's loans, in order");
        }
    }
}
