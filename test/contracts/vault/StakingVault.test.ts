import { expect } from "chai";
import { network } from "hardhat";
import { DAY, deployLending, nextHour, USDC, WAD } from "../lending/lending-fixture.js";

const { ethers, networkHelpers } = await network.create();

const VIRTUAL_SHARES = 10n ** 12n;
const SHARES = (usdc: bigint) => usdc * VIRTUAL_SHARES; // 1 USDC = 1 tmUSDC (18 decimals) in a fresh vault

/** USDC per tmUSDC (WAD) for the given totals, as the vault computes it. */
const rate = (assets: bigint, supply: bigint) => ((assets + 1n) * VIRTUAL_SHARES * WAD) / (supply + VIRTUAL_SHARES);

describe("StakingVault", () => {
  const deploy = () => deployLending(ethers);

  /**
   * Alice deposits 1,000 USDC; the operator funds a 400 USDC loan with a 40 USDC fee (idle: 600, reserve: 40) to a
   * borrower that never repaid a loan in full: 5 % of it, 20 USDC, is provisioned out of the exit price (D-126).
   */
  async function withLoan() {
    const f = await deployLending(ethers);
    await f.vault.connect(f.alice).deposit(USDC(1_000), f.alice.address);
    // On a whole hour: due exactly 30 days on (the loan book rounds a due date up to the hour).
    await networkHelpers.time.setNextBlockTimestamp(nextHour(await networkHelpers.time.latest()));
    await f.book.connect(f.operator).fundLoan(ethers.id("loan-1"), f.borrower.address, USDC(400), USDC(20), USDC(40), 30);
    return f;
  }

  /** The same principal out without interest: the share price holds still from block to block (no accrual). */
  async function withPrincipalOut() {
    const f = await deployLending(ethers);
    await f.vault.connect(f.alice).deposit(USDC(1_000), f.alice.address);
    await f.book.connect(f.operator).fundLoan(ethers.id("loan-1"), f.borrower.address, USDC(400), 0n, USDC(40), 30);
    return f;
  }

  describe("constructor", () => {
    it("sets the share token, asset, defaults and admin", async () => {
      const { vault, usdc, model, admin } = await networkHelpers.loadFixture(deploy);
      expect(await vault.name()).to.equal("TrustMint Staked USDC");
      expect(await vault.symbol()).to.equal("tmUSDC");
      expect(await vault.decimals()).to.equal(18n);
      expect(await vault.asset()).to.equal(await usdc.getAddress());
      expect(await vault.minDeposit()).to.equal(USDC(1));
      expect(await vault.MAX_MIN_DEPOSIT()).to.equal(USDC(1_000));
      expect(await vault.insuranceCoverageBps()).to.equal(8_000n);
      expect(await vault.interestRateModel()).to.equal(await model.getAddress());
      expect(await vault.hasRole(await vault.DEFAULT_ADMIN_ROLE(), admin.address)).to.equal(true);
      expect(await vault.exchangeRate()).to.equal(WAD);
      expect(await vault.totalAssets()).to.equal(0n);
      expect(await vault.utilization()).to.equal(0n);
    });

    it("reverts when the model or the admin is zero", async () => {
      const { vault, usdc, model, admin, forwarder } = await networkHelpers.loadFixture(deploy);
      const trusted = await forwarder.getAddress();
      await expect(
        ethers.deployContract("StakingVault", [await usdc.getAddress(), ethers.ZeroAddress, admin.address, trusted]),
      ).to.be.revertedWithCustomError(vault, "StakingVaultZeroAddress");
      await expect(
        ethers.deployContract("StakingVault", [await usdc.getAddress(), await model.getAddress(), ethers.ZeroAddress, trusted]),
      ).to.be.revertedWithCustomError(vault, "StakingVaultZeroAddress");
    });

    it("reverts when the forwarder is zero", async () => {
      const { vault, usdc, model, admin } = await networkHelpers.loadFixture(deploy);
      await expect(
        ethers.deployContract("StakingVault", [await usdc.getAddress(), await model.getAddress(), admin.address, ethers.ZeroAddress]),
      ).to.be.revertedWithCustomError(vault, "StakingVaultZeroAddress");
    });
    it("reverts for an asset with more than 18 decimals", async () => {
      const { vault, model, admin } = await networkHelpers.loadFixture(deploy);
      // A contract answering 19 to every call: init code copying the 10-byte runtime `PUSH1 19, PUSH1 0, MSTORE,
      // PUSH1 32, PUSH1 0, RETURN`.
      const tx = await admin.sendTransaction({ data: "0x600a600c600039600a6000f3" + "60136000526020" + "6000f3" });
      const token = (await tx.wait())!.contractAddress!;
      await expect(ethers.deployContract("StakingVault", [token, await model.getAddress(), admin.address, admin.address]))
        .to.be.revertedWithCustomError(vault, "StakingVaultUnsupportedAsset")
        .withArgs(19n);
    });
  });

  describe("deposit", () => {
    it("mints tmUSDC 1:1 in a fresh vault and emits Deposit", async () => {
      const { vault, usdc, alice, bob } = await networkHelpers.loadFixture(deploy);
      await expect(vault.connect(alice).deposit(USDC(100), bob.address))
        .to.emit(vault, "Deposit")
        .withArgs(alice.address, bob.address, USDC(100), SHARES(USDC(100)))
        .and.to.emit(usdc, "Transfer")
        .withArgs(alice.address, await vault.getAddress(), USDC(100));
      expect(await vault.balanceOf(bob.address)).to.equal(SHARES(USDC(100)));
      expect(await vault.totalAssets()).to.equal(USDC(100));
      expect(await vault.exchangeRate()).to.equal(WAD);
    });

    it("reverts below the minimum deposit (AMOUNT_TOO_SMALL)", async () => {
      const { vault, alice } = await networkHelpers.loadFixture(deploy);
      await expect(vault.connect(alice).deposit(USDC(1) - 1n, alice.address))
        .to.be.revertedWithCustomError(vault, "StakingVaultDepositTooSmall")
        .withArgs(USDC(1) - 1n, USDC(1));
    });

    it("reverts with EnforcedPause while paused (VAULT_PAUSED)", async () => {
      const { vault, pauser, alice } = await networkHelpers.loadFixture(deploy);
      await vault.connect(pauser).pause();
      await expect(vault.connect(alice).deposit(USDC(10), alice.address)).to.be.revertedWithCustomError(vault, "EnforcedPause");
    });

    it("reverts with the token's error when the depositor lacks USDC (INSUFFICIENT_BALANCE)", async () => {
      const { vault, usdc } = await networkHelpers.loadFixture(deploy);
      const poor = (await ethers.getSigners())[12];
      await usdc.connect(poor).approve(await vault.getAddress(), ethers.MaxUint256);
      await expect(vault.connect(poor).deposit(USDC(5), poor.address))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientBalance")
        .withArgs(poor.address, 0n, USDC(5));
    });
  });

  describe("mint", () => {
    it("charges previewMint and emits Deposit", async () => {
      const { vault, alice } = await networkHelpers.loadFixture(deploy);
      const shares = SHARES(USDC(50));
      const assets = await vault.previewMint(shares);
      expect(assets).to.equal(USDC(50));
      await expect(vault.connect(alice).mint(shares, alice.address))
        .to.emit(vault, "Deposit")
        .withArgs(alice.address, alice.address, assets, shares);
    });

    it("reverts when the assets are below the minimum deposit", async () => {
      const { vault, alice } = await networkHelpers.loadFixture(deploy);
      await expect(vault.connect(alice).mint(SHARES(USDC(1) / 2n), alice.address))
        .to.be.revertedWithCustomError(vault, "StakingVaultDepositTooSmall")
        .withArgs(USDC(1) / 2n, USDC(1));
    });

    it("reverts with EnforcedPause while paused", async () => {
      const { vault, pauser, alice } = await networkHelpers.loadFixture(deploy);
      await vault.connect(pauser).pause();
      await expect(vault.connect(alice).mint(SHARES(USDC(10)), alice.address)).to.be.revertedWithCustomError(vault, "EnforcedPause");
    });
  });

  describe("withdraw", () => {
    it("burns previewWithdraw shares and emits Withdraw", async () => {
      const { vault, usdc, alice, bob } = await networkHelpers.loadFixture(withPrincipalOut);
      const shares = await vault.previewWithdraw(USDC(100));
      await expect(vault.connect(alice).withdraw(USDC(100), bob.address, alice.address))
        .to.emit(vault, "Withdraw")
        .withArgs(alice.address, bob.address, alice.address, USDC(100), shares)
        .and.to.emit(usdc, "Transfer")
        .withArgs(await vault.getAddress(), bob.address, USDC(100));
    });

    it("lets an approved spender withdraw and refuses one without allowance", async () => {
      const { vault, alice, bob } = await networkHelpers.loadFixture(withPrincipalOut);
      const shares = await vault.previewWithdraw(USDC(100));
      await expect(vault.connect(bob).withdraw(USDC(100), bob.address, alice.address))
        .to.be.revertedWithCustomError(vault, "ERC20InsufficientAllowance")
        .withArgs(bob.address, 0n, shares);
      await vault.connect(alice).approve(bob.address, shares);
      await expect(vault.connect(bob).withdraw(USDC(100), bob.address, alice.address))
        .to.emit(vault, "Withdraw")
        .withArgs(bob.address, bob.address, alice.address, USDC(100), shares);
    });

    it("reverts above the owner's assets with ERC4626ExceededMaxWithdraw (INSUFFICIENT_BALANCE)", async () => {
      const { vault, alice } = await networkHelpers.loadFixture(withPrincipalOut);
      await expect(vault.connect(alice).withdraw(USDC(1_001), alice.address, alice.address))
        .to.be.revertedWithCustomError(vault, "ERC4626ExceededMaxWithdraw")
        .withArgs(alice.address, USDC(1_001), USDC(980)); // the exit price: less the loan's 20 USDC provision
    });

    it("reverts above the idle USDC with StakingVaultInsufficientLiquidity (INSUFFICIENT_LIQUIDITY)", async () => {
      const { vault, alice } = await networkHelpers.loadFixture(withPrincipalOut);
      await expect(vault.connect(alice).withdraw(USDC(700), alice.address, alice.address))
        .to.be.revertedWithCustomError(vault, "StakingVaultInsufficientLiquidity")
        .withArgs(USDC(700), USDC(600));
      await expect(vault.connect(alice).withdraw(USDC(600), alice.address, alice.address)).to.emit(vault, "Withdraw");
    });

    it("goes on while paused: a pause never traps depositors", async () => {
      const { vault, pauser, alice } = await networkHelpers.loadFixture(withPrincipalOut);
      await vault.connect(pauser).pause();
      await expect(vault.connect(alice).withdraw(USDC(1), alice.address, alice.address)).to.emit(vault, "Withdraw");
    });
  });

  describe("redeem", () => {
    it("pays previewRedeem and emits Withdraw", async () => {
      const { vault, alice } = await networkHelpers.loadFixture(withPrincipalOut);
      const shares = SHARES(USDC(250));
      const assets = await vault.previewRedeem(shares);
      expect(assets).to.equal(USDC(245)); // at the exit price, 0.98 with the loan's provision
      await expect(vault.connect(alice).redeem(shares, alice.address, alice.address))
        .to.emit(vault, "Withdraw")
        .withArgs(alice.address, alice.address, alice.address, assets, shares);
    });

    it("reverts above the owner's shares with ERC4626ExceededMaxRedeem (INSUFFICIENT_BALANCE)", async () => {
      const { vault, alice } = await networkHelpers.loadFixture(withPrincipalOut);
      const balance = await vault.balanceOf(alice.address);
      await expect(vault.connect(alice).redeem(balance + 1n, alice.address, alice.address))
        .to.be.revertedWithCustomError(vault, "ERC4626ExceededMaxRedeem")
        .withArgs(alice.address, balance + 1n, balance);
    });

    it("reverts above the idle USDC with StakingVaultInsufficientLiquidity", async () => {
      const { vault, alice } = await networkHelpers.loadFixture(withPrincipalOut);
      await expect(vault.connect(alice).redeem(SHARES(USDC(700)), alice.address, alice.address))
        .to.be.revertedWithCustomError(vault, "StakingVaultInsufficientLiquidity")
        .withArgs(USDC(686), USDC(600));
    });

    it("goes on while paused", async () => {
      const { vault, pauser, alice } = await networkHelpers.loadFixture(withPrincipalOut);
      await vault.connect(pauser).pause();
      await expect(vault.connect(alice).redeem(SHARES(USDC(1)), alice.address, alice.address)).to.emit(vault, "Withdraw");
    });
  });

  describe("max* views", () => {
    // The shares the 600 idle USDC redeem at the exit price (980 USDC for 1,000 shares), rounded down.
    const IDLE_SHARES = (USDC(600) * (SHARES(USDC(1_000)) + VIRTUAL_SHARES)) / (USDC(980) + 1n);

    it("cap withdrawals by the idle USDC", async () => {
      const { vault, alice, bob } = await networkHelpers.loadFixture(withPrincipalOut);
      expect(await vault.maxWithdraw(alice.address)).to.equal(USDC(600));
      expect(await vault.maxRedeem(alice.address)).to.equal(IDLE_SHARES);
      expect(await vault.maxWithdraw(bob.address)).to.equal(0n);
      expect(await vault.maxDeposit(alice.address)).to.equal(ethers.MaxUint256);
      expect(await vault.maxMint(alice.address)).to.equal(ethers.MaxUint256);
    });

    it("return zero for entries while paused, and the same exits", async () => {
      const { vault, pauser, alice } = await networkHelpers.loadFixture(withPrincipalOut);
      await vault.connect(pauser).pause();
      for (const f of [vault.maxDeposit, vault.maxMint]) {
        expect(await f(alice.address)).to.equal(0n);
      }
      expect(await vault.maxWithdraw(alice.address)).to.equal(USDC(600));
      expect(await vault.maxRedeem(alice.address)).to.equal(IDLE_SHARES);
    });
  });

  describe("lend", () => {
    async function withLender() {
      const f = await deployLending(ethers);
      await f.vault.grantRole(await f.vault.LENDER_ROLE(), f.lender.address);
      await f.vault.connect(f.alice).deposit(USDC(1_000), f.alice.address);
      return f;
    }

    it("pays the borrower the net amount, keeps the fee as reserve and emits StakingVaultFundsLent", async () => {
      const { vault, usdc, lender, borrower } = await networkHelpers.loadFixture(withLender);
      const before = await usdc.balanceOf(borrower.address);
      await expect(vault.connect(lender).lend(7n, borrower.address, USDC(300), USDC(30), 0n, 0n, 0n))
        .to.emit(vault, "StakingVaultFundsLent")
        .withArgs(7n, borrower.address, USDC(300), USDC(30), USDC(300));
      expect((await usdc.balanceOf(borrower.address)) - before).to.equal(USDC(270));
      expect(await vault.totalBorrowed()).to.equal(USDC(300));
      expect(await vault.insuranceReserve()).to.equal(USDC(30));
      expect(await vault.idleAssets()).to.equal(USDC(700));
      expect(await vault.totalAssets()).to.equal(USDC(1_000));
      expect(await vault.utilization()).to.equal((USDC(300) * WAD) / USDC(1_000));
    });

    it("reverts for a caller without LENDER_ROLE", async () => {
      const { vault, stranger, borrower } = await networkHelpers.loadFixture(withLender);
      await expect(vault.connect(stranger).lend(1n, borrower.address, USDC(1), 0n, 0n, 0n, 0n))
        .to.be.revertedWithCustomError(vault, "AccessControlUnauthorizedAccount")
        .withArgs(stranger.address, await vault.LENDER_ROLE());
    });

    it("reverts on a zero borrower, zero principal, a fee not below the principal, or too little liquidity", async () => {
      const { vault, lender, borrower } = await networkHelpers.loadFixture(withLender);
      await expect(vault.connect(lender).lend(1n, ethers.ZeroAddress, USDC(1), 0n, 0n, 0n, 0n)).to.be.revertedWithCustomError(
        vault,
        "StakingVaultZeroAddress",
      );
      await expect(vault.connect(lender).lend(1n, borrower.address, 0n, 0n, 0n, 0n, 0n)).to.be.revertedWithCustomError(
        vault,
        "StakingVaultZeroAmount",
      );
      await expect(vault.connect(lender).lend(1n, borrower.address, USDC(1), USDC(1), 0n, 0n, 0n))
        .to.be.revertedWithCustomError(vault, "StakingVaultInvalidInsuranceFee")
        .withArgs(USDC(1), USDC(1));
      // 1,000 idle, nothing out: the utilization cap (90 %, D-101) lends 900.
      await expect(vault.connect(lender).lend(1n, borrower.address, USDC(901), 0n, 0n, 0n, 0n))
        .to.be.revertedWithCustomError(vault, "StakingVaultInsufficientLiquidity")
        .withArgs(USDC(901), USDC(900));
    });

    it("reverts with EnforcedPause while paused", async () => {
      const { vault, pauser, lender, borrower } = await networkHelpers.loadFixture(withLender);
      await vault.connect(pauser).pause();
      await expect(vault.connect(lender).lend(1n, borrower.address, USDC(1), 0n, 0n, 0n, 0n)).to.be.revertedWithCustomError(
        vault,
        "EnforcedPause",
      );
    });
  });

  describe("recordRepayment", () => {
    async function withLenderLoan() {
      const f = await deployLending(ethers);
      await f.vault.grantRole(await f.vault.LENDER_ROLE(), f.lender.address);
      await f.vault.connect(f.alice).deposit(USDC(1_000), f.alice.address);
      await f.vault.connect(f.lender).lend(1n, f.borrower.address, USDC(500), USDC(50), 0n, 0n, 0n);
      return f;
    }

    it("lowers totalBorrowed, locks the interest and emits StakingVaultRepaymentRecorded", async () => {
      const { vault, usdc, lender } = await networkHelpers.loadFixture(withLenderLoan);
      await expect(vault.connect(lender).recordRepayment(1n, USDC(200), USDC(10), true)) // the schedule (none: lent without interest) ends
        .to.emit(vault, "StakingVaultRepaymentRecorded")
        .withArgs(1n, USDC(200), USDC(10), 0n, USDC(300))
        .and.to.emit(vault, "StakingVaultProfitLocked")
        .withArgs(USDC(10), USDC(10), (end: bigint) => end > 0n);
      await usdc.connect(lender).transfer(await vault.getAddress(), USDC(210));
      expect(await vault.totalBorrowed()).to.equal(USDC(300));
      expect((await vault.totalAssets()) + (await vault.lockedProfit())).to.equal(USDC(1_010));
      expect(await vault.totalYield()).to.equal(USDC(10));
      await networkHelpers.time.increase(7 * DAY);
      expect(await vault.totalAssets()).to.equal(USDC(1_010));
    });

    it("routes the loan's reserve factor's share of the interest to the insurance reserve, the factor of its funding", async () => {
      const { vault, model, usdc, alice, borrower, lender } = await networkHelpers.loadFixture(deploy);
      await vault.grantRole(await vault.LENDER_ROLE(), lender.address);
      await vault.connect(alice).deposit(USDC(1_000), alice.address);
      await model.setReserveFactor(WAD / 10n);
      await vault.connect(lender).lend(1n, borrower.address, USDC(500), USDC(50), 0n, 0n, 0n);
      await model.setReserveFactor(WAD / 2n); // not retroactive (D-96)
      await expect(vault.connect(lender).recordRepayment(1n, 0n, USDC(10), true))
        .to.emit(vault, "StakingVaultRepaymentRecorded")
        .withArgs(1n, 0n, USDC(10), USDC(1), USDC(500));
      await usdc.connect(lender).transfer(await vault.getAddress(), USDC(10));
      expect(await vault.insuranceReserve()).to.equal(USDC(51));
      expect(await vault.totalYield()).to.equal(USDC(9));
      expect((await vault.totalAssets()) + (await vault.lockedProfit())).to.equal(USDC(1_009));
      await networkHelpers.time.increase(7 * DAY);
      expect(await vault.totalAssets()).to.equal(USDC(1_009));
    });

    it("reverts when the principal exceeds totalBorrowed, or for a caller without LENDER_ROLE", async () => {
      const { vault, lender, stranger } = await networkHelpers.loadFixture(withLenderLoan);
      await expect(vault.connect(lender).recordRepayment(1n, USDC(501), 0n, false))
        .to.be.revertedWithCustomError(vault, "StakingVaultExceedsBorrowed")
        .withArgs(USDC(501), USDC(500));
      await expect(vault.connect(stranger).recordRepayment(1n, 0n, 0n, false))
        .to.be.revertedWithCustomError(vault, "AccessControlUnauthorizedAccount")
        .withArgs(stranger.address, await vault.LENDER_ROLE());
    });
  });

  describe("recordLoss", () => {
    async function withLenderLoans() {
      const f = await deployLending(ethers);
      await f.vault.grantRole(await f.vault.LENDER_ROLE(), f.lender.address);
      await f.vault.connect(f.alice).deposit(USDC(1_000), f.alice.address);
      // Reserve 100 from a 500 loan's fee; a second loan of 200 without fee.
      await f.vault.connect(f.lender).lend(1n, f.borrower.address, USDC(500), USDC(100), 0n, 0n, 0n);
      await f.vault.connect(f.lender).lend(2n, f.borrower.address, USDC(200), 0n, 0n, 0n, 0n);
      return f;
    }

    it("covers 80 % from the reserve and records the uncovered rest", async () => {
      const { vault, lender } = await networkHelpers.loadFixture(withLenderLoans);
      const supply = await vault.totalSupply();
      // Loss 100: covered 80 from the reserve of 100, uncovered 20; assets 1,000 -> 980.
      await expect(vault.connect(lender).recordLoss(2n, USDC(100)))
        .to.emit(vault, "StakingVaultLossRecognized")
        .withArgs(2n, USDC(100), USDC(80), USDC(20), rate(USDC(980), supply));
      expect(await vault.insuranceReserve()).to.equal(USDC(20));
      expect(await vault.totalBorrowed()).to.equal(USDC(600));
      expect(await vault.totalAssets()).to.equal(USDC(980));
      expect(await vault.exchangeRate()).to.equal(rate(USDC(980), supply));
    });

    it("caps the cover at the reserve's balance and follows the coverage setting", async () => {
      const { vault, lender } = await networkHelpers.loadFixture(withLenderLoans);
      await vault.setInsuranceCoverage(10_000n);
      const supply = await vault.totalSupply();
      await expect(vault.connect(lender).recordLoss(1n, USDC(500)))
        .to.emit(vault, "StakingVaultLossRecognized")
        .withArgs(1n, USDC(500), USDC(100), USDC(400), rate(USDC(600), supply));
      expect(await vault.insuranceReserve()).to.equal(0n);
    });

    it("reverts when the loss exceeds totalBorrowed, or for a caller without LENDER_ROLE", async () => {
      const { vault, lender, stranger } = await networkHelpers.loadFixture(withLenderLoans);
      await expect(vault.connect(lender).recordLoss(1n, USDC(701)))
        .to.be.revertedWithCustomError(vault, "StakingVaultExceedsBorrowed")
        .withArgs(USDC(701), USDC(700));
      await expect(vault.connect(stranger).recordLoss(1n, 0n))
        .to.be.revertedWithCustomError(vault, "AccessControlUnauthorizedAccount")
        .withArgs(stranger.address, await vault.LENDER_ROLE());
    });
  });

  describe("distributeYield", () => {
    it("pulls the yield, locks it, raises the exchange rate over the period and emits StakingVaultYieldDistributed", async () => {
      const { vault, usdc, alice, yielder } = await networkHelpers.loadFixture(deploy);
      await vault.connect(alice).deposit(USDC(1_000), alice.address);
      const supply = await vault.totalSupply();
      await expect(vault.connect(yielder).distributeYield(USDC(50)))
        .to.emit(vault, "StakingVaultYieldDistributed")
        .withArgs(yielder.address, USDC(50), USDC(50), rate(USDC(1_000), supply))
        .and.to.emit(usdc, "Transfer")
        .withArgs(yielder.address, await vault.getAddress(), USDC(50));
      expect(await vault.exchangeRate()).to.equal(rate(USDC(1_000), supply));
      await networkHelpers.time.increase(7 * DAY);
      expect(await vault.exchangeRate()).to.equal(rate(USDC(1_050), supply));
      expect(await vault.totalYield()).to.equal(USDC(50));
      expect(await vault.previewRedeem(await vault.balanceOf(alice.address))).to.equal(USDC(1_050) - 1n);
    });

    it("works while paused", async () => {
      const { vault, alice, pauser, yielder } = await networkHelpers.loadFixture(deploy);
      await vault.connect(alice).deposit(USDC(1_000), alice.address);
      await vault.connect(pauser).pause();
      await expect(vault.connect(yielder).distributeYield(USDC(1))).to.emit(vault, "StakingVaultYieldDistributed");
    });

    it("reverts on zero, with no shares, or for a caller without YIELD_ROLE", async () => {
      const { vault, alice, yielder, stranger } = await networkHelpers.loadFixture(deploy);
      await expect(vault.connect(yielder).distributeYield(USDC(1))).to.be.revertedWithCustomError(vault, "StakingVaultNoShares");
      await vault.connect(alice).deposit(USDC(10), alice.address);
      await expect(vault.connect(yielder).distributeYield(0n)).to.be.revertedWithCustomError(vault, "StakingVaultZeroAmount");
      await expect(vault.connect(stranger).distributeYield(USDC(1)))
        .to.be.revertedWithCustomError(vault, "AccessControlUnauthorizedAccount")
        .withArgs(stranger.address, await vault.YIELD_ROLE());
    });
  });

  describe("admin setters", () => {
    it("setMinDeposit sets, emits, bounds and guards", async () => {
      const { vault, alice, stranger } = await networkHelpers.loadFixture(deploy);
      await expect(vault.setMinDeposit(USDC(5)))
        .to.emit(vault, "StakingVaultMinDepositUpdated")
        .withArgs(USDC(5));
      await expect(vault.connect(alice).deposit(USDC(4), alice.address))
        .to.be.revertedWithCustomError(vault, "StakingVaultDepositTooSmall")
        .withArgs(USDC(4), USDC(5));
      await expect(vault.setMinDeposit(USDC(1_000) + 1n))
        .to.be.revertedWithCustomError(vault, "StakingVaultMinDepositTooHigh")
        .withArgs(USDC(1_000) + 1n, USDC(1_000));
      await expect(vault.connect(stranger).setMinDeposit(0n))
        .to.be.revertedWithCustomError(vault, "AccessControlUnauthorizedAccount")
        .withArgs(stranger.address, await vault.DEFAULT_ADMIN_ROLE());
    });

    it("setInsuranceCoverage sets, emits, bounds and guards", async () => {
      const { vault, stranger } = await networkHelpers.loadFixture(deploy);
      await expect(vault.setInsuranceCoverage(5_000n)).to.emit(vault, "StakingVaultInsuranceCoverageUpdated").withArgs(5_000n);
      expect(await vault.insuranceCoverageBps()).to.equal(5_000n);
      await expect(vault.setInsuranceCoverage(10_001n))
        .to.be.revertedWithCustomError(vault, "StakingVaultCoverageTooHigh")
        .withArgs(10_001n, 10_000n);
      await expect(vault.connect(stranger).setInsuranceCoverage(0n))
        .to.be.revertedWithCustomError(vault, "AccessControlUnauthorizedAccount")
        .withArgs(stranger.address, await vault.DEFAULT_ADMIN_ROLE());
    });

    it("setInterestRateModel sets, emits, refuses zero and guards", async () => {
      const { vault, admin, stranger } = await networkHelpers.loadFixture(deploy);
      const other = await ethers.deployContract("InterestRateModel", [admin.address]);
      await expect(vault.setInterestRateModel(await other.getAddress()))
        .to.emit(vault, "StakingVaultInterestRateModelUpdated")
        .withArgs(await other.getAddress());
      expect(await vault.interestRateModel()).to.equal(await other.getAddress());
      await expect(vault.setInterestRateModel(ethers.ZeroAddress)).to.be.revertedWithCustomError(vault, "StakingVaultZeroAddress");
      await expect(vault.connect(stranger).setInterestRateModel(await other.getAddress()))
        .to.be.revertedWithCustomError(vault, "AccessControlUnauthorizedAccount")
        .withArgs(stranger.address, await vault.DEFAULT_ADMIN_ROLE());
    });
  });

  describe("pause / unpause", () => {
    it("toggle with events, refuse repeats and guard the roles: the pauser pauses, only the admin unpauses", async () => {
      const { vault, admin, pauser, stranger } = await networkHelpers.loadFixture(deploy);
      await expect(vault.connect(stranger).pause())
        .to.be.revertedWithCustomError(vault, "AccessControlUnauthorizedAccount")
        .withArgs(stranger.address, await vault.PAUSER_ROLE());
      await expect(vault.connect(admin).unpause()).to.be.revertedWithCustomError(vault, "ExpectedPause");
      await expect(vault.connect(pauser).pause()).to.emit(vault, "Paused").withArgs(pauser.address);
      expect(await vault.paused()).to.equal(true);
      await expect(vault.connect(pauser).pause()).to.be.revertedWithCustomError(vault, "EnforcedPause");
      for (const signer of [stranger, pauser]) {
        await expect(vault.connect(signer).unpause())
          .to.be.revertedWithCustomError(vault, "AccessControlUnauthorizedAccount")
          .withArgs(signer.address, await vault.DEFAULT_ADMIN_ROLE());
      }
      await expect(vault.connect(admin).unpause()).to.emit(vault, "Unpaused").withArgs(admin.address);
    });

    it("keeps repayments and defaults open while paused", async () => {
      const { vault, book, pauser, borrower } = await networkHelpers.loadFixture(withLoan);
      await vault.connect(pauser).pause();
      await expect(book.connect(borrower).repay(1n, USDC(100))).to.emit(vault, "StakingVaultRepaymentRecorded");
      await networkHelpers.time.increase(31 * DAY);
      await expect(book.markOverdue(1n)).to.emit(vault, "StakingVaultLoanImpaired");
      await networkHelpers.time.increase(7 * DAY);
      await expect(book.markDefaulted(1n)).to.emit(vault, "StakingVaultLossRecognized");
    });
  });

  describe("vaultStatus", () => {
    it("returns the GET /vault/status figures in one call", async () => {
      const { vault, model } = await networkHelpers.loadFixture(withLoan);
      const s = await vault.vaultStatus();
      const util = (USDC(400) * WAD) / USDC(1_000);
      // At the exit price: less the loan's 20 USDC provision (D-126).
      expect(s.totalAssets).to.equal(USDC(980));
      expect(s.idleAssets).to.equal(USDC(600));
      expect(s.totalBorrowed).to.equal(USDC(400));
      expect(s.insuranceReserve).to.equal(USDC(40));
      expect(s.utilization).to.equal(util);
      expect(s.borrowRate).to.equal(await model.borrowRate(util));
      // What the depositors earn (D-97): loan 1's 20 USDC over 30 days, a year at this pace, over the 1,000.
      const perYear = (((USDC(20) * 10n ** 12n) / BigInt(30 * DAY)) * BigInt(365 * DAY)) / 10n ** 12n;
      expect(s.supplyRate).to.equal((perYear * WAD) / USDC(980));
      expect(s.exchangeRate).to.equal(rate(USDC(980), SHARES(USDC(1_000))));
      expect(s.totalSupply).to.equal(SHARES(USDC(1_000)));
      expect(s.totalYield).to.equal(0n);
      expect(s.paused).to.equal(false);
    });
  });

  describe("share price", () => {
    it("rises with loan interest as it unlocks and falls only by a known loss, when the loan is impaired", async () => {
      const { vault, book, operator, borrower } = await networkHelpers.loadFixture(withLoan);
      const supply = await vault.totalSupply();
      await networkHelpers.time.increase(30 * DAY);
      await book.connect(borrower).repay(1n, ethers.MaxUint256); // 400 + 20 interest
      await networkHelpers.time.increase(7 * DAY);
      expect(await vault.exchangeRate()).to.equal(rate(USDC(1_020), supply));

      await book.connect(operator).fundLoan(ethers.id("loan-2"), borrower.address, USDC(100), 0n, 0n, 7);
      await networkHelpers.time.increase(8 * DAY);
      // 80 % of the 100 out is 80, capped at the reserve of 40 (loan 1's fee); expected loss 60.
      await expect(book.markOverdue(2n))
        .to.emit(vault, "StakingVaultLoanImpaired")
        .withArgs(2n, USDC(100), USDC(60), USDC(40), rate(USDC(960), supply));
      await networkHelpers.time.increase(7 * DAY);
      await expect(book.markDefaulted(2n))
        .to.emit(vault, "StakingVaultLossRecognized")
        .withArgs(2n, USDC(100), USDC(40), USDC(60), rate(USDC(960), supply));
    });
  });
});
