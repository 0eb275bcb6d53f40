// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TestBase} from "./lib/TestBase.sol";
import {IAccessControl} from "@openzeppelin/contracts/access/IAccessControl.sol";
import {MockUSDC} from "../../contracts/mocks/MockUSDC.sol";

contract MockUSDCTest is TestBase {
    MockUSDC internal usdc;
    address internal constant STRANGER = address(0xBEEF);

    function setUp() public {
        usdc = new MockUSDC(address(this));
    }

    function testFuzz_faucetMintsExactAmount(address to, uint128 amount) public {
        vm.assume(to != address(0));
        usdc.mint(to, amount);
        assertEq(usdc.balanceOf(to), amount);
        assertEq(usdc.totalSupply(), amount);
    }

    function test_revertsWhenNotFaucet() public {
        bytes32 faucetRole = usdc.FAUCET_ROLE(); // read before prank: a prank applies to the next call
        vm.expectRevert(
            abi.encodeWithSelector(IAccessControl.AccessControlUnauthorizedAccount.selector, STRANGER, faucetRole)
        );
        vm.prank(STRANGER);
        usdc.mint(STRANGER, 1);
    }
}
