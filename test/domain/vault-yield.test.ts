import { expect } from "chai";
import type { VaultTransactionRow } from "../../domain/vault/repo.js";
import { yieldHistory } from "../../domain/vault/yield.js";

// The yield history's arithmetic on hand-made mirror rows: integers only, and every period's days
// add up to the position's value minus its net deposits.

const RATE_1 = 10n ** 18n; // 1 USDC per tmUSDC
const SHARES = (micro: bigint) => micro * 10n ** 12n; // tmUSDC at rate 1
const day = (n: number, hour = 12) => new Date(Date.UTC(2026, 10, n, hour));

const tx = (type: "deposit" | "withdraw", block: number, assets: bigint, shares: bigint, at: Date): VaultTransactionRow => ({
  txHash: `0x${block.toString(16).padStart(64, "0")}`,
  logIndex: 0,
  ordinal: 0,
  blockNumber: block,
  type,
  assets,
  shares,
  timestamp: at,
});

describe("vault yield history (integer arithmetic over the mirror)", () => {
  // Day 1: deposit 1,000 at rate 1. Day 3: a distribution moves the rate to 1.01 (+10 USDC).
  // Day 4: withdraw 500 tmUSDC at 1.01 (505 USDC). Day 5 (today): the rate is 1.02 (+5 USDC on 500).
  const transactions = [
    tx("deposit", 10, 1_000_000_000n, SHARES(1_000_000_000n), day(1)),
    tx("withdraw", 30, 505_000_000n, SHARES(500_000_000n), day(4)),
  ];
  const ratePoints = [{ blockNumber: 20, logIndex: 1, rate: (RATE_1 * 101n) / 100n, timestamp: day(3) }];
  const valueNow = 510_000_000n; // 500 tmUSDC at 1.02
  const now = day(5, 18);

  it("puts each day's yield on its day and sums to value now minus net deposits", () => {
    const result = yieldHistory({ period: "all", now, transactions, ratePoints, valueNow });
    expect(result.history.map((d) => [d.day, d.yieldMicro])).to.deep.equal([
      ["2026-11-01", 0n],
      ["2026-11-02", 0n],
      ["2026-11-03", 10_000_000n],
      ["2026-11-04", 0n],
      ["2026-11-05", 5_000_000n],
    ]);
    expect(result.totalYieldMicro).to.equal(valueNow - (1_000_000_000n - 505_000_000n));
    // Day 3: 10 on 1,000 for a day, annualised.
    expect(result.history[2]!.apy).to.equal(3.65);
    expect(result.averageAPY).to.be.greaterThan(0);
  });

  it("cuts the period to its last N days, today included, with empty days before the first deposit", () => {
    const week = yieldHistory({ period: "7d", now, transactions, ratePoints, valueNow });
    expect(week.history).to.have.length(7);
    expect(week.history[0]!.day).to.equal("2026-10-30");
    expect(week.history.at(-1)!.day).to.equal("2026-11-05");
    expect(week.totalYieldMicro).to.equal(15_000_000n);
    const twoDays = yieldHistory({ period: "7d", now: day(11), transactions, ratePoints, valueNow });
    expect(twoDays.history[0]!.day).to.equal("2026-11-05");
    expect(twoDays.totalYieldMicro).to.equal(5_000_000n);
  });

  it("answers zeros for a user without deposits", () => {
    const empty = yieldHistory({ period: "30d", now, transactions: [], ratePoints, valueNow: 0n });
    expect(empty.history).to.have.length(30);
    expect(empty.totalYieldMicro).to.equal(0n);
    expect(empty.averageAPY).to.equal(0);
  });
});
