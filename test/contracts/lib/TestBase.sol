// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @notice The Foundry cheatcodes that Hardhat 3's EDR implements and these tests use.
/// (forge-std is not installable here: its npm copy is incomplete, and GitHub is unreachable.)
interface Vm {
    function prank(address sender) external;
    function startPrank(address sender) external;
    function stopPrank() external;
    function warp(uint256 timestamp) external;
    function roll(uint256 blockNumber) external;
    function assume(bool condition) external pure;
    function expectRevert() external;
    function expectRevert(bytes4 selector) external;
    function expectRevert(bytes calldata revertData) external;
    function expectEmit(bool checkTopic1, bool checkTopic2, bool checkTopic3, bool checkData) external;
    function expectEmit() external;
    function expectEmit(address emitter) external;
    function deal(address account, uint256 newBalance) external;
    function label(address account, string calldata newLabel) external;
    function addr(uint256 privateKey) external pure returns (address);
    function sign(uint256 privateKey, bytes32 digest) external pure returns (uint8 v, bytes32 r, bytes32 s);
    function snapshotState() external returns (uint256 snapshotId);
    function revertToState(uint256 snapshotId) external returns (bool success);
}

/// @notice Assertions and fuzz-input helpers for Solidity tests (a failed assertion reverts, failing the test).
abstract contract TestBase {
    Vm internal constant vm = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    address[] private _targetContracts;

    error AssertionFailed(string what, uint256 left, uint256 right);
    error AssertionFailedAddress(string what, address left, address right);
    error AssertionFailedBool(string what);
    error AssertionFailedInt(string what, int256 left, int256 right);

    function assertEq(uint256 left, uint256 right, string memory what) internal pure {
        if (left != right) revert AssertionFailed(what, left, right);
    }

    function assertEq(int256 left, int256 right, string memory what) internal pure {
        if (left != right) revert AssertionFailedInt(what, left, right);
    }

    function assertEq(uint256 left, uint256 right) internal pure {
        assertEq(left, right, "assertEq");
    }

    function assertEq(address left, address right, string memory what) internal pure {
        if (left != right) revert AssertionFailedAddress(what, left, right);
    }

    function assertEq(address left, address right) internal pure {
        assertEq(left, right, "assertEq");
    }

    function assertLe(uint256 left, uint256 right, string memory what) internal pure {
        if (left > right) revert AssertionFailed(what, left, right);
    }

    function assertGe(uint256 left, uint256 right, string memory what) internal pure {
        if (left < right) revert AssertionFailed(what, left, right);
    }

    function assertGt(uint256 left, uint256 right, string memory what) internal pure {
        if (left <= right) revert AssertionFailed(what, left, right);
    }

    function assertLt(uint256 left, uint256 right, string memory what) internal pure {
        if (left >= right) revert AssertionFailed(what, left, right);
    }

    /// @dev |left - right| <= maxDelta.
    function assertApproxEqAbs(uint256 left, uint256 right, uint256 maxDelta, string memory what) internal pure {
        if ((left > right ? left - right : right - left) > maxDelta) revert AssertionFailed(what, left, right);
    }

    function assertTrue(bool condition, string memory what) internal pure {
        if (!condition) revert AssertionFailedBool(what);
    }

    /// @dev Maps a fuzzed value into [min, max] without discarding runs.
    function bound(uint256 value, uint256 min, uint256 max) internal pure returns (uint256) {
        require(min <= max, "bound: min > max");
        if (value >= min && value <= max) return value;
        uint256 size = max - min + 1;
        return min + (value % size);
    }

    /// @dev Invariant runs call only these contracts (the ABI the invariant fuzzer reads).
    function targetContract(address target) internal {
        _targetContracts.push(target);
    }

    function targetContracts() public view returns (address[] memory) {
        return _targetContracts;
    }
}
