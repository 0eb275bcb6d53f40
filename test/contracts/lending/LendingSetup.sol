// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TestBase} from "../lib/TestBase.sol";
import {MockUSDC} from "../../../contracts/mocks/MockUSDC.sol";
import {InterestRateModel} from "../../../contracts/vault/InterestRateModel.sol";
import {StakingVault} from "../../../contracts/vault/StakingVault.sol";
import {LoanBook} from "../../../contracts/lending/LoanBook.sol";
import {TrustMintForwarder} from "../../../contracts/metatx/TrustMintForwarder.sol";

/// The deployed system as the owner's deployment script wires it; the test contract holds every role.
abstract contract LendingSetup is TestBase {
    MockUSDC internal usdc;
    TrustMintForwarder internal forwarder;
    InterestRateModel internal model;
    StakingVault internal vault;
    LoanBook internal book;

    uint256 internal constant USDC = 1e6;
    uint256 internal constant VIRTUAL_SHARES = 1e12;

    function _deploy() internal {
        // On a whole hour, as the loan book's due dates are (D-123): a loan of whole days is then due exactly its term on.
        vm.warp(block.timestamp - block.timestamp % 1 hours + 1 hours);
        usdc = new MockUSDC(address(this));
        forwarder = new TrustMintForwarder();
        model = new InterestRateModel(address(this));
        vault = new StakingVault(usdc, model, address(this), address(forwarder));
        book = new LoanBook(vault, address(this), address(forwarder));
        vault.grantRole(vault.LENDER_ROLE(), address(book));
        vault.grantRole(vault.YIELD_ROLE(), address(this));
        vault.grantRole(vault.PAUSER_ROLE(), address(this));
        book.grantRole(book.OPERATOR_ROLE(), address(this));
        usdc.approve(address(vault), type(uint256).max);
        usdc.approve(address(book), type(uint256).max);
    }

    /// @dev `user` deposits `assets` freshly minted USDC.
    function _depositAs(address user, uint256 assets) internal returns (uint256 shares) {
        usdc.mint(user, assets);
        vm.startPrank(user);
        usdc.approve(address(vault), assets);
        shares = vault.deposit(assets, user);
        vm.stopPrank();
    }

    /// @dev The share price as a fraction, with the vault's virtual share and asset.
    function _price() internal view returns (uint256 num, uint256 den) {
        return (vault.totalAssets() + 1, vault.totalSupply() + VIRTUAL_SHARES);
    }
}
