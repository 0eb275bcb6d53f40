// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TestBase} from "../lib/TestBase.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IPaymentRouter} from "../../../contracts/interfaces/IPaymentRouter.sol";
import {TrustMintForwarder} from "../../../contracts/metatx/TrustMintForwarder.sol";
import {MockUSDC} from "../../../contracts/mocks/MockUSDC.sol";
import {PaymentRouter} from "../../../contracts/payments/PaymentRouter.sol";

/// @notice Deploys routers from a fresh address, so that the address of its first deployment is known beforehand
/// (a contract's first CREATE uses nonce 1).
contract PaymentRouterDeployer {
    function deploy(IERC20 asset, address admin, address treasury, address forwarder) external returns (PaymentRouter) {
        return new PaymentRouter(asset, admin, treasury, forwarder);
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
/// a merchant or the treasury. This contract is the admin. Flows, events and permits: PaymentRouter.test.ts.
contract PaymentRouterTest is TestBase {
    address internal constant PAYER = address(0xBA7E5);
    address internal constant MERCHANT = address(0x3E5C4A);
    address internal constant TREASURY = address(0x7E5A);
    address internal constant SQUATTER = address(0x5C0A7);
    bytes32 internal constant REF = keccak256("order-1");

    MockUSDC internal usdc;
    TrustMintForwarder internal forwarder;
    PaymentRouter internal router;

    function setUp() public {
        usdc = new MockUSDC(address(this));
        forwarder = new TrustMintForwarder();
        router = new PaymentRouter(usdc, address(this), TREASURY, address(forwarder));
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
        deployer.deploy(usdc, address(this), next, address(forwarder));
        // The same deployment with another treasury lands at that address: the refused treasury was the router.
        PaymentRouter deployed = deployer.deploy(usdc, address(this), TREASURY, address(forwarder));
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
contract PaymentHandler is TestBase {
    MockUSDC internal immutable usdc;
    PaymentRouter internal immutable router;

    uint256 internal constant REFS = 12; // ref 0 is bytes32(0)
    uint256 internal constant AMOUNTS = 3; // per ref; the first is its real payment's
    uint256 internal constant REFUND_REFS = 24; // refund ref 0 is bytes32(0)
    uint256 internal constant MAX_AMOUNT = 1_000_000e6;

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
    }

    mapping(bytes32 key => Model) internal _model;
    bytes32[] internal _paidKeys; // in the order of their first payment
    mapping(bytes32 key => Terms) internal _termsOf;
    mapping(address merchant => mapping(bytes32 refundRef => bool)) public refundUsed;
    mapping(address holder => uint256) public expectedBalance;

    uint256 public ghostMinted;
    uint256 public ghostWrongOutcomes;
    uint256 public ghostForeignChanges;
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

    constructor(MockUSDC usdc_, PaymentRouter router_) {
        (usdc, router) = (usdc_, router_);
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
    ) external {
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
    function refund(uint256 callerSeed, uint256 targetSeed, uint256 refundRefSeed, uint256 amount, bool fund) external {
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
    function setFee(uint256 bps, uint256 treasurySeed) external {
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

    function actors() external view returns (address[4] memory) {
        return _actors;
    }

    /// @dev Every address the handler ever gives USDC to or pays through the router: actors and treasuries.
    function holders() external view returns (address[] memory list) {
        list = new address[](_actors.length + _treasuries.length);
        for (uint256 i; i < _actors.length; ++i) list[i] = _actors[i];
        for (uint256 i; i < _treasuries.length; ++i) list[_actors.length + i] = _treasuries[i];
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

        vm.prank(caller);
        try router.refund(t.ref, t.amount, refundRef, amount) {
            if (!valid) ++ghostWrongOutcomes;
            m.refunded += amount;
            refundUsed[caller][refundRef] = true;
            expectedBalance[caller] -= amount;
            expectedBalance[m.payer] += amount;
            ++refunds;
            if (shared) ++sharedRefundRefs;
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

/// @notice The router's invariants under the handler's random payments, refunds and fee changes.
/// @dev 128 runs of 100 calls per invariant, as the lending invariants.
contract PaymentRouterInvariantsTest is TestBase {
    MockUSDC internal usdc;
    PaymentRouter internal router;
    PaymentHandler internal handler;

    function setUp() public {
        usdc = new MockUSDC(address(this));
        TrustMintForwarder forwarder = new TrustMintForwarder();
        // The first treasury is the handler's first; the test contract is a temporary admin.
        router = new PaymentRouter(usdc, address(this), address(0x7E1), address(forwarder));
        handler = new PaymentHandler(usdc, router);
        usdc.grantRole(usdc.FAUCET_ROLE(), address(handler));
        router.grantRole(router.DEFAULT_ADMIN_ROLE(), address(handler));
        router.renounceRole(router.DEFAULT_ADMIN_ROLE(), address(this));
        address[] memory holders = handler.holders();
        for (uint256 i; i < holders.length; ++i) {
            vm.prank(holders[i]);
            usdc.approve(address(router), type(uint256).max);
        }
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

    /// @dev The router never holds USDC.
    /// forge-config: default.invariant.runs = 128
    /// forge-config: default.invariant.depth = 100
    function invariant_routerHoldsNoUsdc() public view {
        assertEq(usdc.balanceOf(address(router)), 0, "the router holds no USDC");
    }

    /// @dev The router creates and destroys no USDC: the supply is what the handler minted, all of it is with the
    /// actors and the treasuries, and each holds exactly what the model says.
    /// forge-config: default.invariant.runs = 128
    /// forge-config: default.invariant.depth = 100
    function invariant_supplyIsConserved() public view {
        assertEq(usdc.totalSupply(), handler.ghostMinted(), "supply = minted");
        address[] memory holders = handler.holders();
        uint256 held;
        for (uint256 i; i < holders.length; ++i) {
            uint256 balance = usdc.balanceOf(holders[i]);
            assertEq(balance, handler.expectedBalance(holders[i]), "balance = the model's balance");
            held += balance;
        }
        assertEq(held, usdc.totalSupply(), "all the supply is with the actors and the treasuries");
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
    }

    function _checkRefunds(PaymentHandler.Terms memory t) internal view {
        IPaymentRouter.Payment memory p = router.paymentOf(t.ref, t.merchant, t.amount);
        assertLe(p.refunded, p.amount, "refunded <= amount");
        PaymentHandler.Model memory m = handler.modelOf(handler.keyOf(t.ref, t.merchant, t.amount));
        assertEq(p.refunded, m.refunded, "refunded = the model's");
    }

    function _checkFirstPayment(PaymentHandler.Terms memory t) internal view {
        PaymentHandler.Model memory m = handler.modelOf(handler.keyOf(t.ref, t.merchant, t.amount));
        IPaymentRouter.Payment memory p = router.paymentOf(t.ref, t.merchant, t.amount);
        assertLe(m.timesPaid, 1, "paid at most once");
        assertEq(p.payer, m.payer, "the first payer");
        assertEq(p.merchant, m.merchant, "the first merchant");
        assertEq(p.amount, m.amount, "the first amount");
        assertEq(p.fee, m.fee, "the first fee");
    }
}
