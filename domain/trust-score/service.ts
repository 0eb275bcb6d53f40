// The Trust Score's writes: the inputs, modifiers and loan outcomes other domains record in their
// own transaction, each followed by the recompute, which persists the score, its day in the
// history and its events; the guardian sync and the seniority step the worker runs. The reads
// (reads.ts) are spread into the same service, so callers hold one object.
import { randomUUID } from "node:crypto";
import type { Clock } from "../../core/clock.js";
import type { Db, Tx } from "../db.js";
import { domainEvent, recordEvents } from "../events/outbox.js";
import { guardianCountDrift } from "../social-vault/repo.js";
import { type UserRecord, withWallet } from "../users/repo.js";
import { createTrustScoreReads } from "./reads.js";
import {
  addToDayOfHistory,
  addToTrustInputs,
  countRepaymentAtPace,
  deleteModifier,
  lowerPeakHeld,
  modifierOf,
  raisePeakHeld,
  recordModifierOnce,
  storeActiveGuardians,
  storeScore,
  trustInputsRowOf,
  uncountRepayment,
  userRowOf,
  usersBelowSeniorityCap,
} from "./repo.js";
import {
  applyModifiers,
  baseScore,
  bonusRoomOf,
  computeBreakdown,
  type ModifierType,
  REPAYMENT_PACE_DAYS,
  repaymentRefusal,
} from "./rules.js";
import { activeModifiers, breakdownOf, dayOf, loadInputs } from "./stored.js";

export interface TrustScoreServiceDeps {
  db: Db;
  clock: Pick<Clock, "now">;
  /** Cached user rows (the score is persisted on the user). */
  users: { findById(id: string): Promise<UserRecord | null>; invalidate(id: string): void };
}

/** The reason of a score change that a chain reorganisation caused (D-94). */
const REORGANISATION = "chain reorganisation";

/** Users per batch of the seniority job. */
const SENIORITY_BATCH = 500;

/** What the Trust Score needs to know of a loan's outcome: the mirrored loan and when it happened (block time). */
export interface LoanOutcome {
  kind: "repaid" | "overdue" | "defaulted";
  loan: { chainId: number; loanId: bigint; dueDate: Date; paidByOthers: bigint };
  at: Date;
}

/** Whether a repayment counted for the score (and so earns its XP), and why not when it did not. */
export type RepaymentVerdict = { counted: true } | { counted: false; reason: "late" | "paid_by_others" | "pace" };

export function createTrustScoreService({ db, clock, users }: TrustScoreServiceDeps) {
  const { prisma } = db;

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
    await addToTrustInputs(tx, userId, delta, now);
    return recomputeTrustScore(tx, userId, reason, now);
  }

  /**
   * Sets a user's count of active guardians (the social input, read from the chain mirror, not
   * counted up: guardians become active by time and leave by removal or reorg), then recomputes.
   */
  async function setActiveGuardians(tx: Tx, userId: string, activeGuardians: number, now: Date = clock.now()) {
    const previous = (await trustInputsRowOf(tx, userId))?.activeGuardians ?? 0;
    if (previous === activeGuardians) return null;
    await storeActiveGuardians(tx, userId, activeGuardians, now);
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
    await recordModifierOnce(tx, userId, {
      type: modifier.type,
      reason: modifier.reason,
      sourceId: modifier.sourceId,
      appliedAt: modifier.appliedAt ?? now,
      expiresAt: modifier.expiresAt ?? null,
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
    const row = await userRowOf(tx, userId);
    if (!row || row.deletedAt) return null;
    const user = withWallet(row);
    const breakdown = computeBreakdown(await loadInputs(tx, user), now);
    const base = baseScore(breakdown);
    const { finalScore } = applyModifiers(base, await activeModifiers(tx, userId), now, bonusRoomOf(breakdown));
    const previousScore = user.trustScore;
    const unchanged =
      finalScore === previousScore &&
      base === user.trustBaseScore &&
      JSON.stringify(breakdown) === JSON.stringify(breakdownOf(user)) &&
      user.trustScoreUpdatedAt !== null;
    if (unchanged) return { previousScore, score: finalScore, changed: false };
    await storeScore(tx, userId, { finalScore, base, breakdown }, now);
    if (finalScore === previousScore) return { previousScore, score: finalScore, changed: false };
    const change = finalScore - previousScore;
    await addToDayOfHistory(tx, userId, dayOf(now), { score: finalScore, change, reason });
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

  /**
   * The Trust Score side of a loan's outcome (docs/decisions.md, D-47 and D-88): a repayment at or
   * before the due date in force counts (+1 repayment and an on_time_bonus) when the borrower
   * repaid all of it and the last repayment that counted was at least
   * REPAYMENT_PACE_DAYS before; the first sign of lateness (marked overdue, or repaid after the due
   * date) costs one late_payment; a default costs a default. Modifiers are keyed by the loan, so
   * each applies once per loan whatever order the facts come in. Answers a repayment's verdict.
   */
  async function applyLoanOutcome(tx: Tx, userId: string, outcome: LoanOutcome, now: Date = clock.now()): Promise<RepaymentVerdict> {
    const { loan, at } = outcome;
    const sourceId = `loan:${loan.chainId}:${loan.loanId}`;
    const late = (reason: string) => addModifier(tx, userId, { type: "late_payment", reason, sourceId, appliedAt: at }, now);
    switch (outcome.kind) {
      case "overdue":
        await late("loan overdue");
        return { counted: false, reason: "late" };
      case "defaulted":
        await addModifier(tx, userId, { type: "default", reason: "loan defaulted", sourceId, appliedAt: at }, now);
        return { counted: false, reason: "late" };
      case "repaid": {
        const wasLate = await modifierOf(tx, userId, "late_payment", sourceId);
        if (wasLate || at > loan.dueDate) {
          if (!wasLate) await late("late repayment");
          return { counted: false, reason: "late" };
        }
        const lastCountedAt = (await trustInputsRowOf(tx, userId))?.lastCountedRepaymentAt ?? null;
        const refused = repaymentRefusal({ paidByOthers: loan.paidByOthers, lastCountedAt, at });
        if (refused) return { counted: false, reason: refused };
        // The pace is checked again in the update itself: two repayments applied at once count once.
        if (!(await countRepaymentAtPace(tx, userId, { at, paceDays: REPAYMENT_PACE_DAYS }, now))) {
          return { counted: false, reason: "pace" };
        }
        await addModifier(tx, userId, { type: "on_time_bonus", reason: "on-time repayment", sourceId, appliedAt: at }, now);
        return { counted: true };
      }
    }
  }

  /**
   * A refund settled a loan whose repayment had counted (D-88: money that comes back through a
   * refund is not the borrower's repayment): the repayment and its on_time_bonus are taken back.
   * The pace is kept (the next repayment still waits its 7 days). Nothing when it had not counted.
   */
  async function revokeRepayment(tx: Tx, userId: string, loan: { chainId: number; loanId: bigint }, now: Date = clock.now()) {
    const bonus = await modifierOf(tx, userId, "on_time_bonus", `loan:${loan.chainId}:${loan.loanId}`);
    if (!bonus) return null;
    await deleteModifier(tx, bonus.id);
    await addToTrustInputs(tx, userId, { onTimeRepayments: -1 }, now);
    return recomputeTrustScore(tx, userId, "purchase refunded", now);
  }

  /**
   * The volume's held money (D-88): raises the user's peak of USDC held in the staking vault to the
   * mirror's `peak` (the most of their own USDC they held there at once), then recomputes. Money
   * deposited, withdrawn and deposited again does not raise it.
   */
  async function notePeakHeld(tx: Tx, userId: string, peak: bigint, reason: string, now: Date = clock.now()) {
    if (!(await raisePeakHeld(tx, userId, peak, now))) return null;
    return recomputeTrustScore(tx, userId, reason, now);
  }

  /**
   * Takes back what a loan fact a reorganisation removed gave the score (D-94): a repayment's count
   * and on_time_bonus (the pace restarting from the repayment still counted before it) or its
   * late_payment, an overdue's late_payment, a default. Modifiers are keyed by the loan: if the
   * fact comes back, applying it again gives them again, once.
   */
  async function revertLoanOutcome(
    tx: Tx,
    userId: string,
    outcome: Omit<LoanOutcome, "at" | "loan"> & { loan: { chainId: number; loanId: bigint } },
    now: Date = clock.now(),
  ) {
    const sourceId = `loan:${outcome.loan.chainId}:${outcome.loan.loanId}`;
    const drop = async (type: ModifierType, reason?: string) => {
      const modifier = await modifierOf(tx, userId, type, sourceId);
      if (!modifier || (reason && modifier.reason !== reason)) return false;
      await deleteModifier(tx, modifier.id);
      return true;
    };
    if (outcome.kind === "repaid") {
      if (await drop("on_time_bonus")) await uncountRepayment(tx, userId, now);
      await drop("late_payment", "late repayment");
    } else if (outcome.kind === "overdue") await drop("late_payment", "loan overdue");
    else await drop("default");
    return recomputeTrustScore(tx, userId, REORGANISATION, now);
  }

  return {
    ...createTrustScoreReads({ db, clock, users }),
    revertLoanOutcome,
    /** The peak held falls back to the mirror's (D-94: the deposit that raised it was removed), then the score is recomputed. */
    async lowerPeakHeld(tx: Tx, userId: string, peak: bigint, now: Date = clock.now()) {
      if (!(await lowerPeakHeld(tx, userId, peak, now))) return null;
      return recomputeTrustScore(tx, userId, REORGANISATION, now);
    },
    recomputeTrustScore,
    addInputs,
    addModifier,
    applyLoanOutcome,
    revokeRepayment,
    notePeakHeld,

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
        const batch = await usersBelowSeniorityCap(prisma, cursor, SENIORITY_BATCH);
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
  };
}

export type TrustScoreService = ReturnType<typeof createTrustScoreService>;
