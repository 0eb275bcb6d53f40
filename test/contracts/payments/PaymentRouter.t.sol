// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TestBase} from "../lib/TestBase.sol";
import {IPaymentRouter} from "../../../contracts/interfaces/IPaymentRouter.sol";
import {TrustMintForwarder} from "../../../contracts/metatx/TrustMintForwarder.sol";
import {MockUSDC} from "../../../contracts/mocks/MockUSDC.sol";
import {PaymentRouter} from "../../../contracts/payments/PaymentRouter.sol";

/// @notice Fuzz tests of the payment router's arithmetic: the fee split of a payment, the bound on refunds, and the
/// amount, fee and caller checks. This contract is the admin. Flows, events and permits: PaymentRouter.test.ts.
contract PaymentRouterTest is TestBase {
    address internal constant PAYER = address(0xBA7E5);
    address internal constant MERCHANT = address(0x3E5C4A);
    address internal constant TREASURY = address(0x7E5A);
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
    }

    function _pay(bytes32 ref, uint256 amount) internal {
        usdc.mint(PAYER, amount);
        vm.prank(PAYER);
        router.pay(ref, MERCHANT, amount);
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

        IPaymentRouter.Payment memory p = router.paymentOf(REF);
        assertEq(p.payer, PAYER, "payer recorded");
        assertEq(p.merchant, MERCHANT, "merchant recorded");
        assertEq(p.amount, amount, "amount recorded");
        assertEq(p.fee, fee, "fee recorded");
        assertEq(p.refunded, 0, "nothing refunded");
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
        router.refund(REF, keccak256("refund-1"), first);
        uint256 left = amount - first;
        uint256 merchantBefore = usdc.balanceOf(MERCHANT);

        if (second == 0 || second > left) {
            vm.expectRevert(
                abi.encodeWithSelector(IPaymentRouter.PaymentRouterRefundTooLarge.selector, REF, second, left)
            );
            vm.prank(MERCHANT);
            router.refund(REF, keccak256("refund-2"), second);
            assertEq(router.paymentOf(REF).refunded, first, "a refused refund changes nothing");
            assertTrue(!router.refundMade(keccak256("refund-2")), "a refused refund is not recorded");
            assertEq(usdc.balanceOf(PAYER), first, "the payer got the first refund only");
        } else {
            vm.expectEmit();
            emit IPaymentRouter.PaymentRefunded(REF, keccak256("refund-2"), MERCHANT, PAYER, second, first + second);
            vm.prank(MERCHANT);
            router.refund(REF, keccak256("refund-2"), second);
            assertEq(router.paymentOf(REF).refunded, first + second, "refunds add up");
            assertEq(usdc.balanceOf(PAYER), first + second, "the payer got both refunds");
            assertEq(merchantBefore - usdc.balanceOf(MERCHANT), second, "the merchant paid the refund");
        }
        assertLe(router.paymentOf(REF).refunded, amount, "refunds within the amount");
        assertEq(usdc.balanceOf(address(router)), 0, "the router holds no USDC");
    }

    /// Nobody but the payment's merchant refunds (the forwarder aside: its calls name their signer).
    function testFuzz_onlyTheMerchantRefunds(address caller, uint256 amount) public {
        vm.assume(caller != MERCHANT && caller != address(forwarder));
        _pay(REF, 100e6);
        amount = bound(amount, 1, 100e6);
        vm.expectRevert(abi.encodeWithSelector(IPaymentRouter.PaymentRouterNotMerchant.selector, REF, caller));
        vm.prank(caller);
        router.refund(REF, keccak256("refund-1"), amount);
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

/// @notice Random payments, refunds and fee changes by four actors (each may pay and be paid) over small pools of refs
/// and refund refs (the zero ref among them), so that reused refs, reused refund refs, strangers' refunds, refunds
/// above what is left and unfunded payers all happen. Every call is checked against an independent model: a call that
/// succeeds where the model says it must fail, or the reverse, is counted in `ghostWrongOutcomes`.
contract PaymentHandler is TestBase {
    MockUSDC internal immutable usdc;
    PaymentRouter internal immutable router;

    uint256 internal constant REFS = 12; // ref 0 is bytes32(0)
    uint256 internal constant REFUND_REFS = 24; // refund ref 0 is bytes32(0)
    uint256 internal constant MAX_AMOUNT = 1_000_000e6;

    address[4] internal _actors = [address(0xA1), address(0xA2), address(0xA3), address(0xA4)];
    address[2] internal _treasuries = [address(0x7E1), address(0x7E2)];

    struct Model {
        address payer;
        address merchant;
        uint256 amount;
        uint256 fee;
        uint256 refunded;
        uint256 timesPaid;
    }

    mapping(bytes32 ref => Model) internal _model;
    mapping(bytes32 refundRef => bool) public refundUsed;
    mapping(address holder => uint256) public expectedBalance;

    uint256 public ghostMinted;
    uint256 public ghostWrongOutcomes;
    // Coverage, to see that the campaign reached the interesting paths.
    uint256 public pays;
    uint256 public refusedPays;
    uint256 public refunds;
    uint256 public refusedRefunds;

    constructor(MockUSDC usdc_, PaymentRouter router_) {
        (usdc, router) = (usdc_, router_);
    }

    /* ACTIONS */

    /// @dev A random actor pays a random ref of the pool to a random merchant, funded or not.
    function pay(uint256 payerSeed, uint256 merchantSeed, uint256 refSeed, uint256 amount, bool fund) external {
        address payer = _actor(payerSeed);
        address merchant = _actor(merchantSeed);
        bytes32 ref = refAt(refSeed % REFS);
        amount = bound(amount, 0, MAX_AMOUNT);
        if (fund) _mint(payer, amount);

        Model storage m = _model[ref];
        uint256 fee = amount * router.feeBps() / 10_000;
        address treasury = router.treasury();
        bool valid = ref != bytes32(0) && amount > 0 && m.timesPaid == 0 && usdc.balanceOf(payer) >= amount;

        vm.prank(payer);
        try router.pay(ref, merchant, amount) {
            if (!valid) ++ghostWrongOutcomes;
            ++m.timesPaid;
            (m.payer, m.merchant, m.amount, m.fee) = (payer, merchant, amount, fee);
            expectedBalance[payer] -= amount;
            expectedBalance[merchant] += amount - fee;
            expectedBalance[treasury] += fee;
            ++pays;
        } catch {
            if (valid) ++ghostWrongOutcomes;
            ++refusedPays;
        }
    }

    /// @dev Refunds a random ref of the pool, mostly by its merchant, sometimes by any actor, with a random refund
    /// ref and an amount up to a little above what is left.
    function refund(uint256 callerSeed, uint256 refSeed, uint256 refundRefSeed, uint256 amount, bool fund) external {
        bytes32 ref = refAt(refSeed % REFS);
        Model storage m = _model[ref];
        address caller = m.timesPaid > 0 && callerSeed % 4 != 0 ? m.merchant : _actor(callerSeed / 4);
        bytes32 refundRef = refundRefAt(refundRefSeed % REFUND_REFS);
        uint256 left = m.amount - m.refunded;
        amount = bound(amount, 0, left + 2);
        if (fund) _mint(caller, amount);

        bool valid = m.timesPaid > 0 && caller == m.merchant && refundRef != bytes32(0) && !refundUsed[refundRef]
            && amount > 0 && amount <= left && usdc.balanceOf(caller) >= amount;

        vm.prank(caller);
        try router.refund(ref, refundRef, amount) {
            if (!valid) ++ghostWrongOutcomes;
            m.refunded += amount;
            refundUsed[refundRef] = true;
            expectedBalance[caller] -= amount;
            expectedBalance[m.payer] += amount;
            ++refunds;
        } catch {
            if (valid) ++ghostWrongOutcomes;
            ++refusedRefunds;
        }
    }

    /// @dev The admin (this handler) sets a random fee, sometimes above the bound, and one of two treasuries.
    function setFee(uint256 bps, uint256 treasurySeed) external {
        bps = bound(bps, 0, 1_200);
        try router.setFee(bps, _treasuries[treasurySeed % 2]) {
            if (bps > 1_000) ++ghostWrongOutcomes;
        } catch {
            if (bps <= 1_000) ++ghostWrongOutcomes;
        }
    }

    /* VIEWS FOR THE INVARIANTS */

    function refCount() external pure returns (uint256) {
        return REFS;
    }

    function refAt(uint256 i) public pure returns (bytes32) {
        return i == 0 ? bytes32(0) : keccak256(abi.encode("ref", i));
    }

    function refundRefCount() external pure returns (uint256) {
        return REFUND_REFS;
    }

    function refundRefAt(uint256 i) public pure returns (bytes32) {
        return i == 0 ? bytes32(0) : keccak256(abi.encode("refund", i));
    }

    function modelOf(bytes32 ref) external view returns (Model memory) {
        return _model[ref];
    }

    /// @dev Every address the handler ever gives USDC to or pays through the router: actors and treasuries.
    function holders() external view returns (address[] memory list) {
        list = new address[](_actors.length + _treasuries.length);
        for (uint256 i; i < _actors.length; ++i) list[i] = _actors[i];
        for (uint256 i; i < _treasuries.length; ++i) list[_actors.length + i] = _treasuries[i];
    }

    /* HELPERS */

    function _actor(uint256 seed) internal view returns (address) {
        return _actors[seed % _actors.length];
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

    /// @dev For every paid ref, the sum of its refunds is within its amount, and is what the model refunded.
    /// forge-config: default.invariant.runs = 128
    /// forge-config: default.invariant.depth = 100
    function invariant_refundsNeverExceedTheAmount() public view {
        uint256 count = handler.refCount();
        for (uint256 i; i < count; ++i) {
            bytes32 ref = handler.refAt(i);
            IPaymentRouter.Payment memory p = router.paymentOf(ref);
            assertLe(p.refunded, p.amount, "refunded <= amount");
            assertEq(p.refunded, handler.modelOf(ref).refunded, "refunded = the model's refunds");
        }
        uint256 refundRefs = handler.refundRefCount();
        for (uint256 i; i < refundRefs; ++i) {
            bytes32 refundRef = handler.refundRefAt(i);
            assertTrue(router.refundMade(refundRef) == handler.refundUsed(refundRef), "refundMade = the model's refund refs");
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

    /// @dev Every ref is paid at most once, the zero ref never, and the stored payment is the first one's.
    /// forge-config: default.invariant.runs = 128
    /// forge-config: default.invariant.depth = 100
    function invariant_eachRefPaidAtMostOnce() public view {
        uint256 count = handler.refCount();
        for (uint256 i; i < count; ++i) {
            bytes32 ref = handler.refAt(i);
            PaymentHandler.Model memory m = handler.modelOf(ref);
            IPaymentRouter.Payment memory p = router.paymentOf(ref);
            assertLe(m.timesPaid, 1, "paid at most once");
            if (ref == bytes32(0)) assertEq(m.timesPaid, 0, "the zero ref is never paid");
            assertEq(p.payer, m.payer, "the first payer");
            assertEq(p.merchant, m.merchant, "the first merchant");
            assertEq(p.amount, m.amount, "the first amount");
            assertEq(p.fee, m.fee, "the first fee");
        }
    }

    /// @dev Every call succeeded exactly when the model says it must (the handler's checks; see PaymentHandler).
    /// forge-config: default.invariant.runs = 128
    /// forge-config: default.invariant.depth = 100
    function invariant_everyOutcomeIsTheModels() public view {
        assertEq(handler.ghostWrongOutcomes(), 0, "a call succeeded or failed against the model");
    }
}
