// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TestBase} from "../lib/TestBase.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {IInterestRateModel} from "../../../contracts/interfaces/IInterestRateModel.sol";
import {InterestRateModel} from "../../../contracts/vault/InterestRateModel.sol";

/// Fuzz tests of the rate curve's math, over random (valid) rate points and reserve factors.
contract InterestRateModelTest is TestBase {
    uint256 internal constant WAD = 1e18;
    InterestRateModel internal model;

    function setUp() public {
        model = new InterestRateModel(address(this));
    }

    /// @dev Sets random non-decreasing rates within the ceiling and returns them.
    function _setRates(uint256[5] memory seeds) internal returns (uint256[5] memory rates) {
        uint256 previous;
        for (uint256 i; i < 5; ++i) {
            rates[i] = bound(seeds[i], previous, WAD);
            previous = rates[i];
        }
        model.setBorrowRates(rates);
    }

    function testFuzz_exactAtTheKnots(uint256[5] memory seeds, uint256 reserveFactor) public {
        uint256[5] memory rates = _setRates(seeds);
        reserveFactor = bound(reserveFactor, 0, 0.5e18);
        model.setReserveFactor(reserveFactor);
        uint256[5] memory knots = model.utilizationKnots();
        IInterestRateModel.RatePoint[5] memory points = model.ratePoints();
        for (uint256 i; i < 5; ++i) {
            assertEq(model.borrowRate(knots[i]), rates[i], "borrow rate at knot");
            assertEq(points[i].utilization, knots[i], "point utilization");
            assertEq(points[i].borrowRate, rates[i], "point borrow rate");
            uint256 expectedSupply = Math.mulDiv(Math.mulDiv(rates[i], knots[i], WAD), WAD - reserveFactor, WAD);
            assertEq(points[i].supplyRate, expectedSupply, "point supply rate");
        }
    }

    function testFuzz_monotonic(uint256[5] memory seeds, uint256 reserveFactor, uint256 u1, uint256 u2) public {
        _setRates(seeds);
        model.setReserveFactor(bound(reserveFactor, 0, 0.5e18));
        u1 = bound(u1, 0, 2 * WAD);
        u2 = bound(u2, u1, 2 * WAD);
        assertLe(model.borrowRate(u1), model.borrowRate(u2), "borrow rate non-decreasing");
        assertLe(model.supplyRate(u1), model.supplyRate(u2), "supply rate non-decreasing");
        assertLe(model.supplyRate(u2), model.borrowRate(u2), "supply rate <= borrow rate");
    }

    /// @dev A step of `d` in utilization moves the rate by at most the steepest slope times `d`, plus rounding.
    function testFuzz_continuous(uint256[5] memory seeds, uint256 u, uint256 d) public {
        uint256[5] memory rates = _setRates(seeds);
        uint256[5] memory knots = model.utilizationKnots();
        uint256 maxSlope; // WAD rate per WAD utilization
        for (uint256 i; i < 4; ++i) {
            uint256 slope = Math.mulDiv(rates[i + 1] - rates[i], WAD, knots[i + 1] - knots[i], Math.Rounding.Ceil);
            maxSlope = Math.max(maxSlope, slope);
        }
        u = bound(u, 0, WAD);
        d = bound(d, 0, 1e15);
        uint256 step = model.borrowRate(u + d) - model.borrowRate(u);
        assertLe(step, Math.mulDiv(maxSlope, d, WAD, Math.Rounding.Ceil) + 2, "no jump");
    }

    function testFuzz_flatAboveFullUtilization(uint256[5] memory seeds, uint256 u) public {
        uint256[5] memory rates = _setRates(seeds);
        u = bound(u, WAD, type(uint128).max);
        assertEq(model.borrowRate(u), rates[4], "borrow rate capped");
        assertEq(model.supplyRate(u), model.supplyRate(WAD), "supply rate capped");
    }

    function testFuzz_supplyRateFormula(uint256[5] memory seeds, uint256 reserveFactor, uint256 u) public {
        _setRates(seeds);
        reserveFactor = bound(reserveFactor, 0, 0.5e18);
        model.setReserveFactor(reserveFactor);
        u = bound(u, 0, WAD);
        uint256 expected = Math.mulDiv(Math.mulDiv(model.borrowRate(u), u, WAD), WAD - reserveFactor, WAD);
        assertEq(model.supplyRate(u), expected, "borrowRate * u * (1 - reserveFactor)");
    }

    function testFuzz_rejectsDecreasingRates(uint256 index, uint256 drop) public {
        index = bound(index, 1, 4);
        uint256[5] memory rates = [uint256(0.1e18), 0.2e18, 0.3e18, 0.4e18, 0.5e18];
        uint256 previous = rates[index - 1];
        rates[index] = previous - bound(drop, 1, previous);
        vm.expectRevert(
            abi.encodeWithSelector(
                IInterestRateModel.InterestRateModelRatesNotMonotonic.selector, index, rates[index], previous
            )
        );
        model.setBorrowRates(rates);
    }

    function testFuzz_rejectsRatesAboveCeiling(uint256 rate) public {
        rate = bound(rate, WAD + 1, type(uint256).max);
        uint256[5] memory rates = [uint256(0), 0, 0, 0, rate];
        vm.expectRevert(abi.encodeWithSelector(IInterestRateModel.InterestRateModelRateTooHigh.selector, 4, rate, WAD));
        model.setBorrowRates(rates);
    }

    function test_defaults() public view {
        uint256[5] memory rates = model.borrowRates();
        assertEq(rates[0], 0.02e18, "2 % idle");
        assertEq(rates[1], 0.05e18, "5 % at 50 %");
        assertEq(rates[2], 0.1e18, "10 % at 80 %");
        assertEq(rates[3], 0.25e18, "25 % at 95 %");
        assertEq(rates[4], 0.6e18, "60 % at 100 %");
        assertEq(model.reserveFactor(), 0, "no reserve factor");
        assertEq(model.borrowRate(0.65e18), 0.075e18, "halfway between 50 % and 80 %");
    }
}
