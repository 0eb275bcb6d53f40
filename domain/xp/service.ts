import type { Clock } from "../../core/clock.js";
import type { Db, Tx } from "../db.js";
import { AppError } from "../errors.js";
import { domainEvent, recordEvents } from "../events/outbox.js";
import { type PageRequest, paginate } from "../pagination.js";
import type { UserRecord, UsersRepo } from "../users/repo.js";
import type { ActivityType, XpActivityType } from "./activity.js";
import { BADGE_BY_ID, BADGES } from "./badges.js";
import { LEVELS, levelFor, levelIndexFor } from "./levels.js";
import type { ActivityRecord, XpRepo } from "./repo.js";

export interface XpAward {
  type: XpActivityType;
  description: string;
  xp: number;
  /** The domain fact (loan id, tx hash, guardian id): one award per (user, type, sourceId). */
  sourceId: string;
  /**
   * Earned at most once per UTC day (of `now`) for this type: a later fact of the same day is
   * written to the activity feed with 0 XP (D-88: repeating an action in a circle earns nothing).
   */
  daily?: boolean;
}

export interface XpAwardResult {
  /** False when this (user, type, sourceId) was awarded before: nothing changed. */
  awarded: boolean;
  /** The XP this award earned: its amount, or 0 when it was awarded before or its day's slot was taken. */
  earned: number;
  xp: number;
  level: string;
  levelsReached: string[];
  badgesEarned: string[];
}

export interface XpServiceDeps {
  db: Db;
  clock: Pick<Clock, "now">;
  repo: XpRepo;
  users: Pick<UsersRepo, "findById">;
  /** Drops this process's cached user row and badges after a commit. */
  invalidateUser(userId: string): void;
  /** Called in the transaction when the level changed (the Trust Score's level bonus depends on it). */
  onLevelChange?(tx: Tx, userId: string, reason: string): Promise<unknown>;
}

function activityView(entry: ActivityRecord) {
  return {
    id: entry.id,
    type: entry.type as ActivityType,
    description: entry.description,
    xpEarned: entry.xpEarned,
    timestamp: entry.createdAt.toISOString(),
  };
}

/** XP, levels, badges and the activity feed: the only writer and reader of them. */
export function createXpService(deps: XpServiceDeps) {
  const { repo } = deps;

  /**
   * Awards XP for a domain fact inside the caller's transaction: writes the activity entry,
   * adds the XP, writes a level_up entry per level crossed, grants newly met badges and
   * records user.level_up / user.badge_earned in the outbox, all or nothing. Idempotent by
   * (userId, type, sourceId), so indexer replays and retries award once. The caller calls
   * `invalidateUser(userId)` after its commit (or uses `award`, which does).
   */
  async function awardXp(tx: Tx, userId: string, award: XpAward, now: Date = deps.clock.now()): Promise<XpAwardResult> {
    if (!Number.isInteger(award.xp) || award.xp < 0) throw new RangeError("xp must be a non-negative integer");
    const added = await repo.addXpActivity(tx, {
      userId,
      type: award.type,
      description: award.description,
      xpEarned: award.xp,
      sourceId: award.sourceId,
      now,
      ...(award.daily && { rewardDay: now.toISOString().slice(0, 10) }),
    });
    if (!added.inserted) {
      return {
        awarded: false,
        earned: 0,
        xp: added.xp,
        level: LEVELS[levelIndexFor(added.xp)]!.name,
        levelsReached: [],
        badgesEarned: [],
      };
    }
    const user = { xp: added.xp };
    const before = levelIndexFor(user.xp - added.xpEarned);
    const after = levelIndexFor(user.xp);
    const levelsReached = LEVELS.slice(before + 1, after + 1).map((level) => level.name);
    for (const level of levelsReached) {
      await repo.insertActivity(tx, {
        userId,
        type: "level_up",
        description: `Reached level ${level}`,
        xpEarned: 0,
        sourceId: `level:${level}`,
        now,
      });
    }
    await recordEvents(
      tx,
      levelsReached.map((level) =>
        domainEvent({
          type: "user.level_up",
          userId,
          data: { userId, level, previousLevel: LEVELS[before]!.name, xp: user.xp, timestamp: now.toISOString() },
          dedupeKey: `user.level_up:${userId}:${level}`,
          now,
        }),
      ),
    );

    // Counts and badges as the award's statement read them: level_up entries count for no badge.
    const { counts, held } = added;
    const earned = BADGES.filter((badge) => !held.has(badge.id) && badge.earned({ counts, levelIndex: after }));
    if (earned.length > 0) {
      await repo.grantBadges(
        tx,
        userId,
        earned.map((badge) => badge.id),
        now,
      );
      await recordEvents(
        tx,
        earned.map((badge) =>
          domainEvent({
            type: "user.badge_earned",
            userId,
            data: { userId, badgeId: badge.id, name: badge.name, earnedAt: now.toISOString() },
            dedupeKey: `user.badge_earned:${userId}:${badge.id}`,
            now,
          }),
        ),
      );
    }
    if (levelsReached.length > 0 && deps.onLevelChange) {
      await deps.onLevelChange(tx, userId, `level up to ${levelsReached.at(-1)}`);
    }
    return {
      awarded: true,
      earned: added.xpEarned,
      xp: user.xp,
      level: LEVELS[after]!.name,
      levelsReached,
      badgesEarned: earned.map((b) => b.id),
    };
  }

  /**
   * Takes back what awards for these facts gave (D-94: a reorganisation removed them), inside the
   * caller's transaction: their activity entries and XP, the levels no longer reached (their
   * level_up entries go, so reaching one again writes it anew) and the badges no longer earned.
   * Answers the XP taken back. An award of the same fact later gives it all again, once.
   */
  async function revokeXp(tx: Tx, userId: string, sourceIds: readonly string[]): Promise<number> {
    const removed = await repo.removeXpActivities(tx, userId, sourceIds);
    if (removed.removed === 0) return 0;
    const before = levelIndexFor(removed.xp + removed.lost);
    const after = levelIndexFor(removed.xp);
    if (after < before) {
      const lost = LEVELS.slice(after + 1, before + 1).map((level) => `level:${level.name}`);
      await repo.removeActivities(tx, userId, lost);
      removed.counts.level_up = Math.max(0, (removed.counts.level_up ?? 0) - lost.length);
    }
    const unearned = BADGES.filter((badge) => removed.held.has(badge.id) && !badge.earned({ counts: removed.counts, levelIndex: after }));
    if (unearned.length > 0) {
      await repo.revokeBadges(
        tx,
        userId,
        unearned.map((badge) => badge.id),
      );
    }
    if (after < before && deps.onLevelChange) await deps.onLevelChange(tx, userId, `level back to ${LEVELS[after]!.name}`);
    return removed.lost;
  }

  return {
    awardXp,
    revokeXp,
    /** awardXp in its own transaction, then the user cache dropped. */
    async award(userId: string, award: XpAward): Promise<XpAwardResult> {
      try {
        return await deps.db.prisma.$transaction((tx) => awardXp(tx, userId, award));
      } finally {
        deps.invalidateUser(userId);
      }
    },

    /** The XP the facts of these sources earned, summed (an activity entry's sourceId is its fact's event id). */
    earnedBy: (sourceIds: readonly string[]) => repo.xpEarnedBy(sourceIds),

    /** Badge ids of a user, oldest first (the public profile lists them). */
    badgeIdsOf: async (userId: string) => (await repo.badgesOf(userId)).map((badge) => badge.badgeId),

    /** The XP and level view of a user (public achievements). */
    async view(userId: string) {
      const user = await deps.users.findById(userId);
      if (!user || user.deletedAt) throw new AppError("USER_NOT_FOUND", "User not found");
      const badges = (await repo.badgesOf(user.id)).map((badge) => ({
        id: badge.badgeId,
        name: BADGE_BY_ID.get(badge.badgeId)?.name ?? badge.badgeId,
        earnedAt: badge.earnedAt.toISOString(),
      }));
      return { userId: user.id, xp: user.xp, ...levelFor(user.xp), badges };
    },

    /** A page of the user's activity feed, newest first. */
    async activity(user: UserRecord, filter: { type?: string | undefined }, page: PageRequest) {
      const { data, pagination } = await paginate(page, repo.activityListing(user.id, filter));
      return { data: data.map(activityView), pagination };
    },

    /** The whole activity feed (account export). */
    allActivity: async (userId: string) => (await repo.allActivity(userId)).map(activityView),
  };
}

export type XpService = ReturnType<typeof createXpService>;
