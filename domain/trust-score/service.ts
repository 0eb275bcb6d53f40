import { randomUUID } from "node:crypto";
import type { Clock } from "../../core/clock.js";
import type { Db, Tx } from "../db.js";
import { AppError } from "../errors.js";
import { domainEvent, recordEvents } from "../events/outbox.js";
import { guardianCountDrift } from "../social-vault/repo.js";
import { type UserRecord, withWallet } from "../users/repo.js";
import { LEVELS, levelIndexFor } from "../xp/levels.js";
import {
  applyModifiers,
  type Breakdown,
  baseScore,
  borrowingPower,
  computeBreakdown,
  type ModifierType,
  TIERS,
  type TrustInputs,
  tierFor,
} from "./rules.js";

export interface TrustScoreServiceDeps {
  db: Db;
  clock: Pick<Clock, "now">;
  /** Cached user rows (the score is persisted on the user). */
  users: { findById(id: string): Promise<UserRecord | null>; invalidate(id: string): void };
}

export type HistoryPeriod = "7d" | "30d" | "90d" | "1y" | "all";
const PERIOD_DAYS: Record<HistoryPeriod, number | null> = { "7d": 7, "30d": 30, "90d": 90, "1y": 365, all: null };
const DAY_MS = 86_400_000;
/** Users per batch of the seniority job. */
const SENIORITY_BATCH = 500;

/** What the Trust Score needs to know of a loan's outcome: the mirrored loan and when it happened (block time). */
export interface LoanOutcome {
  kind: "repaid" | "overdue" | "defaulted";
  loan: { chainId: number; loanId: bigint; dueDate: Date; totalPaid: bigint };
  at: Date;
}

export type SimulationAction = { type: "repayment" | "add_guardian" | "level_up" | "deposit"; count: number };

const dayOf = (date: Date) => date.toISOString().slice(0, 10);

function breakdownOf(user: UserRecord): Breakdown {
  return {
    seniority: user.trustSeniority,
    repaymentHistory: user.trustRepayment,
    transactionVolume: user.trustVolume,
    socialNetwork: user.trustSocial,
    levelBonus: user.trustLevelBonus,
  };
}

export function createTrustScoreService({ db, clock, users }: TrustScoreServiceDeps) {
  const { prisma } = db;

  async function loadInputs(tx: Tx, user: Pick<UserRecord, "id" | "createdAt" | "xp">): Promise<TrustInputs> {
    const row = await tx.trustScoreInput.findUnique({ where: { userId: user.id } });
    return {
      createdAt: user.createdAt,
      levelIndex: levelIndexFor(user.xp),
      onTimeRepayments: row?.onTimeRepayments ?? 0,
      totalVolumeMicro: row?.totalVolumeMicro ?? 0n,
      activeGuardians: row?.activeGuardians ?? 0,
    };
  }

  const activeModifiers = async (tx: Tx, userId: string) =>
    (await tx.trustScoreModifier.findMany({ where: { userId }, orderBy: [{ appliedAt: "asc" }, { id: "asc" }] })).map((row) => ({
      ...row,
      type: row.type as ModifierType,
    }));

  /**
   * The input port for the loans, vault and social-vault domains: adds to a user's counters
   * (on-time repayments, volume in micro-USDC, active guardians; negative deltas allowed for
   * guardians) inside the caller's transaction, then recomputes the score with `reason`.
   */
  async function addInputs(
    tx: Tx,
    userId: string,
    delta: { onTimeRepayments?: number; volumeMicro?: bigint; activeGuardians?: number },
    reason: string,
    now: Date = clock.now(),
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
    return recomputeTrustScore(tx, userId, reason, now);
  }

  /**
   * Sets a user's count of active guardians (the social input, read from the chain mirror, not
   * counted up: guardians become active by time and leave by removal or reorg), then recomputes.
   */
  async function setActiveGuardians(tx: Tx, userId: string, activeGuardians: number, now: Date = clock.now()) {
    const previous = (await tx.trustScoreInput.findUnique({ where: { userId } }))?.activeGuardians ?? 0;
    if (previous === activeGuardians) return null;
    await tx.trustScoreInput.upsert({
      where: { userId },
      create: { userId, activeGuardians, updatedAt: now },
      update: { activeGuardians, updatedAt: now },
    });
    return recomputeTrustScore(tx, userId, activeGuardians > previous ? "guardian added" : "guardian removed", now);
  }

  /**
   * Records a permanent modifier (late_payment, default, on_time_bonus) once per (user, type, sourceId),
   * then recomputes. `appliedAt` (default now) is when the fact happened: modifiers apply in that order.
   */
  async function addModifier(
    tx: Tx,
    userId: string,
    modifier: { type: ModifierType; reason: string; sourceId: string; appliedAt?: Date; expiresAt?: Date | null },
    now: Date = clock.now(),
  ) {
    await tx.trustScoreModifier.createMany({
      data: [
        {
          id: `mod_${randomUUID().replaceAll("-", "")}`,
          userId,
          type: modifier.type,
          reason: modifier.reason,
          sourceId: modifier.sourceId,
          appliedAt: modifier.appliedAt ?? now,
          expiresAt: modifier.expiresAt ?? null,
        },
      ],
      skipDuplicates: true,
    });
    return recomputeTrustScore(tx, userId, modifier.reason, now);
  }

  /**
   * Recomputes and persists a user's score inside the caller's transaction. Every domain that
   * changes an input (repayments, volume, guardians, modifiers, XP level) calls it after its
   * change; the seniority job calls it at each month step. When the final score changes it
   * writes the day's history row and records trust_score.updated and user.trust_score_updated
   * in the outbox. The caller drops the user cache after its commit (`users.invalidate`), or
   * uses `recompute`, which does.
   */
  async function recomputeTrustScore(tx: Tx, userId: string, reason: string, now: Date = clock.now()) {
    const row = await tx.user.findUnique({ where: { id: userId } });
    if (!row || row.deletedAt) return null;
    const user = withWallet(row);
    const breakdown = computeBreakdown(await loadInputs(tx, user), now);
    const base = baseScore(breakdown);
    const { finalScore } = applyModifiers(base, await activeModifiers(tx, userId), now);
    const previousScore = user.trustScore;
    const unchanged =
      finalScore === previousScore &&
      base === user.trustBaseScore &&
      JSON.stringify(breakdown) === JSON.stringify(breakdownOf(user)) &&
      user.trustScoreUpdatedAt !== null;
    if (unchanged) return { previousScore, score: finalScore, changed: false };
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
    if (finalScore === previousScore) return { previousScore, score: finalScore, changed: false };
    const change = finalScore - previousScore;
    const day = dayOf(now);
    const existing = await tx.trustScoreHistory.findUnique({ where: { userId_day: { userId, day } } });
    await tx.trustScoreHistory.upsert({
      where: { userId_day: { userId, day } },
      create: { userId, day, score: finalScore, change, reason },
      update: { score: finalScore, change: (existing?.change ?? 0) + change, reason },
    });
    const data = { userId, previousScore, newScore: finalScore, change, reason, timestamp: now.toISOString() };
    const key = `${userId}:${now.getTime()}:${previousScore}:${finalScore}:${randomUUID()}`;
    await recordEvents(tx, [
      domainEvent({ type: "trust_score.updated", userId, data, dedupeKey: `trust_score.updated:${key}`, now }),
      domainEvent({ type: "user.trust_score_updated", userId, data, dedupeKey: `user.trust_score_updated:${key}`, now }),
    ]);
    return { previousScore, score: finalScore, changed: true };
  }

  async function recomputeAt(userId: string, reason: string, now: Date) {
    try {
      return await prisma.$transaction((tx) => recomputeTrustScore(tx, userId, reason, now));
    } finally {
      users.invalidate(userId);
    }
  }

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

  /**
   * The Trust Score side of a loan's outcome (docs/decisions.md, "Trust Score inputs from the
   * chain"): a repayment at or before the due date in force is on time (+1 repayment, an
   * on_time_bonus, its total paid added to the volume); the first sign of lateness (marked
   * overdue, or repaid after the due date) costs one late_payment; a default costs a default.
   * Modifiers are keyed by the loan, so each applies once per loan whatever order the facts come in.
   */
  async function applyLoanOutcome(tx: Tx, userId: string, outcome: LoanOutcome, now: Date = clock.now()) {
    const { loan, at } = outcome;
    const sourceId = `loan:${loan.chainId}:${loan.loanId}`;
    const late = (reason: string) => addModifier(tx, userId, { type: "late_payment", reason, sourceId, appliedAt: at }, now);
    switch (outcome.kind) {
      case "overdue":
        await late("loan overdue");
        return;
      case "defaulted":
        await addModifier(tx, userId, { type: "default", reason: "loan defaulted", sourceId, appliedAt: at }, now);
        return;
      case "repaid": {
        const wasLate = await tx.trustScoreModifier.findUnique({
          where: { userId_type_sourceId: { userId, type: "late_payment", sourceId } },
        });
        if (wasLate || at > loan.dueDate) {
          await addInputs(tx, userId, { volumeMicro: loan.totalPaid }, "late repayment", now);
          if (!wasLate) await late("late repayment");
          return;
        }
        await addInputs(tx, userId, { onTimeRepayments: 1, volumeMicro: loan.totalPaid }, "on-time repayment", now);
        await addModifier(tx, userId, { type: "on_time_bonus", reason: "on-time repayment", sourceId, appliedAt: at }, now);
        return;
      }
    }
  }

  return {
    recomputeTrustScore,
    addInputs,
    addModifier,
    applyLoanOutcome,

    /** Brings one user's active-guardian input in line with the chain mirror, inside the caller's transaction. */
    async syncActiveGuardiansOf(tx: Tx, userId: string, now: Date = clock.now()) {
      for (const { active } of await guardianCountDrift(tx, now, [userId])) await setActiveGuardians(tx, userId, active, now);
    },

    /**
     * Brings every user's active-guardian input in line with the chain mirror at `now`: guardians
     * that became active since, removals, and vaults a reorg took away. Idempotent; the worker
     * runs it every minute. Returns how many users changed.
     */
    async syncActiveGuardians(now: Date = clock.now()): Promise<number> {
      const drift = await guardianCountDrift(prisma, now);
      for (const { userId, active } of drift) {
        try {
          await prisma.$transaction((tx) => setActiveGuardians(tx, userId, active, now));
        } finally {
          users.invalidate(userId);
        }
      }
      return drift.length;
    },

    /** recomputeTrustScore in its own transaction, then the user cache dropped. */
    recompute: (userId: string, reason: string) => recomputeAt(userId, reason, clock.now()),

    /**
     * The monthly seniority step: recomputes every live user whose seniority component is
     * below its cap and behind their account age. Idempotent, so a worker may run it as often
     * as it likes (hourly); a missed run is caught up by the next.
     */
    async runSeniorityStep(now: Date = clock.now()): Promise<number> {
      let updated = 0;
      let cursor: string | undefined;
      for (;;) {
        const batch = await prisma.user.findMany({
          where: { deletedAt: null, trustSeniority: { lt: 12 }, ...(cursor ? { id: { gt: cursor } } : {}) },
          select: { id: true, createdAt: true, trustSeniority: true },
          orderBy: { id: "asc" },
          take: SENIORITY_BATCH,
        });
        if (batch.length === 0) return updated;
        cursor = batch.at(-1)!.id;
        for (const user of batch) {
          if (
            computeBreakdown(
              { createdAt: user.createdAt, levelIndex: 0, onTimeRepayments: 0, totalVolumeMicro: 0n, activeGuardians: 0 },
              now,
            ).seniority === user.trustSeniority
          )
            continue;
          await recomputeAt(user.id, "seniority increase", now);
          updated += 1;
        }
      }
    },

    async get(caller: UserRecord, userId: string) {
      return scoreView(await readable(caller, userId));
    },

    async history(caller: UserRecord, userId: string, period: HistoryPeriod) {
      const user = await readable(caller, userId);
      const days = PERIOD_DAYS[period];
      const since = days === null ? undefined : dayOf(new Date(clock.now().getTime() - (days - 1) * DAY_MS));
      const rows = await prisma.trustScoreHistory.findMany({
        where: { userId: user.id, ...(since ? { day: { gte: since } } : {}) },
        orderBy: { day: "asc" },
      });
      return {
        userId: user.id,
        period,
        history: rows.map((row) => ({ date: row.day, score: row.score, change: row.change, reason: row.reason })),
      };
    },

    async modifiers(caller: UserRecord, userId: string) {
      const user = await readable(caller, userId);
      const rows = await activeModifiers(prisma, user.id);
      const { finalScore, impacts } = applyModifiers(user.trustBaseScore, rows, clock.now());
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
      // The spec's projection: +2 per on-time repayment (repaymentHistory, within its cap of 40);
      // the on-time bonus a real repayment may add on top (1 % of the score) is not projected.
      const score = (i: TrustInputs) => applyModifiers(baseScore(computeBreakdown(i, now)), modifiers, now).finalScore;
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
      // A deposit's count is its amount in whole USDC, added to the volume.
      if (totals.deposit) step("deposit", () => (projected.totalVolumeMicro += BigInt(totals.deposit) * 1_000_000n));
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

export type TrustScoreService = ReturnType<typeof createTrustScoreService>;
