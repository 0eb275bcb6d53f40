// What users read of the Trust Score: a score with its components and borrowing power, its daily
// history, the modifiers and what each took, a projection after hypothetical actions, the tiers.
// Another user's score only when they made it public. Spread into the Trust Score service
// (service.ts), beside the writes.
import { type Clock, DAY_MS } from "../../core/clock.js";
import type { Db } from "../db.js";
import { AppError } from "../errors.js";
import type { UserRecord } from "../users/repo.js";
import { heldInVault } from "../vault/repo.js";
import { LEVELS } from "../xp/levels.js";
import { historyRowsSince, trustInputsRowOf } from "./repo.js";
import {
  applyModifiers,
  baseScore,
  bonusRoomOf,
  borrowingPower,
  computeBreakdown,
  type ModifierType,
  TIERS,
  type TrustInputs,
  tierFor,
} from "./rules.js";
import { activeModifiers, breakdownOf, dayOf, loadInputs } from "./stored.js";

export type HistoryPeriod = "7d" | "30d" | "90d" | "1y" | "all";
const PERIOD_DAYS: Record<HistoryPeriod, number | null> = { "7d": 7, "30d": 30, "90d": 90, "1y": 365, all: null };

export type SimulationAction = { type: "repayment" | "add_guardian" | "level_up" | "deposit"; count: number };

export function createTrustScoreReads({
  db,
  clock,
  users,
}: {
  db: Db;
  clock: Pick<Clock, "now">;
  /** Cached user rows (the score is persisted on the user). */
  users: { findById(id: string): Promise<UserRecord | null> };
}) {
  const { prisma } = db;

  async function readable(caller: UserRecord, userId: string): Promise<UserRecord> {
    const user = userId === caller.id ? caller : await users.findById(userId);
    if (!user || user.deletedAt) throw new AppError("USER_NOT_FOUND", "User not found");
    if (user.id !== caller.id && !user.trustScorePublic) throw new AppError("SCORE_PRIVATE", "This user's Trust Score is not public");
    return user;
  }

  function scoreView(user: UserRecord) {
    return {
      userId: user.id,
      score: user.trustScore,
      tier: tierFor(user.trustScore).tier,
      breakdown: breakdownOf(user),
      borrowingPower: borrowingPower(user.trustScore),
      lastUpdated: (user.trustScoreUpdatedAt ?? user.createdAt).toISOString(),
    };
  }

  return {
    async get(caller: UserRecord, userId: string) {
      return scoreView(await readable(caller, userId));
    },

    async history(caller: UserRecord, userId: string, period: HistoryPeriod) {
      const user = await readable(caller, userId);
      const days = PERIOD_DAYS[period];
      const since = days === null ? undefined : dayOf(new Date(clock.now().getTime() - (days - 1) * DAY_MS));
      const rows = await historyRowsSince(prisma, user.id, since);
      return {
        userId: user.id,
        period,
        history: rows.map((row) => ({ date: row.day, score: row.score, change: row.change, reason: row.reason })),
      };
    },

    async modifiers(caller: UserRecord, userId: string) {
      const user = await readable(caller, userId);
      const rows = await activeModifiers(prisma, user.id);
      const { finalScore, impacts } = applyModifiers(user.trustBaseScore, rows, clock.now(), bonusRoomOf(breakdownOf(user)));
      return {
        userId: user.id,
        baseScore: user.trustBaseScore,
        finalScore,
        modifiers: rows.map((row, i) => ({
          type: row.type as ModifierType,
          impact: impacts[i]!,
          reason: row.reason,
          appliedAt: row.appliedAt.toISOString(),
          expiresAt: row.expiresAt?.toISOString() ?? null,
        })),
      };
    },

    /** Projects the caller's score after hypothetical actions, with the same engine. */
    async simulate(caller: UserRecord, actions: SimulationAction[]) {
      const now = clock.now();
      const inputs = await loadInputs(prisma, caller);
      const modifiers = await activeModifiers(prisma, caller.id);
      // The spec's projection: +2 per on-time repayment that counts (repaymentHistory, within its
      // cap of 40; D-88 counts one a week, so this projects repayments over that many weeks); the
      // on-time bonus a real repayment may add on top (1 % of the score) is not projected.
      const score = (i: TrustInputs) => {
        const breakdown = computeBreakdown(i, now);
        return applyModifiers(baseScore(breakdown), modifiers, now, bonusRoomOf(breakdown)).finalScore;
      };
      const currentScore = score(inputs);
      const projected = { ...inputs };
      const totals = { repayment: 0, add_guardian: 0, level_up: 0, deposit: 0 };
      for (const action of actions) totals[action.type] += action.count;
      const breakdown: Record<string, string> = {};
      const signed = (n: number) => (n >= 0 ? `+${n}` : String(n));
      const step = (name: string, apply: () => void) => {
        const before = baseScore(computeBreakdown(projected, now));
        apply();
        breakdown[name] = signed(baseScore(computeBreakdown(projected, now)) - before);
      };
      if (totals.repayment) step("repayments", () => (projected.onTimeRepayments += totals.repayment));
      if (totals.add_guardian) step("guardian", () => (projected.activeGuardians += totals.add_guardian));
      if (totals.level_up)
        step("levelUp", () => (projected.levelIndex = Math.min(LEVELS.length - 1, projected.levelIndex + totals.level_up)));
      // A deposit's count is its amount in whole USDC, added to what the caller holds in the vault:
      // the volume counts the most ever held at once (D-88), so only what rises above that peak adds.
      if (totals.deposit) {
        const { held } = await heldInVault(prisma, caller.walletAddress);
        const peak = (await trustInputsRowOf(prisma, caller.id))?.peakHeldMicro ?? 0n;
        const newPeak = held + BigInt(totals.deposit) * 1_000_000n;
        step("deposit", () => (projected.totalVolumeMicro += newPeak > peak ? newPeak - peak : 0n));
      }
      const projectedScore = score(projected);
      const componentSum = Object.values(breakdown).reduce((sum, value) => sum + Number(value), 0);
      const viaModifiers = projectedScore - currentScore - componentSum;
      if (viaModifiers !== 0) breakdown.modifiers = signed(viaModifiers);
      const tier = tierFor(projectedScore);
      return {
        currentScore,
        projectedScore,
        breakdown,
        newTier: tier.tier,
        newBorrowingPower: { maxAmount: tier.maxAmount, maxDuration: tier.maxDuration },
      };
    },

    tiers() {
      return TIERS.map((tier) => ({
        tier: tier.tier,
        minScore: tier.minScore,
        maxScore: tier.maxScore,
        borrowingPower: { maxAmount: tier.maxAmount, maxDuration: tier.maxDuration },
      }));
    },
  };
}
