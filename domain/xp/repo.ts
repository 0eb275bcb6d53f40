import { randomUUID } from "node:crypto";
import type { Clock } from "../../core/clock.js";
import { createTtlCache } from "../../core/ttl-cache.js";
import type { Activity } from "../../generated/prisma/client.js";
import type { Db, Tx } from "../db.js";

export type ActivityRecord = Activity;

const BADGE_CACHE_MAX = 50_000;
/** Same freshness as the user rows (domain/users/repo.ts): other processes' awards show within this time. */
export const BADGE_CACHE_TTL_MS = 2_000;

const newId = (prefix: string) => `${prefix}_${randomUUID().replaceAll("-", "")}`;

/** The only place activity entries and badges are read and written. */
export function createXpRepo({ db, clock }: { db: Db; clock?: Pick<Clock, "now"> }) {
  const { prisma } = db;
  const badges = createTtlCache<string, { badgeId: string; earnedAt: Date }[]>({
    max: BADGE_CACHE_MAX,
    ttlMs: clock ? BADGE_CACHE_TTL_MS : 0,
    nowMs: () => (clock ? clock.now().getTime() : 0),
  });
  return {
    /** Drops the cached badges of a user; called after a commit that changed them. */
    invalidate: (userId: string) => badges.delete(userId),

    /** The user's badges, oldest first (cached per process). */
    badgesOf: (userId: string) =>
      badges
        .load(userId, () =>
          prisma.userBadge.findMany({
            where: { userId },
            select: { badgeId: true, earnedAt: true },
            orderBy: [{ earnedAt: "asc" }, { badgeId: "asc" }],
          }),
        )
        .then((rows) => rows ?? []),

    /** The XP one fact (sourceId) earned the user, 0 when it earned none. */
    async xpEarnedFor(userId: string, sourceId: string): Promise<number> {
      const result = await prisma.activity.aggregate({ where: { userId, sourceId }, _sum: { xpEarned: true } });
      return result._sum.xpEarned ?? 0;
    },

    /** Inserts an activity entry once per (user, type, sourceId); false when it existed. */
    async insertActivity(
      tx: Tx,
      entry: { userId: string; type: string; description: string; xpEarned: number; sourceId: string; now: Date },
    ): Promise<boolean> {
      const { count } = await tx.activity.createMany({
        data: [
          {
            id: newId("act"),
            userId: entry.userId,
            type: entry.type,
            description: entry.description,
            xpEarned: entry.xpEarned,
            sourceId: entry.sourceId,
            createdAt: entry.now,
          },
        ],
        skipDuplicates: true,
      });
      return count === 1;
    },

    async activityCounts(tx: Tx, userId: string): Promise<Record<string, number>> {
      const groups = await tx.activity.groupBy({ by: ["type"], where: { userId }, _count: { _all: true } });
      return Object.fromEntries(groups.map((group) => [group.type, group._count._all]));
    },

    heldBadges: async (tx: Tx, userId: string) =>
      new Set((await tx.userBadge.findMany({ where: { userId }, select: { badgeId: true } })).map((b) => b.badgeId)),

    grantBadges: (tx: Tx, userId: string, badgeIds: string[], now: Date) =>
      tx.userBadge.createMany({ data: badgeIds.map((badgeId) => ({ userId, badgeId, earnedAt: now })), skipDuplicates: true }),

    async listActivity(userId: string, page: { limit: number; offset: number; type?: string }) {
      const where = { userId, ...(page.type ? { type: page.type } : {}) };
      const [rows, total] = await prisma.$transaction([
        prisma.activity.findMany({ where, orderBy: [{ createdAt: "desc" }, { id: "desc" }], take: page.limit, skip: page.offset }),
        prisma.activity.count({ where }),
      ]);
      return { rows, total };
    },

    allActivity: (userId: string) => prisma.activity.findMany({ where: { userId }, orderBy: [{ createdAt: "desc" }, { id: "desc" }] }),
  };
}

export type XpRepo = ReturnType<typeof createXpRepo>;
