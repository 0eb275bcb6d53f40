// The only code that reads or writes the notification tables: Notification (the in-app feed),
// NotificationPreference (the stored part of a user's preferences) and PushDevice. It also
// reads (never writes) what notifications need of a user: whether they exist, their language
// and switches, wallets and display names.

import { randomUUID } from "node:crypto";
import { isUuid, jsonForPostgres } from "../../core/text.js";
import type { Prisma } from "../../generated/prisma/client.js";
import type { Db, Tx } from "../db.js";
import { aheadOf, type Listing, readWithPrisma, whereBeside } from "../pagination.js";
import type { NotificationType } from "./types.js";

export interface NotificationRow {
  id: string;
  userId: string;
  type: string;
  title: string;
  body: string;
  data: Record<string, unknown>;
  read: boolean;
  createdAt: Date;
}

export interface NewNotification {
  userId: string;
  type: NotificationType;
  title: string;
  body: string;
  data: Record<string, unknown>;
  createdAt: Date;
  /** One row per key: a second insert with the same key writes nothing. */
  dedupeKey: string | null;
}

export interface ListFilter {
  unread?: boolean;
  type?: NotificationType;
}

/** A notification's place in the feed. */
type FeedPlace = { createdAt: Date; seq: bigint };
const FEED_ORDER = ["createdAt", "seq"] as const;

/** A user as notifications see them: one that exists and has not asked for deletion. */
export interface Recipient {
  id: string;
  settingsLanguage: string;
  settingsNotifications: boolean;
  settingsEmailAlerts: boolean;
}

export interface PushDeviceRow {
  deviceId: string;
  token: string;
  platform: string;
  updatedAt: Date;
}

const rowOf = (row: { data: Prisma.JsonValue } & Omit<NotificationRow, "data">): NotificationRow => ({
  id: row.id,
  userId: row.userId,
  type: row.type,
  title: row.title,
  body: row.body,
  data: (row.data ?? {}) as Record<string, unknown>,
  read: row.read,
  createdAt: row.createdAt,
});

export function createNotificationsRepo({ db }: { db: Db }) {
  const { prisma } = db;
  const feedOf = (userId: string, filter: Pick<ListFilter, "unread" | "type"> = {}) => ({
    userId,
    ...(filter.unread === undefined ? {} : { read: !filter.unread }),
    ...(filter.type === undefined ? {} : { type: filter.type }),
  });

  return {
    /**
     * Rows of every user from `afterSeq` on, in `seq` order, but those in `except` (the live feed's
     * poll, which skips the rows it handed out already; the unique index on seq serves it).
     */
    async feedAfter(afterSeq: bigint, limit: number, except: bigint[] = []): Promise<(NotificationRow & { seq: bigint })[]> {
      const rows = await prisma.notification.findMany({
        where: { seq: { gt: afterSeq, ...(except.length > 0 ? { notIn: except } : {}) } },
        orderBy: { seq: "asc" },
        take: limit,
      });
      return rows.map((row) => ({ ...rowOf(row), seq: row.seq }));
    },

    /** One user's rows after `afterSeq` (a reconnecting feed's Last-Event-ID), oldest first. */
    async userFeedAfter(userId: string, afterSeq: bigint, limit: number): Promise<(NotificationRow & { seq: bigint })[]> {
      const rows = await prisma.notification.findMany({
        where: { userId, seq: { gt: afterSeq } },
        orderBy: { seq: "asc" },
        take: limit,
      });
      return rows.map((row) => ({ ...rowOf(row), seq: row.seq }));
    },

    /** The newest seq of all rows (where a live feed starts), 0 when there are none. */
    async lastSeq(): Promise<bigint> {
      const row = await prisma.notification.findFirst({ orderBy: { seq: "desc" }, select: { seq: true } });
      return row?.seq ?? 0n;
    },

    /**
     * What a channel delivery needs, read when it runs: the notification, its recipient as they
     * are now (a user who asked for deletion, or switched the channel off since, gets nothing)
     * and their push devices. Null when the notification is gone (deleted by its user).
     */
    async forDelivery(notificationId: string) {
      // One statement: a delivery is thousands of times a burst, each read costs a round trip.
      const [row] = await prisma.$queryRaw<
        (Omit<NotificationRow, "data"> & {
          data: Prisma.JsonValue;
          email: string | null;
          deletedAt: Date | null;
          settingsNotifications: boolean | null;
          settingsEmailAlerts: boolean | null;
          userFound: boolean;
          tokens: string[];
        })[]
      >`
        SELECT n."id", n."userId", n."type", n."title", n."body", n."data", n."read", n."createdAt",
               u."id" IS NOT NULL AS "userFound", u."email", u."deletedAt", u."settingsNotifications", u."settingsEmailAlerts",
               coalesce((SELECT array_agg(d."token" ORDER BY d."token") FROM "PushDevice" d WHERE d."userId" = n."userId"), '{}') AS "tokens"
          FROM "Notification" n LEFT JOIN "User" u ON u."id" = n."userId"
         WHERE n."id" = ${notificationId}::uuid`;
      if (!row) return null;
      const { email, deletedAt, settingsNotifications, settingsEmailAlerts, userFound, tokens, ...notification } = row;
      const user = userFound
        ? { email, deletedAt, settingsNotifications: settingsNotifications!, settingsEmailAlerts: settingsEmailAlerts! }
        : null;
      return { notification: rowOf(notification), user, tokens };
    },

    /** Forgets push tokens the provider says will never work again (DeviceNotRegistered). */
    async dropTokens(tokens: string[]): Promise<number> {
      if (tokens.length === 0) return 0;
      return (await prisma.pushDevice.deleteMany({ where: { token: { in: tokens } } })).count;
    },

    /**
     * Users who asked for the weekly summary e-mail (email.enabled, the User row's switch, and
     * email.weekly_summary, off by default) and can receive one, in id order from `afterId`.
     */
    async weeklySummaryRecipients(afterId: string, limit: number): Promise<string[]> {
      const rows = await prisma.$queryRaw<{ id: string }[]>`
        SELECT u."id" FROM "User" u JOIN "NotificationPreference" p ON p."userId" = u."id"
         WHERE u."id" > ${afterId} AND u."deletedAt" IS NULL AND u."settingsEmailAlerts"
           AND u."email" IS NOT NULL AND u."email" <> ''
           AND (p."prefs" -> 'email' ->> 'weekly_summary') = 'true'
         ORDER BY u."id" LIMIT ${limit}::int`;
      return rows.map((row) => row.id);
    },

    /** What a user's week held: the notifications from `since` to `until`, how many are still unread, the newest titles. */
    async weekOf(userId: string, since: Date, until: Date) {
      const where = { userId, createdAt: { gte: since, lt: until } };
      const [count, unread, recent, user] = await Promise.all([
        prisma.notification.count({ where }),
        prisma.notification.count({ where: { ...where, read: false } }),
        prisma.notification.findMany({ where, orderBy: { createdAt: "desc" }, take: 5, select: { title: true } }),
        prisma.user.findUnique({
          where: { id: userId },
          select: { email: true, deletedAt: true, settingsEmailAlerts: true, settingsLanguage: true },
        }),
      ]);
      return { count, unread, titles: recent.map((row) => row.title), user };
    },

    /**
     * Writes rows in the caller's transaction, one statement; returns those written by id (a row
     * whose dedupeKey already has one, in the table or earlier in `rows`, is not).
     */
    async insertMany(tx: Tx, rows: (NewNotification & { id: string })[]): Promise<Map<string, NotificationRow>> {
      if (rows.length === 0) return new Map();
      // The rows as one JSON parameter (json_to_recordset): a page of 500 rows is one short
      // statement, serialized by JSON.stringify rather than escaped element by element.
      const json = jsonForPostgres(rows.map((row) => ({ ...row, createdAt: row.createdAt.toISOString() })));
      const created = await tx.$queryRaw<{ id: string }[]>`
        INSERT INTO "Notification" ("id", "userId", "type", "title", "body", "data", "createdAt", "dedupeKey")
        SELECT r."id", r."userId", r."type", r."title", r."body", r."data", r."createdAt", r."dedupeKey"
          FROM json_to_recordset(${json}::json)
            AS r ("id" uuid, "userId" text, "type" text, "title" text, "body" text, "data" jsonb, "createdAt" timestamp(3), "dedupeKey" text)
        ON CONFLICT DO NOTHING
        RETURNING "id"`;
      // Only the ids come back (which rows were new): the rows are what was sent.
      const byId = new Map(rows.map((row) => [row.id, row]));
      return new Map(
        created.map(({ id }) => {
          const { dedupeKey: _key, ...row } = byId.get(id)!;
          return [id, { ...row, read: false }];
        }),
      );
    },

    /**
     * Gives up the dedupe keys of the rows written under `keys` (D-94: a reorganisation removed
     * what they announced), so the fact announces itself again if it comes back; the rows stay in
     * the feed. Answers them.
     */
    releaseKeys: (tx: Tx, keys: readonly string[]) =>
      tx.$queryRaw<{ id: string; userId: string; type: string; title: string; data: Record<string, unknown> }[]>`
        UPDATE "Notification" SET "dedupeKey" = "dedupeKey" || ' reverted ' || "id"::text
         WHERE "dedupeKey" = ANY(${[...keys]}::text[])
        RETURNING "id"::text, "userId", "type", "title", "data"`,

    /** The user's feed for `paginate`, newest first (ties: the later write first). */
    feed(userId: string, filter: Pick<ListFilter, "unread" | "type">): Listing<FeedPlace, NotificationRow> {
      const where = feedOf(userId, filter);
      return {
        placeOf: async (id) =>
          isUuid(id) ? prisma.notification.findFirst({ where: { id, userId }, select: { createdAt: true, seq: true } }) : null,
        read: async (window) =>
          (
            await readWithPrisma(FEED_ORDER, window, (args) =>
              prisma.notification.findMany({ ...args, where: { AND: [where, args.where] } }),
            )
          ).map(rowOf),
        count: (ahead) =>
          prisma.notification.count({
            where: ahead ? { AND: [where, whereBeside(FEED_ORDER, ahead.place, aheadOf(ahead.inclusive))] } : where,
          }),
      };
    },

    unreadCount(userId: string): Promise<number> {
      return prisma.notification.count({ where: { userId, read: false } });
    },

    /** Marks one of the user's notifications read; false when the user has none with this id. */
    async markRead(userId: string, id: string): Promise<boolean> {
      const { count } = await prisma.notification.updateMany({ where: { id, userId }, data: { read: true } });
      return count > 0;
    },

    /** Marks every unread notification of the user read; returns how many were unread. */
    async markAllRead(userId: string): Promise<number> {
      const { count } = await prisma.notification.updateMany({ where: { userId, read: false }, data: { read: true } });
      return count;
    },

    async remove(userId: string, id: string): Promise<boolean> {
      const { count } = await prisma.notification.deleteMany({ where: { id, userId } });
      return count > 0;
    },

    /** The stored preferences JSON, or null when the user never changed them. */
    async storedPreferences(tx: Tx, userId: string): Promise<unknown> {
      const row = await tx.notificationPreference.findUnique({ where: { userId } });
      return row?.prefs ?? null;
    },

    /**
     * Replaces the stored preferences with `change(current)`, under the row's lock: two changes
     * of different fields at once both land (neither writes over the other's read).
     */
    async updatePreferences<T>(userId: string, now: Date, change: (current: unknown) => T): Promise<T> {
      return prisma.$transaction(async (tx) => {
        await tx.$executeRaw`
          INSERT INTO "NotificationPreference" ("userId", "prefs", "updatedAt")
          VALUES (${userId}, '{}'::jsonb, ${now.toISOString()}::timestamp(3)) ON CONFLICT DO NOTHING`;
        const [row] = await tx.$queryRaw<{ prefs: unknown }[]>`
          SELECT "prefs" FROM "NotificationPreference" WHERE "userId" = ${userId} FOR UPDATE`;
        const next = change(row?.prefs ?? {});
        await tx.notificationPreference.update({ where: { userId }, data: { prefs: next as Prisma.InputJsonValue, updatedAt: now } });
        return next;
      });
    },

    /**
     * Registers a device's push token: one token per (user, device id), replaced on a second
     * registration; the same token held by any other device (this user's or another's) moves
     * here, since a token reaches one device and its last registration says whose it is. Past
     * `maxDevices`, the user's least recently registered devices go (an app registers its token
     * again at each start, as Expo advises); answers their device ids.
     */
    async registerDevice(
      device: { userId: string; deviceId: string; token: string; platform: string; now: Date },
      maxDevices: number,
    ): Promise<string[]> {
      return prisma.$transaction(async (tx) => {
        // One user's registrations wait for each other (their cap is counted and kept at once);
        // registrations of one token too, so two devices racing never both keep it.
        await tx.$queryRaw`SELECT 1 FROM "User" WHERE "id" = ${device.userId} FOR UPDATE`;
        await tx.$executeRaw`SELECT 1 FROM pg_advisory_xact_lock(hashtext(${device.token}))`;
        await tx.pushDevice.deleteMany({ where: { token: device.token, NOT: { userId: device.userId, deviceId: device.deviceId } } });
        const now = device.now.toISOString();
        await tx.$executeRaw`
          INSERT INTO "PushDevice" ("id", "userId", "deviceId", "token", "platform", "createdAt", "updatedAt")
          VALUES (${randomUUID()}::uuid, ${device.userId}, ${device.deviceId}, ${device.token}, ${device.platform},
                  ${now}::timestamp(3), ${now}::timestamp(3))
          ON CONFLICT ("userId", "deviceId")
          DO UPDATE SET "token" = EXCLUDED."token", "platform" = EXCLUDED."platform", "updatedAt" = EXCLUDED."updatedAt"`;
        const removed = await tx.$queryRaw<{ deviceId: string }[]>`
          DELETE FROM "PushDevice"
           WHERE "userId" = ${device.userId} AND "deviceId" <> ${device.deviceId}
             AND "id" NOT IN (SELECT "id" FROM "PushDevice"
                               WHERE "userId" = ${device.userId} AND "deviceId" <> ${device.deviceId}
                               ORDER BY "updatedAt" DESC, "id" DESC
                               LIMIT ${maxDevices - 1})
          RETURNING "deviceId"`;
        return removed.map((row) => row.deviceId);
      });
    },

    /** Forgets a device; false when the user had none with this id. */
    async unregisterDevice(userId: string, deviceId: string): Promise<boolean> {
      const { count } = await prisma.pushDevice.deleteMany({ where: { userId, deviceId } });
      return count > 0;
    },

    /** The user's registered devices, most recently registered first (push delivery reads them). */
    async devicesOf(tx: Tx, userId: string): Promise<PushDeviceRow[]> {
      return tx.pushDevice.findMany({
        where: { userId },
        select: { deviceId: true, token: true, platform: true, updatedAt: true },
        orderBy: [{ updatedAt: "desc" }, { deviceId: "asc" }],
      });
    },

    /**
     * The users to notify with their stored preferences (null: never changed), read in the
     * caller's transaction in one statement; a user unknown or scheduled for deletion (DELETE
     * /users/me sets deletedAt at once) is absent.
     */
    async recipients(tx: Tx, userIds: string[]): Promise<Map<string, Recipient & { storedPreferences: unknown }>> {
      const ids = [...new Set(userIds)];
      if (ids.length === 0) return new Map();
      const rows = await tx.$queryRaw<(Recipient & { storedPreferences: unknown })[]>`
        SELECT u."id", u."settingsLanguage", u."settingsNotifications", u."settingsEmailAlerts", p."prefs" AS "storedPreferences"
          FROM "User" u LEFT JOIN "NotificationPreference" p ON p."userId" = u."id"
         WHERE u."id" = ANY(${ids}::text[]) AND u."deletedAt" IS NULL`;
      return new Map(rows.map((row) => [row.id, row]));
    },

    /** Lower-case wallet -> user id, for the wallets that are users' (deleted ones included: their feed is simply not written). */
    async usersByWallets(tx: Tx, wallets: string[]): Promise<Map<string, string>> {
      const list = [...new Set(wallets.map((wallet) => wallet.toLowerCase()))];
      if (list.length === 0) return new Map();
      const rows = await tx.$queryRaw<{ id: string; wallet: string }[]>`
        SELECT "id", lower("walletAddress") AS "wallet" FROM "User" WHERE lower("walletAddress") = ANY(${list}::text[])`;
      return new Map(rows.map((row) => [row.wallet, row.id]));
    },

    /** User id -> display name (the public profile's), for the ids that exist. */
    async displayNames(tx: Tx, userIds: string[]): Promise<Map<string, string>> {
      const ids = [...new Set(userIds)];
      if (ids.length === 0) return new Map();
      const rows = await tx.user.findMany({ where: { id: { in: ids } }, select: { id: true, displayName: true } });
      return new Map(rows.map((row) => [row.id, row.displayName]));
    },
  };
}

export type NotificationsRepo = ReturnType<typeof createNotificationsRepo>;
