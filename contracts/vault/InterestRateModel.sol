// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {IInterestRateModel} from "../interfaces/IInterestRateModel.sol";

/// @title InterestRateModel
/// @notice Piecewise-linear borrow rates through utilization 0, 0.50, 0.80, 0.95 and 1.00, and the supply rate they
/// imply for the staking vault's depositors.
/// @dev Default borrow rates (APR): 2 % idle, 5 % at 50 %, 10 % at 80 %, 25 % at 95 % and 60 % at full
/// utilization: gentle up to the 80 % target, then steep so that high utilization pays depositors to stay and
/// borrowers to repay (the kink shape of Compound and Aave). The default reserve factor is zero: all interest goes to
/// depositors, as the insurance reserve is funded by the loans' insurance fees.
contract InterestRateModel is AccessControl, IInterestRateModel {
    using Math for uint256;

    uint256 internal constant WAD = 1e18;

    /// @inheritdoc IInterestRateModel
    uint256 public constant MAX_BORROW_RATE = 1e18;

    /// @inheritdoc IInterestRateModel
    uint256 public constant MAX_RESERVE_FACTOR = 0.5e18;

    // The utilization points (WAD) of the spec's rate table; the first is 0 and the last WAD.
    uint256 internal constant KNOT_1 = 0.5e18;
    uint256 internal constant KNOT_2 = 0.8e18;
    uint256 internal constant KNOT_3 = 0.95e18;

    uint256[5] private _borrowRates;
    uint256 private _reserveFactor;

    /// @param admin Receives DEFAULT_ADMIN_ROLE (sets rates and the reserve factor).
    constructor(address admin) {
        if (admin == address(0)) revert InterestRateModelZeroAddress();
        _grantRole(DEFAULT_ADMIN_ROLE, admin);
        _setBorrowRates([uint256(0.02e18), 0.05e18, 0.1e18, 0.25e18, 0.6e18]);
    }

    /* VIEWS */

    /// @inheritdoc IInterestRateModel
    function utilizationKnots() public pure returns (uint256[5] memory knots) {
        knots = [uint256(0), KNOT_1, KNOT_2, KNOT_3, WAD];
    }

    /// @inheritdoc IInterestRateModel
    function borrowRates() external view returns (uint256[5] memory) {
        return _borrowRates;
    }

    /// @inheritdoc IInterestRateModel
    function reserveFactor() external view returns (uint256) {
        return _reserveFactor;
    }

    /// @inheritdoc IInterestRateModel
    function borrowRate(uint256 utilization) public view returns (uint256) {
        if (utilization >= WAD) return _borrowRates[4];
        uint256 lower;
        uint256 upper;
        uint256 i;
        if (utilization < KNOT_1) {
            (lower, upper, i) = (0, KNOT_1, 0);
        } else if (utilization < KNOT_2) {
            (lower, upper, i) = (KNOT_1, KNOT_2, 1);
        } else if (utilization < KNOT_3) {
            (lower, upper, i) = (KNOT_2, KNOT_3, 2);
        } else {
            (lower, upper, i) = (KNOT_3, WAD, 3);
        }
        uint256 start = _borrowRates[i];
        // Rates are non-decreasing (checked when set), so the subtraction cannot underflow.
        return start + (_borrowRates[i + 1] - start).mulDiv(utilization - lower, upper - lower);
    }

    /// @inheritdoc IInterestRateModel
    function supplyRate(uint256 utilization) public view returns (uint256) {
        utilization = Math.min(utilization, WAD);
        return borrowRate(utilization).mulDiv(utilization, WAD).mulDiv(WAD - _reserveFactor, WAD);
    }

    /// @inheritdoc IInterestRateModel
    function ratePoints() external view returns (RatePoint[5] memory points) {
        uint256[5] memory knots = utilizationKnots();
        for (uint256 i; i < 5; ++i) {
            points[i] = RatePoint({utilization: knots[i], borrowRate: borrowRate(knots[i]), supplyRate: supplyRate(knots[i])});
        }
    }

    /* ADMIN */

    /// @inheritdoc IInterestRateModel
    function setBorrowRates(uint256[5] calldata rates) external onlyRole(DEFAULT_ADMIN_ROLE) {
        _setBorrowRates(rates);
    }

    /// @inheritdoc IInterestRateModel
    function setReserveFactor(uint256 newReserveFactor) external onlyRole(DEFAULT_ADMIN_ROLE) {
        if (newReserveFactor > MAX_RESERVE_FACTOR) {
            revert InterestRateModelReserveFactorTooHigh(newReserveFactor, MAX_RESERVE_FACTOR);
        }
        _reserveFactor = newReserveFactor;
        emit InterestRateModelReserveFactorUpdated(newReserveFactor);
    }

    function _setBorrowRates(uint256[5] memory rates) private {
        for (uint256 i; i < 5; ++i) {
            if (rates[i] > MAX_BORROW_RATE) revert InterestRateModelRateTooHigh(i, rates[i], MAX_BORROW_RATE);
            if (i > 0 && rates[i] < rates[i - 1]) revert InterestRateModelRatesNotMonotonic(i, rates[i], rates[i - 1]);
        }
        _borrowRates = rates;
        emit InterestRateModelBorrowRatesUpdated(rates);
    }
}
