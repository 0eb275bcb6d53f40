// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @title IInterestRateModel
/// @notice A piecewise-linear borrow-rate curve over the staking vault's utilization, and the supply rate it implies.
/// @dev All rates and fractions are WAD-scaled (1e18 = 100 %). Rates are simple annual rates (APR): the supply rate
/// is what depositors would earn over a year at a constant utilization, shown by the API as `currentAPY`.
/// The curve passes through five points at the fixed utilizations 0, 0.50, 0.80, 0.95 and 1.00; the borrow rates at
/// those points are admin-settable, non-decreasing and at most {MAX_BORROW_RATE}.
interface IInterestRateModel {
    /* TYPES */

    /// @notice One point of the curve, as `GET /vault/rates` lists it.
    struct RatePoint {
        uint256 utilization;
        uint256 borrowRate;
        uint256 supplyRate;
    }

    /* EVENTS */

    /// @notice The borrow rates at the five utilization points were set to `borrowRates`.
    event InterestRateModelBorrowRatesUpdated(uint256[5] borrowRates);

    /// @notice The reserve factor was set to `reserveFactor` (WAD).
    event InterestRateModelReserveFactorUpdated(uint256 reserveFactor);

    /* ERRORS */

    /// @notice The borrow rate at point `index` exceeds the ceiling.
    error InterestRateModelRateTooHigh(uint256 index, uint256 rate, uint256 max);

    /// @notice The borrow rate at point `index` is below the rate at the point before it.
    error InterestRateModelRatesNotMonotonic(uint256 index, uint256 rate, uint256 previousRate);

    /// @notice The reserve factor exceeds the ceiling.
    error InterestRateModelReserveFactorTooHigh(uint256 reserveFactor, uint256 max);

    /// @notice The admin address is zero.
    error InterestRateModelZeroAddress();

    /* VIEWS */

    /// @notice The ceiling of every borrow rate.
    /// @return The ceiling (WAD; 1e18 = 100 % a year).
    function MAX_BORROW_RATE() external view returns (uint256);

    /// @notice The ceiling of the reserve factor.
    /// @return The ceiling (WAD).
    function MAX_RESERVE_FACTOR() external view returns (uint256);

    /// @notice The five fixed utilization points of the curve.
    /// @return knots 0, 0.50e18, 0.80e18, 0.95e18 and 1e18.
    function utilizationKnots() external pure returns (uint256[5] memory knots);

    /// @notice The borrow rates at the five utilization points.
    /// @return rates Annual borrow rates (WAD), non-decreasing.
    function borrowRates() external view returns (uint256[5] memory rates);

    /// @notice The share of loan interest kept out of the depositors' yield.
    /// @dev The staking vault routes this share of every interest payment to its insurance reserve, so the supply
    /// rate below is what depositors actually receive.
    /// @return The reserve factor (WAD).
    function reserveFactor() external view returns (uint256);

    /// @notice The annual borrow rate at `utilization`, interpolated linearly between the two neighbouring points.
    /// @param utilization Borrowed / (idle + borrowed), WAD; values above 1e18 are treated as 1e18.
    /// @return The annual borrow rate (WAD), rounded down.
    function borrowRate(uint256 utilization) external view returns (uint256);

    /// @notice The annual supply rate at `utilization`: borrowRate * utilization * (1 - reserveFactor).
    /// @param utilization Borrowed / (idle + borrowed), WAD; values above 1e18 are treated as 1e18.
    /// @return The annual supply rate (WAD), rounded down.
    function supplyRate(uint256 utilization) external view returns (uint256);

    /// @notice The whole curve: the five points with their borrow and supply rates (the `model` of `GET /vault/rates`).
    /// @return points The points in increasing utilization.
    function ratePoints() external view returns (RatePoint[5] memory points);

    /* ADMIN */

    /// @notice Sets the borrow rates at the five utilization points.
    /// @dev Only the default admin. Each rate must be at most {MAX_BORROW_RATE} and at least the previous one.
    /// @param rates Annual borrow rates (WAD) at utilization 0, 0.50, 0.80, 0.95 and 1.00.
    function setBorrowRates(uint256[5] calldata rates) external;

    /// @notice Sets the reserve factor.
    /// @dev Only the default admin; at most {MAX_RESERVE_FACTOR}.
    /// @param newReserveFactor The new reserve factor (WAD).
    function setReserveFactor(uint256 newReserveFactor) external;
}
