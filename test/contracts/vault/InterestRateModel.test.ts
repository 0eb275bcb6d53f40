import { expect } from "chai";
import { network } from "hardhat";
import { WAD } from "../lending/lending-fixture.js";

const { ethers, networkHelpers } = await network.create();

const pct = (n: number) => (BigInt(Math.round(n * 1e6)) * WAD) / 100_000_000n;
type Rates = [bigint, bigint, bigint, bigint, bigint];
const DEFAULT_RATES: Rates = [pct(2), pct(5), pct(10), pct(25), pct(60)];
const KNOTS = [0n, pct(50), pct(80), pct(95), WAD];

describe("InterestRateModel", () => {
  async function deploy() {
    const [admin, stranger] = await ethers.getSigners();
    const model = await ethers.deployContract("InterestRateModel", [admin.address]);
    return { model, admin, stranger };
  }

  describe("constructor", () => {
    it("grants the admin role and sets the default curve", async () => {
      const { model, admin } = await networkHelpers.loadFixture(deploy);
      expect(await model.hasRole(await model.DEFAULT_ADMIN_ROLE(), admin.address)).to.equal(true);
      expect(await model.borrowRates()).to.deep.equal(DEFAULT_RATES);
      expect(await model.utilizationKnots()).to.deep.equal(KNOTS);
      expect(await model.reserveFactor()).to.equal(0n);
      expect(await model.MAX_BORROW_RATE()).to.equal(WAD);
      expect(await model.MAX_RESERVE_FACTOR()).to.equal(WAD / 2n);
    });

    it("emits the default rates", async () => {
      const [admin] = await ethers.getSigners();
      const model = await ethers.deployContract("InterestRateModel", [admin.address]);
      await expect(model.deploymentTransaction()).to.emit(model, "InterestRateModelBorrowRatesUpdated").withArgs(DEFAULT_RATES);
    });

    it("reverts when the admin is zero", async () => {
      const { model } = await networkHelpers.loadFixture(deploy);
      await expect(ethers.deployContract("InterestRateModel", [ethers.ZeroAddress])).to.be.revertedWithCustomError(
        model,
        "InterestRateModelZeroAddress",
      );
    });
  });

  describe("borrowRate / supplyRate / ratePoints", () => {
    it("lists the five points with supply = borrow * utilization", async () => {
      const { model } = await networkHelpers.loadFixture(deploy);
      const points = await model.ratePoints();
      expect(points.map((p) => [p.utilization, p.borrowRate, p.supplyRate])).to.deep.equal([
        [0n, pct(2), 0n],
        [pct(50), pct(5), pct(2.5)],
        [pct(80), pct(10), pct(8)],
        [pct(95), pct(25), pct(23.75)],
        [WAD, pct(60), pct(60)],
      ]);
    });

    it("interpolates linearly between the points and is flat above full utilization", async () => {
      const { model } = await networkHelpers.loadFixture(deploy);
      expect(await model.borrowRate(pct(25))).to.equal(pct(3.5));
      expect(await model.borrowRate(pct(65))).to.equal(pct(7.5));
      expect(await model.borrowRate(pct(87.5))).to.equal(pct(17.5));
      expect(await model.borrowRate(pct(97.5))).to.equal(pct(42.5));
      expect(await model.borrowRate(2n * WAD)).to.equal(pct(60));
      expect(await model.supplyRate(2n * WAD)).to.equal(pct(60));
      expect(await model.supplyRate(pct(65))).to.equal((pct(7.5) * pct(65)) / WAD);
    });
  });

  describe("setBorrowRates", () => {
    it("sets the rates and emits them", async () => {
      const { model } = await networkHelpers.loadFixture(deploy);
      const rates: Rates = [pct(1), pct(1), pct(8), pct(30), WAD];
      await expect(model.setBorrowRates(rates)).to.emit(model, "InterestRateModelBorrowRatesUpdated").withArgs(rates);
      expect(await model.borrowRates()).to.deep.equal(rates);
      expect(await model.borrowRate(pct(90))).to.equal(pct(8) + ((pct(30) - pct(8)) * 2n) / 3n);
    });

    it("reverts when a rate is above 100 %", async () => {
      const { model } = await networkHelpers.loadFixture(deploy);
      await expect(model.setBorrowRates([0n, 0n, 0n, 0n, WAD + 1n]))
        .to.be.revertedWithCustomError(model, "InterestRateModelRateTooHigh")
        .withArgs(4n, WAD + 1n, WAD);
    });

    it("reverts when a rate is below the previous one", async () => {
      const { model } = await networkHelpers.loadFixture(deploy);
      await expect(model.setBorrowRates([pct(2), pct(5), pct(4), pct(25), pct(60)]))
        .to.be.revertedWithCustomError(model, "InterestRateModelRatesNotMonotonic")
        .withArgs(2n, pct(4), pct(5));
    });

    it("reverts for a caller without the admin role", async () => {
      const { model, stranger } = await networkHelpers.loadFixture(deploy);
      await expect(model.connect(stranger).setBorrowRates(DEFAULT_RATES))
        .to.be.revertedWithCustomError(model, "AccessControlUnauthorizedAccount")
        .withArgs(stranger.address, await model.DEFAULT_ADMIN_ROLE());
    });
  });

  describe("setReserveFactor", () => {
    it("sets the factor, emits it, and lowers the supply rate", async () => {
      const { model } = await networkHelpers.loadFixture(deploy);
      await expect(model.setReserveFactor(pct(10)))
        .to.emit(model, "InterestRateModelReserveFactorUpdated")
        .withArgs(pct(10));
      expect(await model.reserveFactor()).to.equal(pct(10));
      expect(await model.supplyRate(WAD)).to.equal(pct(54));
    });

    it("reverts above 50 %", async () => {
      const { model } = await networkHelpers.loadFixture(deploy);
      await expect(model.setReserveFactor(WAD / 2n + 1n))
        .to.be.revertedWithCustomError(model, "InterestRateModelReserveFactorTooHigh")
        .withArgs(WAD / 2n + 1n, WAD / 2n);
    });

    it("reverts for a caller without the admin role", async () => {
      const { model, stranger } = await networkHelpers.loadFixture(deploy);
      await expect(model.connect(stranger).setReserveFactor(0n))
        .to.be.revertedWithCustomError(model, "AccessControlUnauthorizedAccount")
        .withArgs(stranger.address, await model.DEFAULT_ADMIN_ROLE());
    });
  });
});
