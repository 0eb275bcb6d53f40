import { expect } from "chai";
import fc from "fast-check";
import {
  applyModifiers,
  baseScore,
  bonusRoomOf,
  computeBreakdown,
  fullMonthsBetween,
  REPAYMENT_PACE_DAYS,
  repaymentRefusal,
  TIERS,
  tierFor,
  volumePoints,
} from "../../domain/trust-score/rules.js";

const USDC = 1_000_000n;

describe("trust score engine", () => {
  it("counts full calendar months of account age", () => {
    const at = (iso: string) => new Date(iso);
    expect(fullMonthsBetween(at("2026-01-15T10:00:00Z"), at("2026-02-15T09:59:59Z"))).to.equal(0);
    expect(fullMonthsBetween(at("2026-01-15T10:00:00Z"), at("2026-02-15T10:00:00Z"))).to.equal(1);
    expect(fullMonthsBetween(at("2026-01-31T00:00:00Z"), at("2026-02-28T23:00:00Z"))).to.equal(0);
    expect(fullMonthsBetween(at("2026-01-31T00:00:00Z"), at("2026-03-01T00:00:00Z"))).to.equal(1);
    expect(fullMonthsBetween(at("2026-01-01T00:00:00Z"), at("2028-01-01T00:00:00Z"))).to.equal(24);
  });

  it("scores volume 4 points per factor of ten of whole USDC, max 20", () => {
    expect(
      [0n, 999_999n, USDC, 9n * USDC, 10n * USDC, 100n * USDC, 1_000n * USDC, 99_990n * USDC, 100_000n * USDC, 10n ** 20n].map(
        volumePoints,
      ),
    ).to.deep.equal([0, 0, 1, 4, 4, 8, 12, 19, 20, 20]);
  });

  it("caps every component and maps the spec's tier table", () => {
    const breakdown = computeBreakdown(
      { createdAt: new Date("2020-01-01"), levelIndex: 99, onTimeRepayments: 1_000, totalVolumeMicro: 10n ** 15n, activeGuardians: 9 },
      new Date("2026-01-01"),
    );
    expect(breakdown).to.deep.equal({ seniority: 12, repaymentHistory: 40, transactionVolume: 20, socialNetwork: 15, levelBonus: 13 });
    expect(baseScore(breakdown)).to.equal(100);
    expect([0, 30, 31, 50, 51, 70, 71, 85, 86, 100].map((s) => tierFor(s).tier)).to.deep.equal([
      "New",
      "New",
      "Building",
      "Building",
      "Established",
      "Established",
      "Trusted",
      "Trusted",
      "Elite",
      "Elite",
    ]);
    expect(TIERS.map((t) => t.interestRate)).to.deep.equal([0.05, 0.04, 0.03, 0.02, 0.01]);
  });

  it("applies modifiers in order on the running score", () => {
    const m = (type: "late_payment" | "default" | "on_time_bonus", day: number) => ({
      type,
      appliedAt: new Date(Date.UTC(2026, 0, day)),
      expiresAt: null,
    });
    const mods = [m("default", 2), m("late_payment", 1), m("on_time_bonus", 3)];
    // 60 -5% -> 57, -30% (17.1 -> 17) -> 40, +1% (0.4 rounds to 0: no minimum for the bonus) -> 40
    const result = applyModifiers(60, mods, new Date(Date.UTC(2026, 1, 1)), 40);
    expect(result.finalScore).to.equal(40);
    expect(result.impacts).to.deep.equal([-17, -3, 0]);
    expect(applyModifiers(0, mods, new Date(), 40).finalScore).to.equal(0);
    // A penalty still takes at least a point; the bonus is 1 % rounded half up: 1 at 50, 0 at 49.
    expect(applyModifiers(10, [m("late_payment", 1)], new Date(), 40).finalScore).to.equal(9);
    expect(applyModifiers(50, [m("on_time_bonus", 1)], new Date(), 40).finalScore).to.equal(51);
    expect(applyModifiers(49, [m("on_time_bonus", 1)], new Date(), 40).finalScore).to.equal(49);
  });

  it("keeps a new user's 30 on-time repayments within repaymentHistory's cap (no whole point per bonus)", () => {
    const bonus = { type: "on_time_bonus" as const, appliedAt: new Date(Date.UTC(2026, 0, 1)), expiresAt: null };
    // repaymentHistory caps at 40 (20 repayments); ten more repayments' bonuses at 1 % of 40 round to nothing.
    const base = baseScore(
      computeBreakdown(
        { createdAt: new Date(), levelIndex: 0, onTimeRepayments: 30, totalVolumeMicro: 0n, activeGuardians: 0 },
        new Date(),
      ),
    );
    expect(base).to.equal(40);
    const breakdown = computeBreakdown(
      { createdAt: new Date(), levelIndex: 0, onTimeRepayments: 30, totalVolumeMicro: 0n, activeGuardians: 0 },
      new Date(),
    );
    expect(
      applyModifiers(
        base,
        Array.from({ length: 30 }, () => bonus),
        new Date(),
        bonusRoomOf(breakdown),
      ).finalScore,
    ).to.equal(40);
  });

  it("keeps the on-time bonuses within what repaymentHistory leaves of its 40 points (D-88)", () => {
    const bonus = (day: number) => ({ type: "on_time_bonus" as const, appliedAt: new Date(Date.UTC(2026, 0, day)), expiresAt: null });
    // Before D-88: 45 bonuses at a score of 55 added a point each (55 -> 100). Now 10 repayments
    // (20 points) leave 20 points of room, and at 1 % of 55..60 each bonus adds 1: 20 at most.
    const room = bonusRoomOf({ repaymentHistory: 20 });
    expect(room).to.equal(20);
    const stacked = applyModifiers(
      55,
      Array.from({ length: 45 }, (_, i) => bonus(i + 1)),
      new Date(),
      room,
    );
    expect(stacked.finalScore).to.equal(75);
    expect(stacked.impacts.filter((impact) => impact > 0)).to.have.length(20);
    // A penalty between bonuses still applies in full: room caps only the bonuses.
    const late = { type: "late_payment" as const, appliedAt: new Date(Date.UTC(2026, 0, 2, 12)), expiresAt: null };
    expect(applyModifiers(60, [bonus(1), late, bonus(3)], new Date(), 1).impacts).to.deep.equal([1, -3, 0]);
    expect(bonusRoomOf({ repaymentHistory: 40 })).to.equal(0);
  });

  it("counts a closing on-time repayment only from the borrower's own money, one per 7 days (D-88)", () => {
    const at = new Date(Date.UTC(2026, 5, 10));
    const daysBefore = (days: number) => new Date(at.getTime() - days * 86_400_000);
    expect(repaymentRefusal({ paidByOthers: 0n, lastCountedAt: null, at })).to.equal(null);
    expect(repaymentRefusal({ paidByOthers: 1n, lastCountedAt: null, at })).to.equal("paid_by_others");
    expect(repaymentRefusal({ paidByOthers: 0n, lastCountedAt: daysBefore(6.99), at })).to.equal("pace");
    expect(repaymentRefusal({ paidByOthers: 0n, lastCountedAt: daysBefore(REPAYMENT_PACE_DAYS), at })).to.equal(null);
  });

  it("property: scores stay integers in 0..100 whatever the inputs", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000 }),
        fc.bigInt({ min: 0n, max: 10n ** 18n }),
        fc.integer({ min: 0, max: 10 }),
        fc.integer({ min: 0, max: 6 }),
        fc.array(
          fc.constantFrom("late_payment", "default", "on_time_bonus") as fc.Arbitrary<"late_payment" | "default" | "on_time_bonus">,
          { maxLength: 20 },
        ),
        (repayments, volume, guardians, level, types) => {
          const base = baseScore(
            computeBreakdown(
              {
                createdAt: new Date("2025-01-01"),
                levelIndex: level,
                onTimeRepayments: repayments,
                totalVolumeMicro: volume,
                activeGuardians: guardians,
              },
              new Date("2026-06-01"),
            ),
          );
          const { finalScore } = applyModifiers(
            base,
            types.map((type, i) => ({ type, appliedAt: new Date(i), expiresAt: null })),
            new Date(),
            40,
          );
          return Number.isInteger(finalScore) && finalScore >= 0 && finalScore <= 100;
        },
      ),
    );
  });
});
