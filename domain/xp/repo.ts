import { randomUUID } from "node:crypto";
import type { Clock } from "../../core/clock.js";
import { createTtlCache } from "../../core/ttl-cache.js";
import { type Activity, Prisma } from "../../generated/prisma/client.js";
import type { Db, Tx } from "../db.js";
import { aheadOf, type Listing, readWithPrisma, whereBeside } from "../pagination.js";

export type ActivityRecord = Activity;

/** An entry's place in the activity feed. */
type ActivityPlace = { createdAt: Date; id: string };
const ACTIVITY_ORDER = ["createdAt", "id"] as const;

/** Users' badges kept in the cache at most: the same bound as the user rows' cache. */
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

    /** The XP these facts (sourceIds) earned, 0 when they earned none. */
    async xpEarnedBy(sourceIds: readonly string[]): Promise<number> {
      const result = await prisma.activity.aggregate({ where: { sourceId: { in: [...sourceIds] } }, _sum: { xpEarned: true } });
      return result._sum.xpEarned ?? 0;
    },

    /**
     * The XP award's writes and reads in one statement: the activity entry (once per (user, type,
     * sourceId)), the user's XP raised by it, and what the level and badge checks need. The reads
     * see the rows as they were before the statement: `counts` leaves out the entry it inserts.
     * With `rewardDay`, the entry earns its XP only if no other entry of its type took that day's
     * one rewarded slot (the unique (userId, type, rewardDay) decides, so concurrent awards cannot
     * both earn); otherwise it is written with 0 XP.
     */
    async addXpActivity(
      tx: Tx,
      entry: { userId: string; type: string; description: string; xpEarned: number; sourceId: string; now: Date; rewardDay?: string },
    ): Promise<{ inserted: boolean; xpEarned: number; xp: number; counts: Record<string, number>; held: Set<string> }> {
      const createdAt = Prisma.sql`${entry.now.toISOString()}::timestamp(3)`;
      const [row] = await tx.$queryRaw<
        { inserted: boolean; xpEarned: number | null; xp: number; counts: Record<string, number> | null; held: string[] | null }[]
      >`
        WITH "rewarded" AS (
          INSERT INTO "Activity" ("id", "userId", "type", "description", "xpEarned", "sourceId", "rewardDay", "createdAt")
          VALUES (${newId("act")}, ${entry.userId}, ${entry.type}, ${entry.description}, ${entry.xpEarned}, ${entry.sourceId}, ${entry.rewardDay ?? null}, ${createdAt})
          ON CONFLICT DO NOTHING
          RETURNING "xpEarned"),
        "unrewarded" AS (
          -- The day's slot was taken: the entry still shows, without XP (nothing when the entry itself exists).
          INSERT INTO "Activity" ("id", "userId", "type", "description", "xpEarned", "sourceId", "createdAt")
          SELECT ${newId("act")}, ${entry.userId}, ${entry.type}, ${entry.description}, 0, ${entry.sourceId}, ${createdAt}
           WHERE ${entry.rewardDay ?? null}::text IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "rewarded")
          ON CONFLICT DO NOTHING
          RETURNING "xpEarned"),
        "entry" AS (SELECT "xpEarned" FROM "rewarded" UNION ALL SELECT "xpEarned" FROM "unrewarded"),
        "raised" AS (
          UPDATE "User" SET "xp" = "xp" + (SELECT "xpEarned" FROM "entry")
          WHERE "id" = ${entry.userId} AND EXISTS (SELECT 1 FROM "entry")
          RETURNING "xp")
        SELECT EXISTS (SELECT 1 FROM "entry") AS "inserted", (SELECT "xpEarned" FROM "entry") AS "xpEarned",
          COALESCE((SELECT "xp" FROM "raised"), (SELECT "xp" FROM "User" WHERE "id" = ${entry.userId})) AS "xp",
          (SELECT json_object_agg("type", "n") FROM
            (SELECT "type", count(*)::int AS "n" FROM "Activity" WHERE "userId" = ${entry.userId} GROUP BY "type") AS "c") AS "counts",
          (SELECT array_agg("badgeId") FROM "UserBadge" WHERE "userId" = ${entry.userId}) AS "held"`;
      const counts = { ...(row?.counts ?? {}) };
      if (row?.inserted) counts[entry.type] = (counts[entry.type] ?? 0) + 1;
      return {
        inserted: row?.inserted ?? false,
        xpEarned: Number(row?.xpEarned ?? 0),
        xp: Number(row?.xp ?? 0),
        counts,
        held: new Set(row?.held ?? []),
      };
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

    /**
     * Takes back the activity entries of these facts (sourceIds) and the XP they earned, in one
     * statement: answers how many entries went, the XP lost, the user's XP after, and the counts
     * by type and badges held, as the level and badge checks need them (counts without the entries).
     */
    async removeXpActivities(tx: Tx, userId: string, sourceIds: readonly string[]) {
      const [row] = await tx.$queryRaw<
        {
          removed: number;
          lost: number;
          xp: number;
          counts: Record<string, number> | null;
          gone: Record<string, number> | null;
          held: string[] | null;
        }[]
      >`
        WITH "removed" AS (
          DELETE FROM "Activity" WHERE "userId" = ${userId} AND "sourceId" = ANY(${[...sourceIds]}::text[]) RETURNING "xpEarned", "type"),
        "lowered" AS (
          UPDATE "User" SET "xp" = GREATEST(0, "xp" - (SELECT sum("xpEarned") FROM "removed"))
          WHERE "id" = ${userId} AND EXISTS (SELECT 1 FROM "removed")
          RETURNING "xp")
        SELECT (SELECT count(*) FROM "removed")::int AS "removed", COALESCE((SELECT sum("xpEarned") FROM "removed"), 0)::int AS "lost",
          COALESCE((SELECT "xp" FROM "lowered"), (SELECT "xp" FROM "User" WHERE "id" = ${userId})) AS "xp",
          (SELECT json_object_agg("type", "n") FROM
            (SELECT "type", count(*)::int AS "n" FROM "Activity" WHERE "userId" = ${userId} GROUP BY "type") AS "c") AS "counts",
          (SELECT json_object_agg("type", "n") FROM (SELECT "type", count(*)::int AS "n" FROM "removed" GROUP BY "type") AS "r") AS "gone",
          (SELECT array_agg("badgeId") FROM "UserBadge" WHERE "userId" = ${userId}) AS "held"`;
      // The statement's reads see the table before its delete: the removed entries leave the counts here.
      const counts = { ...(row?.counts ?? {}) };
      for (const [type, n] of Object.entries(row?.gone ?? {})) {
        counts[type] = (counts[type] ?? 0) - n;
      }
      return { removed: row?.removed ?? 0, lost: Number(row?.lost ?? 0), xp: Number(row?.xp ?? 0), counts, held: new Set(row?.held ?? []) };
    },

    /** Removes the entries of these sources (a level no longer reached), so reaching it again writes them anew. */
    removeActivities: (tx: Tx, userId: string, sourceIds: readonly string[]) =>
      tx.activity.deleteMany({ where: { userId, sourceId: { in: [...sourceIds] } } }),

    revokeBadges: (tx: Tx, userId: string, badgeIds: readonly string[]) =>
      tx.userBadge.deleteMany({ where: { userId, badgeId: { in: [...badgeIds] } } }),

    grantBadges: (tx: Tx, userId: string, badgeIds: string[], now: Date) =>
      tx.userBadge.createMany({ data: badgeIds.map((badgeId) => ({ userId, badgeId, earnedAt: now })), skipDuplicates: true }),

    /** The user's activity feed for `paginate`, newest first. */
    activityListing(userId: string, filter: { type?: string | undefined }): Listing<ActivityPlace, ActivityRecord> {
      const where = { userId, ...(filter.type ? { type: filter.type } : {}) };
      return {
        placeOf: (id) => prisma.activity.findFirst({ where: { id, userId }, select: { createdAt: true, id: true } }),
        read: (window) =>
          readWithPrisma(ACTIVITY_ORDER, window, (args) => prisma.activity.findMany({ ...args, where: { AND: [where, args.where] } })),
        count: (ahead) =>
          prisma.activity.count({
            where: ahead ? { AND: [where, whereBeside(ACTIVITY_ORDER, ahead.place, aheadOf(ahead.inclusive))] } : where,
          }),
      };
    },

    allActivity: (userId: string) => prisma.activity.findMany({ where: { userId }, orderBy: [{ createdAt: "desc" }, { id: "desc" }] }),
  };
}

export type XpRepo = ReturnType<typeof createXpRepo>;
