// The Trust Score engine: pure functions from inputs to components, base score, modifiers,
// final score, tier and borrowing power (service-spec part 2, Trust Score; the figures the
// spec leaves open are in docs/decisions.md, "Trust Score engine").
import { MICRO_PER_USDC } from "../../core/money.js";
import { LEVELS } from "../xp/levels.js";

/** The Trust Score's scale: 0 to 100 (service-spec part 3). */
export const MAX_SCORE = 100;

/**
 * The spec's tier table, plus the interest rate per tier in basis points, a flat rate for the
 * loan's term (what loan arithmetic uses) and as the spec's fraction (what the API shows): 5 %
 * (New) down to 1 % (Elite), the product reference's figures. `maxAmount` is the borrower's
 * credit across all its open loans, P2P and purchases, and `maxActiveLoans` how many it may have
 * open at once: one for New, so that an account with no history holds at most one 20 USDC loan
 * (docs/decisions.md, D-122).
 */
export const TIERS = [
  { tier: "New", minScore: 0, maxScore: 30, maxAmount: 20, maxDuration: 7, maxActiveLoans: 1, interestRateBps: 500, interestRate: 0.05 },
  {
    tier: "Building",
    minScore: 31,
    maxScore: 50,
    maxAmount: 50,
    maxDuration: 14,
    maxActiveLoans: 2,
    interestRateBps: 400,
    interestRate: 0.04,
  },
  {
    tier: "Established",
    minScore: 51,
    maxScore: 70,
    maxAmount: 100,
    maxDuration: 30,
    maxActiveLoans: 3,
    interestRateBps: 300,
    interestRate: 0.03,
  },
  {
    tier: "Trusted",
    minScore: 71,
    maxScore: 85,
    maxAmount: 200,
    maxDuration: 60,
    maxActiveLoans: 3,
    interestRateBps: 200,
    interestRate: 0.02,
  },
  {
    tier: "Elite",
    minScore: 86,
    maxScore: 100,
    maxAmount: 500,
    maxDuration: 90,
    maxActiveLoans: 3,
    interestRateBps: 100,
    interestRate: 0.01,
  },
] as const;

export type Tier = (typeof TIERS)[number];

export function tierFor(score: number): Tier {
  return TIERS.find((tier) => score >= tier.minScore && score <= tier.maxScore) ?? TIERS[0];
}

export function borrowingPower(score: number) {
  const tier = tierFor(score);
  return { maxAmount: tier.maxAmount, maxDuration: tier.maxDuration, interestRate: tier.interestRate };
}

/** Level bonus by XP level index (Newcomer .. Legend): rises with the level, 13 at the top. */
export const LEVEL_BONUS = [0, 2, 4, 6, 8, 11, 13] as const;
if (LEVEL_BONUS.length !== LEVELS.length) throw new Error("LEVEL_BONUS must have one entry per level");

export interface TrustInputs {
  createdAt: Date;
  levelIndex: number;
  onTimeRepayments: number;
  /** Total transaction volume in micro-USDC. */
  totalVolumeMicro: bigint;
  activeGuardians: number;
}

export interface Breakdown {
  seniority: number;
  repaymentHistory: number;
  transactionVolume: number;
  socialNetwork: number;
  levelBonus: number;
}

/**
 * Full calendar months from `from` to `to` (UTC): a month is complete once the same day of
 * the month and time of day is reached (Jan 15 10:00 -> Feb 15 10:00 is one month). Month
 * ends are not special-cased: from Jan 31, Feb 28 is still month 0 and Mar 1 is month 1.
 */
export function fullMonthsBetween(from: Date, to: Date): number {
  if (to <= from) return 0;
  let months = (to.getUTCFullYear() - from.getUTCFullYear()) * 12 + (to.getUTCMonth() - from.getUTCMonth());
  const fromInMonth = from.getUTCDate() * 86_400_000 + (from.getTime() % 86_400_000);
  const toInMonth = to.getUTCDate() * 86_400_000 + (to.getTime() % 86_400_000);
  if (toInMonth < fromInMonth) months -= 1;
  return Math.max(0, months);
}

/** The most repaymentHistory gives, its on-time bonuses included (service-spec part 2). */
export const MAX_REPAYMENT_POINTS = 40;

export const seniorityPoints = (createdAt: Date, now: Date) => Math.min(12, fullMonthsBetween(createdAt, now));
export const repaymentPoints = (onTime: number) => Math.min(MAX_REPAYMENT_POINTS, 2 * Math.max(0, onTime));
export const socialPoints = (guardians: number) => 5 * Math.min(3, Math.max(0, guardians));
export const levelBonusPoints = (levelIndex: number) => LEVEL_BONUS[Math.max(0, Math.min(LEVEL_BONUS.length - 1, levelIndex))]!;

/**
 * 4 points per factor of ten of the whole-USDC volume: 1 USDC 1 point, 10 -> 4, 100 -> 8,
 * 1,000 -> 12, 10,000 -> 16, 100,000 and more -> 20. The money stays a bigint; only the
 * whole-USDC count (below 2^53 for any real volume) meets a logarithm, which is fine for a score.
 */
export function volumePoints(totalVolumeMicro: bigint): number {
  if (totalVolumeMicro <= 0n) return 0;
  const wholeUsdc = totalVolumeMicro / MICRO_PER_USDC;
  const capped = wholeUsdc > 1_000_000_000n ? 1_000_000_000 : Number(wholeUsdc);
  return Math.min(20, Math.floor(4 * Math.log10(1 + capped) + 1e-9));
}

export function computeBreakdown(inputs: TrustInputs, now: Date): Breakdown {
  return {
    seniority: seniorityPoints(inputs.createdAt, now),
    repaymentHistory: repaymentPoints(inputs.onTimeRepayments),
    transactionVolume: volumePoints(inputs.totalVolumeMicro),
    socialNetwork: socialPoints(inputs.activeGuardians),
    levelBonus: levelBonusPoints(inputs.levelIndex),
  };
}

const clamp = (score: number) => Math.max(0, Math.min(MAX_SCORE, score));

export function baseScore(breakdown: Breakdown): number {
  return clamp(
    breakdown.seniority + breakdown.repaymentHistory + breakdown.transactionVolume + breakdown.socialNetwork + breakdown.levelBonus,
  );
}

/**
 * What counts as credit behaviour (D-88). A repayment that closes a loan on time counts only when
 * all of the loan was repaid by the borrower (no refund through the router, no third party paid a
 * part) and at least REPAYMENT_PACE_DAYS after the last repayment that counted: money moved in a
 * circle can repeat a repayment as often as it likes, time it cannot buy.
 */
export const REPAYMENT_PACE_DAYS = 7;

/** Why a closing on-time repayment does not count (null: it counts). */
export function repaymentRefusal(repayment: {
  paidByOthers: bigint;
  lastCountedAt: Date | null;
  at: Date;
}): "paid_by_others" | "pace" | null {
  if (repayment.paidByOthers > 0n) return "paid_by_others";
  if (repayment.lastCountedAt && repayment.at.getTime() - repayment.lastCountedAt.getTime() < REPAYMENT_PACE_DAYS * 86_400_000) {
    return "pace";
  }
  return null;
}

/**
 * A guardian counts for socialNetwork only as a voucher of some standing (D-88): the managed wallet
 * of another live user whose account is at least this old and whose score is at least Building's.
 */
export const VOUCHER_MIN_ACCOUNT_DAYS = 30;
export const VOUCHER_MIN_SCORE = 31;

export type ModifierType = "late_payment" | "default" | "on_time_bonus";

/** Percent of the running score each modifier adds (negative: takes). */
export const MODIFIER_PERCENT: Record<ModifierType, number> = { late_payment: -5, default: -30, on_time_bonus: 1 };

export interface ModifierFact {
  type: ModifierType;
  appliedAt: Date;
  expiresAt: Date | null;
}

/** Room the on-time bonuses have together: what repaymentHistory leaves of its 40 points. */
export const bonusRoomOf = (breakdown: Pick<Breakdown, "repaymentHistory">) =>
  Math.max(0, MAX_REPAYMENT_POINTS - breakdown.repaymentHistory);

/**
 * Applies the active modifiers in the order they happened (appliedAt, then input order) to
 * the running score: each changes it by its percent of the score at that point, rounded half
 * away from zero; a penalty takes at least 1 point while the score is above 0, the on-time
 * bonus has no minimum (1 % of a score below 50 rounds to nothing: the spec's "+1 % of score").
 * The bonuses together add at most `bonusRoom` points (bonusRoomOf: repayment history with its
 * bonuses stays within its 40 points, D-88); the score stays in 0..100. Returns the final score
 * and each modifier's impact in points (0 for an expired one).
 */
export function applyModifiers<M extends ModifierFact>(base: number, modifiers: M[], now: Date, bonusRoom: number) {
  let score = clamp(base);
  const ordered = modifiers
    .map((m, index) => ({ m, index }))
    .sort((a, b) => a.m.appliedAt.getTime() - b.m.appliedAt.getTime() || a.index - b.index);
  const impacts = new Map<M, number>();
  let room = Math.max(0, bonusRoom);
  for (const { m } of ordered) {
    if (m.expiresAt && m.expiresAt <= now) {
      impacts.set(m, 0);
      continue;
    }
    const percent = MODIFIER_PERCENT[m.type];
    const rounded = Math.floor((score * Math.abs(percent) + 50) / 100);
    const magnitude = score > 0 && percent < 0 ? Math.max(1, rounded) : percent > 0 ? Math.min(rounded, room) : rounded;
    if (percent > 0) room -= magnitude;
    const next = clamp(score + Math.sign(percent) * magnitude);
    impacts.set(m, next - score);
    score = next;
  }
  return { finalScore: score, impacts: modifiers.map((m) => impacts.get(m) ?? 0) };
}
