// The Trust Score's tables: the input counters (TrustScoreInput), the modifiers
// (TrustScoreModifier), the daily history (TrustScoreHistory) and the score's columns on the user
// row. Writes join the caller's transaction (`tx`); stored.ts shapes what the recompute reads.
import { randomUUID } from "node:crypto";
import type { Tx } from "../db.js";
import type { Breakdown, ModifierType } from "./rules.js";

/** A user's input counters (null: none recorded yet). */
export function trustInputsRowOf(tx: Tx, userId: string) {
  return tx.trustScoreInput.findUnique({ where: { userId } });
}

/** Adds to a user's counters (negative deltas allowed), creating the row clamped at 0 when there is none. */
export async function addToTrustInputs(
  tx: Tx,
  userId: string,
  delta: { onTimeRepayments?: number; volumeMicro?: bigint; activeGuardians?: number },
  now: Date,
) {
  await tx.trustScoreInput.upsert({
    where: { userId },
    create: {
      userId,
      onTimeRepayments: Math.max(0, delta.onTimeRepayments ?? 0),
      totalVolumeMicro: delta.volumeMicro && delta.volumeMicro > 0n ? delta.volumeMicro : 0n,
      activeGuardians: Math.max(0, delta.activeGuardians ?? 0),
      updatedAt: now,
    },
    update: {
      onTimeRepayments: { increment: delta.onTimeRepayments ?? 0 },
      totalVolumeMicro: { increment: delta.volumeMicro ?? 0n },
      activeGuardians: { increment: delta.activeGuardians ?? 0 },
      updatedAt: now,
    },
  });
}

/**
 * Counts an on-time repayment made at `at` (block time) if the last one that counted was at least
 * `paceDays` before it: one conditional update of the user's row, so two repayments applied at
 * once cannot both count. Returns whether it counted.
 */
export async function countRepaymentAtPace(tx: Tx, userId: string, repayment: { at: Date; paceDays: number }, now: Date): Promise<boolean> {
  await tx.trustScoreInput.createMany({ data: [{ userId, updatedAt: now }], skipDuplicates: true });
  const lastAllowed = new Date(repayment.at.getTime() - repayment.paceDays * 86_400_000);
  const counted = await tx.$executeRaw`
    UPDATE "TrustScoreInput"
       SET "onTimeRepayments" = "onTimeRepayments" + 1, "lastCountedRepaymentAt" = ${repayment.at.toISOString()}::timestamp(3),
           "updatedAt" = ${now.toISOString()}::timestamp(3)
     WHERE "userId" = ${userId}
       AND ("lastCountedRepaymentAt" IS NULL OR "lastCountedRepaymentAt" <= ${lastAllowed.toISOString()}::timestamp(3))`;
  return counted === 1;
}

/** Raises the user's peak of USDC held in the vault to `peak` (never lowers it); whether it rose. */
export async function raisePeakHeld(tx: Tx, userId: string, peak: bigint, now: Date): Promise<boolean> {
  await tx.trustScoreInput.createMany({ data: [{ userId, updatedAt: now }], skipDuplicates: true });
  const raised = await tx.trustScoreInput.updateMany({
    where: { userId, peakHeldMicro: { lt: peak } },
    data: { peakHeldMicro: peak, updatedAt: now },
  });
  return raised.count === 1;
}

/** Lowers the user's peak held to `peak` (D-94: the deposit that raised it was removed by a reorganisation); whether it fell. */
export async function lowerPeakHeld(tx: Tx, userId: string, peak: bigint, now: Date): Promise<boolean> {
  const lowered = await tx.trustScoreInput.updateMany({
    where: { userId, peakHeldMicro: { gt: peak } },
    data: { peakHeldMicro: peak, updatedAt: now },
  });
  return lowered.count === 1;
}

/**
 * Takes one counted repayment back (D-94): the count falls by one and the pace restarts from the
 * latest repayment still counted (its on_time_bonus), so a repayment that comes back counts again.
 */
export async function uncountRepayment(tx: Tx, userId: string, now: Date) {
  await tx.$executeRaw`
    UPDATE "TrustScoreInput"
       SET "onTimeRepayments" = GREATEST(0, "onTimeRepayments" - 1), "updatedAt" = ${now.toISOString()}::timestamp(3),
           "lastCountedRepaymentAt" = (SELECT max("appliedAt") FROM "TrustScoreModifier" WHERE "userId" = ${userId} AND "type" = 'on_time_bonus')
     WHERE "userId" = ${userId}`;
}

/** Sets a user's count of active guardians. */
export async function storeActiveGuardians(tx: Tx, userId: string, activeGuardians: number, now: Date) {
  await tx.trustScoreInput.upsert({
    where: { userId },
    create: { userId, activeGuardians, updatedAt: now },
    update: { activeGuardians, updatedAt: now },
  });
}

/** Records a modifier unless the user already has one of that type for that source. */
export async function recordModifierOnce(
  tx: Tx,
  userId: string,
  modifier: { type: ModifierType; reason: string; sourceId: string; appliedAt: Date; expiresAt: Date | null },
) {
  await tx.trustScoreModifier.createMany({
    data: [
      {
        id: `mod_${randomUUID().replaceAll("-", "")}`,
        userId,
        type: modifier.type,
        reason: modifier.reason,
        sourceId: modifier.sourceId,
        appliedAt: modifier.appliedAt,
        expiresAt: modifier.expiresAt,
      },
    ],
    skipDuplicates: true,
  });
}

/** The user's modifier of that type for that source, if recorded. */
export function modifierOf(tx: Tx, userId: string, type: ModifierType, sourceId: string) {
  return tx.trustScoreModifier.findUnique({ where: { userId_type_sourceId: { userId, type, sourceId } } });
}

/** Removes a modifier (a repayment taken back: D-88). */
export async function deleteModifier(tx: Tx, id: string) {
  await tx.trustScoreModifier.deleteMany({ where: { id } });
}

/** A user's modifiers in the order they apply (appliedAt, then id), as stored. */
export function modifierRowsInApplyOrder(tx: Tx, userId: string) {
  return tx.trustScoreModifier.findMany({ where: { userId }, orderBy: [{ appliedAt: "asc" }, { id: "asc" }] });
}

/** The user row the recompute starts from, read in its transaction (not the cache). */
export function userRowOf(tx: Tx, userId: string) {
  return tx.user.findUnique({ where: { id: userId } });
}

/** Persists a recomputed score on the user row: the final score, the base and the five components. */
export async function storeScore(tx: Tx, userId: string, score: { finalScore: number; base: number; breakdown: Breakdown }, now: Date) {
  const { finalScore, base, breakdown } = score;
  await tx.user.update({
    where: { id: userId },
    data: {
      trustScore: finalScore,
      trustBaseScore: base,
      trustSeniority: breakdown.seniority,
      trustRepayment: breakdown.repaymentHistory,
      trustVolume: breakdown.transactionVolume,
      trustSocial: breakdown.socialNetwork,
      trustLevelBonus: breakdown.levelBonus,
      trustScoreUpdatedAt: now,
    },
  });
}

/** Writes a score change into the user's history row of `day`: the day's last score and reason, its change added to the day's. */
export async function addToDayOfHistory(tx: Tx, userId: string, day: string, entry: { score: number; change: number; reason: string }) {
  const { score, change, reason } = entry;
  const existing = await tx.trustScoreHistory.findUnique({ where: { userId_day: { userId, day } } });
  await tx.trustScoreHistory.upsert({
    where: { userId_day: { userId, day } },
    create: { userId, day, score, change, reason },
    update: { score, change: (existing?.change ?? 0) + change, reason },
  });
}

/** A user's history rows, oldest day first, from `since` (a day) when given. */
export function historyRowsSince(db: Tx, userId: string, since: string | undefined) {
  return db.trustScoreHistory.findMany({
    where: { userId, ...(since ? { day: { gte: since } } : {}) },
    orderBy: { day: "asc" },
  });
}

/** The next page (by id, after `cursor`) of live users whose seniority component is below its cap of 12. */
export function usersBelowSeniorityCap(db: Tx, cursor: string | undefined, take: number) {
  return db.user.findMany({
    where: { deletedAt: null, trustSeniority: { lt: 12 }, ...(cursor ? { id: { gt: cursor } } : {}) },
    select: { id: true, createdAt: true, trustSeniority: true },
    orderBy: { id: "asc" },
    take,
  });
}
