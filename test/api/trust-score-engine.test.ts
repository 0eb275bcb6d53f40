import { expect } from "chai";
import fc from "fast-check";
import {
  applyModifiers,
  baseScore,
  computeBreakdown,
  fullMonthsBetween,
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
    const result = applyModifiers(60, mods, new Date(Date.UTC(2026, 1, 1)));
    expect(result.finalScore).to.equal(40);
    expect(result.impacts).to.deep.equal([-17, -3, 0]);
    expect(applyModifiers(0, mods, new Date()).finalScore).to.equal(0);
    // A penalty still takes at least a point; the bonus is 1 % rounded half up: 1 at 50, 0 at 49.
    expect(applyModifiers(10, [m("late_payment", 1)], new Date()).finalScore).to.equal(9);
    expect(applyModifiers(50, [m("on_time_bonus", 1)], new Date()).finalScore).to.equal(51);
    expect(applyModifiers(49, [m("on_time_bonus", 1)], new Date()).finalScore).to.equal(49);
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
    expect(
      applyModifiers(
        base,
        Array.from({ length: 30 }, () => bonus),
        new Date(),
      ).finalScore,
    ).to.equal(40);
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
          );
          return Number.isInteger(finalScore) && finalScore >= 0 && finalScore <= 100;
        },
      ),
    );
  });
});
