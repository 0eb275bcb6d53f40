// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC4626} from "@openzeppelin/contracts/interfaces/IERC4626.sol";
import {IERC20Errors} from "@openzeppelin/contracts/interfaces/draft-IERC6093.sol";
import {ERC2771Forwarder} from "@openzeppelin/contracts/metatx/ERC2771Forwarder.sol";
import {Errors} from "@openzeppelin/contracts/utils/Errors.sol";
import {Multicall} from "@openzeppelin/contracts/utils/Multicall.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {TestBase} from "../lib/TestBase.sol";
import {ISocialVault} from "../../../contracts/interfaces/ISocialVault.sol";
import {LoanBook} from "../../../contracts/lending/LoanBook.sol";
import {TrustMintForwarder} from "../../../contracts/metatx/TrustMintForwarder.sol";
import {MockUSDC} from "../../../contracts/mocks/MockUSDC.sol";
import {SocialVaultFactory} from "../../../contracts/social/SocialVaultFactory.sol";
import {InterestRateModel} from "../../../contracts/vault/InterestRateModel.sol";
import {StakingVault} from "../../../contracts/vault/StakingVault.sol";

/// @notice Fuzz tests of the meta-transaction paths with real signatures (`vm.sign`): whoever signs is the actor,
/// a permit serves only its signer, and a forwarded multicall cannot act as another address. This contract is the
/// relayer. Flows and events: the *.metatx.test.ts files.
contract MetaTxFuzzTest is TestBase {
    uint256 internal constant SECP256K1_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141;
    bytes32 internal constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 internal constant FORWARD_REQUEST_TYPEHASH = keccak256(
        "ForwardRequest(address from,address to,uint256 value,uint256 gas,uint256 nonce,uint48 deadline,bytes data)"
    );
    bytes32 internal constant PERMIT_TYPEHASH =
        keccak256("Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)");

    uint256 internal constant OWNER_KEY = 0xA11CE;
    uint256 internal constant LIMIT = 1_000e6;

    MockUSDC internal usdc;
    TrustMintForwarder internal forwarder;
    StakingVault internal vault;
    LoanBook internal book;
    SocialVaultFactory internal factory;

    struct Permit {
        uint256 deadline;
        uint8 v;
        bytes32 r;
        bytes32 s;
    }

    function setUp() public {
        vm.warp(1_700_000_000);
        usdc = new MockUSDC(address(this));
        forwarder = new TrustMintForwarder();
        vault = new StakingVault(usdc, new InterestRateModel(address(this)), address(this), address(forwarder));
        book = new LoanBook(vault, address(this), address(forwarder));
        factory = new SocialVaultFactory(usdc, address(forwarder));
        // Loan 1: 300 USDC for 30 days, funded from 10,000 USDC of liquidity (the allowance is used up).
        vault.grantRole(vault.LENDER_ROLE(), address(book));
        book.grantRole(book.OPERATOR_ROLE(), address(this));
        usdc.mint(address(this), 10_000e6);
        usdc.approve(address(vault), 10_000e6);
        vault.deposit(10_000e6, address(this));
        book.fundLoan(keccak256("loan-1"), address(0xB0770), 300e6, 30e6, 30e6, 30);
    }

    /// A forwarded depositWithPermit signed by any key deposits that key's USDC for it, emits the ERC-4626 Deposit
    /// with it as sender and owner, and leaves it without ETH, allowance or a reusable nonce.
    function testFuzz_forwardedDepositWithPermitActsAsSigner(uint256 key, uint256 assets) public {
        key = bound(key, 1, SECP256K1_N - 1);
        assets = bound(assets, 1e6, 1e15);
        address signer = vm.addr(key);
        usdc.mint(signer, assets);
        uint256 shares = vault.previewDeposit(assets);

        Permit memory permit = _signPermit(key, address(vault), assets);
        ERC2771Forwarder.ForwardRequestData memory request = _signRequest(
            key,
            address(vault),
            abi.encodeCall(StakingVault.depositWithPermit, (assets, signer, permit.deadline, permit.v, permit.r, permit.s))
        );
        vm.expectEmit(true, true, false, true);
        emit IERC4626.Deposit(signer, signer, assets, shares);
        forwarder.execute(request);

        assertEq(vault.balanceOf(signer), shares, "shares");
        assertEq(usdc.balanceOf(signer), 0, "usdc left");
        assertEq(usdc.allowance(signer, address(vault)), 0, "allowance left");
        assertEq(signer.balance, 0, "signer eth");
        assertEq(forwarder.nonces(signer), 1, "forwarder nonce");
        assertEq(usdc.nonces(signer), 1, "permit nonce");
    }

    /// A permit handed to a `...WithPermit` function (staking vault, loan book, social vault) by anyone but its signer
    /// is of no use: the permit's owner is the caller, so the caller's own (missing) allowance is checked and the
    /// signer's funds stay put.
    function testFuzz_permitServesOnlyItsSigner(uint256 key, address caller, uint256 assets) public {
        key = bound(key, 1, SECP256K1_N - 1);
        assets = bound(assets, 1e6, 1e15);
        address signer = vm.addr(key);
        vm.assume(caller != signer && caller != address(0));
        usdc.mint(signer, assets);

        Permit memory toVault = _signPermit(key, address(vault), assets);
        vm.expectRevert(
            abi.encodeWithSelector(IERC20Errors.ERC20InsufficientAllowance.selector, address(vault), 0, assets)
        );
        vm.prank(caller);
        vault.depositWithPermit(assets, caller, toVault.deadline, toVault.v, toVault.r, toVault.s);

        Permit memory toBook = _signPermit(key, address(book), assets);
        uint256 paid = Math.min(assets, book.payoffAmount(1));
        vm.expectRevert(abi.encodeWithSelector(IERC20Errors.ERC20InsufficientAllowance.selector, address(book), 0, paid));
        vm.prank(caller);
        book.repayWithPermit(1, assets, toBook.deadline, toBook.v, toBook.r, toBook.s);

        ISocialVault social = ISocialVault(_createSocialVault());
        Permit memory toSocial = _signPermit(key, address(social), assets);
        vm.expectRevert(
            abi.encodeWithSelector(IERC20Errors.ERC20InsufficientAllowance.selector, address(social), 0, assets)
        );
        vm.prank(caller);
        social.depositWithPermit(assets, toSocial.deadline, toSocial.v, toSocial.r, toSocial.s);

        assertEq(usdc.balanceOf(signer), assets, "signer usdc");
        assertEq(usdc.nonces(signer), 0, "permit unused");
    }

    /// The Dec 2023 ERC-2771 + Multicall spoofing: a request signed by anyone but the owner, whose multicall subcall
    /// ends with the owner's address, runs as its signer and is refused; the vault keeps its funds.
    function testFuzz_forwardedMulticallCannotSpoof(uint256 attackerKey, uint256 amount) public {
        attackerKey = bound(attackerKey, 1, SECP256K1_N - 1);
        address attacker = vm.addr(attackerKey);
        address owner = vm.addr(OWNER_KEY);
        vm.assume(attacker != owner);
        amount = bound(amount, 1, LIMIT);
        address social = _createSocialVault();
        bytes memory data = _multicallWithSuffix(abi.encodeCall(ISocialVault.withdraw, (amount, attacker)), owner);

        // The target's answer to what the forwarder sends (data ‖ signer): the subcall sees the attacker.
        vm.prank(address(forwarder));
        (bool success, bytes memory returned) = social.call(abi.encodePacked(data, attacker));
        assertTrue(!success, "spoofed call succeeded");
        assertTrue(
            keccak256(returned)
                == keccak256(abi.encodeWithSelector(ISocialVault.SocialVaultUnauthorizedAccount.selector, attacker)),
            "revert reason"
        );

        // The real path, with the attacker's signed request.
        ERC2771Forwarder.ForwardRequestData memory request = _signRequest(attackerKey, social, data);
        vm.expectRevert(Errors.FailedCall.selector);
        forwarder.execute(request);

        assertEq(usdc.balanceOf(social), 10_000e6, "vault balance");
        assertEq(usdc.balanceOf(attacker), 0, "attacker balance");
    }

    /// The owner's forwarded multicall acts as the owner whatever address its subcalls end with.
    function testFuzz_forwardedMulticallActsAsSigner(address claimed, uint256 amount) public {
        amount = bound(amount, 1, LIMIT);
        address owner = vm.addr(OWNER_KEY);
        address social = _createSocialVault();
        bytes memory data =
            _multicallWithSuffix(abi.encodeCall(ISocialVault.withdraw, (amount, address(0xB0B))), claimed);

        forwarder.execute(_signRequest(OWNER_KEY, social, data));

        assertEq(usdc.balanceOf(address(0xB0B)), amount, "recipient");
        assertEq(ISocialVault(social).remainingDailyLimit(), LIMIT - amount, "daily limit");
        assertEq(forwarder.nonces(owner), 2, "owner nonces: create + multicall");
    }

    /* HELPERS */

    /// @dev The owner key's vault (daily limit 1,000 USDC), created through the forwarder, holding 10,000 USDC.
    function _createSocialVault() internal returns (address social) {
        address owner = vm.addr(OWNER_KEY);
        social = factory.vaultOf(owner);
        if (social != address(0)) return social;
        forwarder.execute(
            _signRequest(
                OWNER_KEY, address(factory), abi.encodeCall(SocialVaultFactory.createVault, (LIMIT, 1 hours, 1, 0))
            )
        );
        social = factory.vaultOf(owner);
        usdc.mint(social, 10_000e6);
    }

    /// @dev `multicall([call ‖ suffix])`.
    function _multicallWithSuffix(bytes memory call, address suffix) internal pure returns (bytes memory) {
        bytes[] memory calls = new bytes[](1);
        calls[0] = abi.encodePacked(call, suffix);
        return abi.encodeCall(Multicall.multicall, (calls));
    }

    function _signRequest(uint256 key, address to, bytes memory data)
        internal
        view
        returns (ERC2771Forwarder.ForwardRequestData memory request)
    {
        address from = vm.addr(key);
        request = ERC2771Forwarder.ForwardRequestData({
            from: from,
            to: to,
            value: 0,
            gas: 1_000_000,
            deadline: uint48(block.timestamp + 1 hours),
            data: data,
            signature: ""
        });
        bytes32 domain = keccak256(
            abi.encode(
                DOMAIN_TYPEHASH, keccak256("TrustMintForwarder"), keccak256("1"), block.chainid, address(forwarder)
            )
        );
        bytes32 structHash = keccak256(
            abi.encode(
                FORWARD_REQUEST_TYPEHASH,
                from,
                to,
                uint256(0),
                request.gas,
                forwarder.nonces(from),
                request.deadline,
                keccak256(data)
            )
        );
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(key, keccak256(abi.encodePacked("\x19\x01", domain, structHash)));
        request.signature = abi.encodePacked(r, s, v);
    }

    function _signPermit(uint256 key, address spender, uint256 value) internal view returns (Permit memory permit) {
        address owner = vm.addr(key);
        permit.deadline = block.timestamp + 1 hours;
        bytes32 structHash =
            keccak256(abi.encode(PERMIT_TYPEHASH, owner, spender, value, usdc.nonces(owner), permit.deadline));
        (permit.v, permit.r, permit.s) =
            vm.sign(key, keccak256(abi.encodePacked("\x19\x01", usdc.DOMAIN_SEPARATOR(), structHash)));
    }
}
