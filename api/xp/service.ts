import { randomUUID } from "node:crypto";
import type { Clock } from "../../core/clock.js";
import type { Database } from "../../core/db.js";
import { recordEvents, type Tx } from "../events/outbox.js";
import { BADGES } from "./badges.js";
import { LEVELS, levelIndexFor } from "./levels.js";

/** Activity types that earn XP (service-spec part 2); level_up entries are written by awardXp itself. */
export type XpActivityType = "loan_created" | "loan_repaid" | "vault_deposit" | "vault_withdraw" | "guardian_added";

export interface XpAward {
  type: XpActivityType;
  description: string;
  xp: number;
  /** The domain fact (loan id, tx hash, guardian id): one award per (user, type, sourceId). */
  sourceId: string;
}

export interface XpAwardResult {
  /** False when this (user, type, sourceId) was awarded before: nothing changed. */
  awarded: boolean;
  xp: number;
  level: string;
  levelsReached: string[];
  badgesEarned: string[];
}

export interface XpServiceDeps {
  db: Pick<Database, "prisma">;
  clock: Pick<Clock, "now">;
  /** Drops the per-process user cache after a commit. */
  invalidateUser(userId: string): void;
  /** Called in the transaction when the level changed (the Trust Score's level bonus depends on it). */
  onLevelChange?(tx: Tx, userId: string, reason: string): Promise<unknown>;
}

const newId = (prefix: string) => `${prefix}_${randomUUID().replaceAll("-", "")}`;

export function createXpService(deps: XpServiceDeps) {
  /**
   * Awards XP for a domain event inside the caller's transaction: writes the activity entry,
   * adds the XP, writes a level_up entry per level crossed, grants newly met badges and
   * records user.level_up / user.badge_earned in the outbox, all or nothing. Idempotent by
   * (userId, type, sourceId), so indexer replays and retries award once. The caller calls
   * `invalidateUser(userId)` after its commit (or uses `award`, which does).
   */
  async function awardXp(tx: Tx, userId: string, award: XpAward, now: Date = deps.clock.now()): Promise<XpAwardResult> {
    if (!Number.isInteger(award.xp) || award.xp < 0) throw new RangeError("xp must be a non-negative integer");
    const inserted = await tx.activity.createMany({
      data: [
        {
          id: newId("act"),
          userId,
          type: award.type,
          description: award.description,
          xpEarned: award.xp,
          sourceId: award.sourceId,
          createdAt: now,
        },
      ],
      skipDuplicates: true,
    });
    if (inserted.count === 0) {
      const user = await tx.user.findUniqueOrThrow({ where: { id: userId }, select: { xp: true } });
      return { awarded: false, xp: user.xp, level: LEVELS[levelIndexFor(user.xp)]!.name, levelsReached: [], badgesEarned: [] };
    }
    const user = await tx.user.update({ where: { id: userId }, data: { xp: { increment: award.xp } }, select: { xp: true } });
    const before = levelIndexFor(user.xp - award.xp);
    const after = levelIndexFor(user.xp);
    const levelsReached = LEVELS.slice(before + 1, after + 1).map((level) => level.name);
    for (const level of levelsReached) {
      await tx.activity.createMany({
        data: [
          {
            id: newId("act"),
            userId,
            type: "level_up",
            description: `Reached level ${level}`,
            xpEarned: 0,
            sourceId: `level:${level}`,
            createdAt: now,
          },
        ],
        skipDuplicates: true,
      });
    }
    await recordEvents(
      tx,
      levelsReached.map((level) => ({
        type: "user.level_up" as const,
        userId,
        data: { userId, level, previousLevel: LEVELS[before]!.name, xp: user.xp, timestamp: now.toISOString() },
        dedupeKey: `user.level_up:${userId}:${level}`,
        now,
      })),
    );

    const groups = await tx.activity.groupBy({ by: ["type"], where: { userId }, _count: { _all: true } });
    const counts = Object.fromEntries(groups.map((group) => [group.type, group._count._all]));
    const held = new Set((await tx.userBadge.findMany({ where: { userId }, select: { badgeId: true } })).map((b) => b.badgeId));
    const earned = BADGES.filter((badge) => !held.has(badge.id) && badge.earned({ counts, levelIndex: after }));
    if (earned.length > 0) {
      await tx.userBadge.createMany({ data: earned.map((badge) => ({ userId, badgeId: badge.id, earnedAt: now })), skipDuplicates: true });
      await recordEvents(
        tx,
        earned.map((badge) => ({
          type: "user.badge_earned" as const,
          userId,
          data: { userId, badgeId: badge.id, name: badge.name, earnedAt: now.toISOString() },
          dedupeKey: `user.badge_earned:${userId}:${badge.id}`,
          now,
        })),
      );
    }
    if (levelsReached.length > 0 && deps.onLevelChange) {
      await deps.onLevelChange(tx, userId, `level up to ${levelsReached.at(-1)}`);
    }
    return { awarded: true, xp: user.xp, level: LEVELS[after]!.name, levelsReached, badgesEarned: earned.map((b) => b.id) };
  }

  return {
    awardXp,
    /** awardXp in its own transaction, then the user cache dropped. */
    async award(userId: string, award: XpAward): Promise<XpAwardResult> {
      try {
        return await deps.db.prisma.$transaction((tx) => awardXp(tx, userId, award));
      } finally {
        deps.invalidateUser(userId);
      }
    },
  };
}

export type XpService = ReturnType<typeof createXpService>;
