// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TestBase} from "../lib/TestBase.sol";
import {IAccessControl} from "@openzeppelin/contracts/access/IAccessControl.sol";
import {PlatformTimelock} from "../../../contracts/governance/PlatformTimelock.sol";
import {LoanBook} from "../../../contracts/lending/LoanBook.sol";
import {TrustMintForwarder} from "../../../contracts/metatx/TrustMintForwarder.sol";
import {MockUSDC} from "../../../contracts/mocks/MockUSDC.sol";
import {PaymentRouter} from "../../../contracts/payments/PaymentRouter.sol";
import {InterestRateModel} from "../../../contracts/vault/InterestRateModel.sol";
import {StakingVault} from "../../../contracts/vault/StakingVault.sol";

/// The platform wired as `npm run deploy` wires it (core/deploy-plan.ts, contracts/README.md): the service's online key
/// holds only the operational roles, and every admin role sits with the timelock, whose one proposer and executor is
/// the admin key (a multisig in production). The deployer (this contract) gives its admin roles up.
abstract contract PlatformSetup is TestBase {
    address internal constant ONLINE_KEY = address(0x5E41CE);
    address internal constant ADMIN_KEY = address(0xAD314);
    address internal constant TREASURY = address(0x7EA5);
    uint256 internal constant DELAY = 2 days;
    uint256 internal constant USDC = 1e6;

    MockUSDC internal usdc;
    TrustMintForwarder internal forwarder;
    InterestRateModel internal model;
    StakingVault internal vault;
    LoanBook internal book;
    PaymentRouter internal router;
    PlatformTimelock internal timelock;

    function _deployPlatform() internal {
        usdc = new MockUSDC(address(this));
        forwarder = new TrustMintForwarder();
        model = new InterestRateModel(address(this));
        vault = new StakingVault(usdc, model, address(this), address(forwarder));
        book = new LoanBook(vault, address(this), address(forwarder));
        router = new PaymentRouter(usdc, book, address(this), TREASURY, address(forwarder));
        timelock = new PlatformTimelock(DELAY, ADMIN_KEY);

        vault.grantRole(vault.LENDER_ROLE(), address(book));
        vault.grantRole(vault.YIELD_ROLE(), ONLINE_KEY);
        vault.grantRole(vault.PAUSER_ROLE(), ONLINE_KEY);
        book.grantRole(book.OPERATOR_ROLE(), ONLINE_KEY);
        book.grantRole(book.OPERATOR_ROLE(), address(router));
        book.grantRole(book.REFUNDER_ROLE(), address(router));
        router.grantRole(router.OPERATOR_ROLE(), ONLINE_KEY);
        IAccessControl[4] memory administered = _administered();
        for (uint256 i; i < administered.length; ++i) {
            administered[i].grantRole(bytes32(0), address(timelock));
            administered[i].renounceRole(bytes32(0), address(this));
        }
    }

    /// @dev The contracts the timelock administers.
    function _administered() internal view returns (IAccessControl[4] memory) {
        return [IAccessControl(address(model)), IAccessControl(address(vault)), IAccessControl(address(book)), router];
    }

    /// @dev The admin key schedules `data` on `target` through the timelock, waits the delay and executes it.
    function _throughTimelock(address target, bytes memory data) internal {
        vm.prank(ADMIN_KEY);
        timelock.schedule(target, 0, data, bytes32(0), bytes32(0), DELAY);
        vm.warp(block.timestamp + DELAY);
        vm.prank(ADMIN_KEY);
        timelock.execute(target, 0, data, bytes32(0), bytes32(0));
    }

    function _depositAs(address user, uint256 assets) internal {
        usdc.mint(user, assets);
        vm.startPrank(user);
        usdc.approve(address(vault), assets);
        vault.deposit(assets, user);
        vm.stopPrank();
    }
}
