// A holder's yield by day, in integers (micro-USDC), from the mirror: the value of the shares
// held at each day's end, at the last rate the chain showed by then, less the USDC put in and
// plus the USDC taken out that day. Summed over every day it is the position's earned yield:
// value now minus net deposits (docs/decisions.md D-63).
import { DAY_MS } from "../../core/clock.js";
import { RATE_SCALE, type RatePoint, type VaultTransactionRow } from "./repo.js";

export const YIELD_PERIODS = ["7d", "30d", "90d", "1y", "all"] as const;
export type YieldPeriod = (typeof YIELD_PERIODS)[number];
const PERIOD_DAYS: Record<Exclude<YieldPeriod, "all">, number> = { "7d": 7, "30d": 30, "90d": 90, "1y": 365 };

const dayOf = (at: Date) => Math.floor(at.getTime() / DAY_MS);
const isoDay = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);

/** An APY figure (yield over the value that earned it, a year of such days), from integers. */
function apyOf(yieldMicro: bigint, valueMicro: bigint, days: number): number {
  if (valueMicro <= 0n || days <= 0) return 0;
  return Number((yieldMicro * 365n * 1_000_000n) / (valueMicro * BigInt(days))) / 1_000_000;
}

export interface DailyYield {
  day: string;
  yieldMicro: bigint;
  apy: number;
}

export interface YieldHistory {
  totalYieldMicro: bigint;
  averageAPY: number;
  history: DailyYield[];
}

/**
 * @param transactions the holder's deposits and withdrawals, oldest first
 * @param ratePoints the vault's rates after each yield distribution, oldest first
 * @param valueNow what the holder's shares redeem for now (the contract's previewRedeem)
 */
export function yieldHistory(input: {
  period: YieldPeriod;
  now: Date;
  transactions: VaultTransactionRow[];
  ratePoints: RatePoint[];
  valueNow: bigint;
}): YieldHistory {
  const today = dayOf(input.now);
  const firstDay = input.period === "all" ? undefined : today - PERIOD_DAYS[input.period] + 1;
  if (input.transactions.length === 0) {
    const from = firstDay ?? today;
    const history = [];
    for (let day = from; day <= today; day++) history.push({ day: isoDay(day), yieldMicro: 0n, apy: 0 });
    return { totalYieldMicro: 0n, averageAPY: 0, history };
  }

  // Every observation in chain order: a transaction shows the rate it converted at, a
  // distribution the rate it left.
  type Observation = { blockNumber: number; logIndex: number; day: number; rate: bigint; flow?: VaultTransactionRow };
  const observations: Observation[] = [
    ...input.transactions.map((tx) => ({
      blockNumber: tx.blockNumber,
      logIndex: tx.logIndex,
      day: Math.min(dayOf(tx.timestamp), today),
      rate: tx.shares === 0n ? 0n : (tx.assets * RATE_SCALE) / tx.shares,
      flow: tx,
    })),
    ...input.ratePoints.map((point) => ({ ...point, day: Math.min(dayOf(point.timestamp), today) })),
  ].sort((a, b) => a.blockNumber - b.blockNumber || a.logIndex - b.logIndex);

  const startDay = Math.min(dayOf(input.transactions[0]!.timestamp), today);
  let shares = 0n;
  let rate = 0n;
  let valueBefore = 0n;
  let next = 0;
  const history: DailyYield[] = [];
  let total = 0n;
  let weightedValue = 0n;
  let earningDays = 0;
  for (let day = Math.min(startDay, firstDay ?? startDay); day <= today; day++) {
    let netFlow = 0n;
    let depositedToday = 0n;
    for (; next < observations.length && observations[next]!.day <= day; next++) {
      const observation = observations[next]!;
      if (observation.rate > 0n) rate = observation.rate;
      const flow = observation.flow;
      if (flow?.type === "deposit") {
        shares += flow.shares;
        netFlow += flow.assets;
        depositedToday += flow.assets;
      } else if (flow?.type === "withdraw") {
        shares -= flow.shares;
        netFlow -= flow.assets;
      }
    }
    const valueAfter = day === today ? input.valueNow : (shares * rate) / RATE_SCALE;
    const dayYield = valueAfter - valueBefore - netFlow;
    // What earned that day: the value held at its start and what was deposited during it.
    const earning = valueBefore + depositedToday;
    if (firstDay === undefined || day >= firstDay) {
      history.push({ day: isoDay(day), yieldMicro: dayYield, apy: apyOf(dayYield, earning, 1) });
      total += dayYield;
      if (earning > 0n) {
        weightedValue += earning;
        earningDays += 1;
      }
    }
    valueBefore = valueAfter;
  }
  return {
    totalYieldMicro: total,
    averageAPY: earningDays === 0 ? 0 : apyOf(total, weightedValue / BigInt(earningDays), earningDays),
    history,
  };
}
