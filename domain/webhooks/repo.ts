import { randomUUID } from "node:crypto";
import { coalesce } from "../../core/coalesce.js";
import { jsonForPostgres } from "../../core/text.js";
import type { Db, RawTx, Tx } from "../db.js";
import { type EventType, isEventType } from "../events/catalogue.js";
import { isWebhookEvent, type WebhookEvent } from "./events.js";

export interface WebhookRow {
  id: string;
  userId: string;
  url: string;
  events: WebhookEvent[];
  secret: string;
  previousSecret: string | null;
  previousSecretUntil: Date | null;
  status: string;
  /** The outbox's last seq at its creation: it hears the events after it. */
  fromSeq: bigint;
  createdAt: Date;
  updatedAt: Date;
}

export interface DeliveryRow {
  id: string;
  webhookId: string;
  eventId: string;
  /** The name as delivered: one of DeliveryEvent's, or a name a later release took off the list. */
  event: string;
  attempt: number;
  status: string;
  statusCode: number;
  durationMs: number;
  error: string | null;
  createdAt: Date;
}

export type NewDelivery = Omit<DeliveryRow, "id">;

/** A domain event as a delivery attempt reads it. */
export interface AttemptEvent {
  id: string;
  type: EventType;
  data: unknown;
  createdAt: Date;
  revertedAt: Date | null;
}

/**
 * Real ms the attempts' log rows collect for before one INSERT: a job sends its next request
 * meanwhile and awaits its rows only before its outcome, so a few ms cost no delivery time, and
 * a statement of many rows costs much less per row than one of few.
 */
const LOG_COLLECT_MS = 5;

/** What an item of a delivery job reads beside its webhook (forJob). */
export interface ItemRead {
  event: AttemptEvent | null;
  /** An attempt of the payload a follow-up depends on was logged at this webhook. */
  attempted: boolean;
  /** The last attempt logged of the payload this item sends (0: none, or not asked). */
  lastAttempt: number;
  /** A success of it was logged since the job was created (false when not asked). */
  delivered: boolean;
}

/** What a try of a delivery job reads (forJob): its webhook (null when gone) and each item's. */
export interface JobRead {
  webhook: WebhookRow | null;
  items: ItemRead[];
}

/** One item of a job as forJob is asked about it. */
export interface ItemWanted {
  /** The event whose row it reads. */
  eventId: string;
  /** The payload whose earlier attempt at this webhook decides whether a reorg's follow-up is sent. */
  attemptedId?: string | undefined;
  /** The payload it sends: its attempts logged so far. */
  payloadId: string;
}

interface JobWanted {
  webhookId: string;
  items: readonly ItemWanted[];
  since: Date;
  /** Whether the attempts logged before matter (a job's later try, or a retry split out of a batch). */
  history: boolean;
}

// The event names and types of the rows read, text columns, are typed here, checked, once.

/**
 * A stored webhook's subscriptions: the names still in WEBHOOK_EVENTS (the service writes no
 * other; a name taken off the list is never delivered, so it is dropped, not an error).
 */
const subscribed = <R extends { events: string[] }>(row: R): Omit<R, "events"> & { events: WebhookEvent[] } => ({
  ...row,
  events: row.events.filter(isWebhookEvent),
});

/** An outbox event's type: one of the catalogue's (the outbox takes no other); any other is an error. */
const cataloged = <R extends { type: string }>(row: R): Omit<R, "type"> & { type: EventType } => {
  if (!isEventType(row.type)) throw new Error(`An outbox event has a type not in the catalogue: ${row.type}`);
  return { ...row, type: row.type };
};

export function createWebhooksRepo({ db }: { db: Db }) {
  const { prisma } = db;

  // The reads of the jobs that start together are three statements at most, on plain SQL (the
  // hot path): their webhooks, their events, and (for later tries and reorg follow-ups only)
  // their attempts logged.
  const readForJobs = coalesce(async (jobs: readonly JobWanted[]): Promise<JobRead[]> => {
    const webhookIds = [...new Set(jobs.map((job) => job.webhookId))];
    const eventIds = [...new Set(jobs.flatMap((job) => job.items.map((item) => item.eventId)))];
    const asked = jobs.flatMap((job, j) =>
      job.items.flatMap((item, i) => (job.history || item.attemptedId !== undefined ? [{ key: `${j}:${i}`, job, item }] : [])),
    );
    const [webhooks, events, attempts] = await Promise.all([
      db.plain.$queryRaw<(Omit<WebhookRow, "events"> & { events: string[] })[]>`
        SELECT "id", "userId", "url", "events", "secret", "previousSecret", "status", "fromSeq", "previousSecretUntil", "createdAt", "updatedAt"
          FROM "Webhook" WHERE "id" = ANY(${webhookIds}::uuid[])`,
      db.plain.$queryRaw<{ id: string; type: string; data: unknown; createdAt: Date; revertedAt: Date | null }[]>`
        SELECT "id", "type", "data", "createdAt", "revertedAt" FROM "DomainEvent" WHERE "id" = ANY(${eventIds}::uuid[])`,
      asked.length === 0
        ? []
        : db.plain.$queryRaw<{ key: string; attempted: boolean; lastAttempt: number; delivered: boolean }[]>`
            SELECT v."key",
                v."attemptedId" IS NOT NULL
                  AND EXISTS (SELECT 1 FROM "WebhookDelivery" d WHERE d."webhookId" = v."webhookId" AND d."eventId" = v."attemptedId") AS "attempted",
                CASE WHEN v."history" THEN coalesce((SELECT max(d."attempt") FROM "WebhookDelivery" d
                  WHERE d."webhookId" = v."webhookId" AND d."eventId" = v."payloadId"), 0) ELSE 0 END AS "lastAttempt",
                v."history" AND EXISTS (SELECT 1 FROM "WebhookDelivery" d WHERE d."webhookId" = v."webhookId"
                  AND d."eventId" = v."payloadId" AND d."status" = 'success' AND d."createdAt" >= v."since") AS "delivered"
              FROM unnest(${asked.map((entry) => entry.key)}::text[], ${asked.map((entry) => entry.job.webhookId)}::uuid[],
                  ${asked.map((entry) => entry.item.attemptedId ?? null)}::text[], ${asked.map((entry) => entry.item.payloadId)}::text[],
                  ${asked.map((entry) => entry.job.since.toISOString())}::timestamp(3)[], ${asked.map((entry) => entry.job.history)}::bool[])
                AS v ("key", "webhookId", "attemptedId", "payloadId", "since", "history")`,
    ]);
    const webhookById = new Map(webhooks.map((row): [string, WebhookRow] => [row.id, subscribed(row)]));
    // An event whose type is no longer in the catalogue is read as gone: nothing of it can be
    // sent, and it never holds the other items of the jobs read with it.
    const eventById = new Map(
      events.flatMap((row): [string, AttemptEvent][] => (isEventType(row.type) ? [[row.id, { ...row, type: row.type }]] : [])),
    );
    const attemptsByKey = new Map(attempts.map((row) => [row.key, row]));
    return jobs.map((job, j) => ({
      webhook: webhookById.get(job.webhookId) ?? null,
      items: job.items.map((item, i) => {
        const logged = attemptsByKey.get(`${j}:${i}`);
        return {
          event: eventById.get(item.eventId) ?? null,
          attempted: logged?.attempted === true,
          lastAttempt: Number(logged?.lastAttempt ?? 0),
          delivered: logged?.delivered === true,
        };
      }),
    }));
  });

  // The rows as one JSON parameter (json_to_recordset), where array parameters are escaped
  // element by element in JavaScript; the attempts of a few ms go as one statement.
  const insertDelivery = coalesce(
    async (deliveries: readonly DeliveryRow[]): Promise<DeliveryRow[]> => {
      // A text value cannot carry U+0000 (an error message quoting a receiver's bytes).
      const rows = jsonForPostgres(
        deliveries.map((row) => (row.error?.includes("\u0000") ? { ...row, error: row.error.replaceAll("\u0000", "") } : row)),
      );
      await db.plain.$executeRaw`
        INSERT INTO "WebhookDelivery" ("id", "webhookId", "eventId", "event", "attempt", "status", "statusCode", "durationMs", "error", "createdAt")
        SELECT * FROM json_to_recordset(${rows}::json) AS v ("id" uuid, "webhookId" uuid, "eventId" text, "event" text, "attempt" int,
          "status" text, "statusCode" int, "durationMs" int, "error" text, "createdAt" timestamp(3))`;
      return [...deliveries];
    },
    { collectMs: LOG_COLLECT_MS },
  );

  return {
    /**
     * Inserts the webhook unless the user already has `max` (checked under a lock of the user's
     * row, so two concurrent creations cannot both pass the count) or this URL. Answers
     * "limit", "exists" or the row.
     */
    async create(row: Omit<WebhookRow, "id" | "fromSeq">, max: number): Promise<WebhookRow | "limit" | "exists"> {
      return prisma.$transaction(async (tx) => {
        await tx.$queryRaw`SELECT 1 FROM "User" WHERE "id" = ${row.userId} FOR UPDATE`;
        // The URL first: URL_EXISTS is part 7's code, the limit an extension.
        if (await tx.webhook.findFirst({ where: { userId: row.userId, url: row.url }, select: { id: true } })) return "exists" as const;
        if ((await tx.webhook.count({ where: { userId: row.userId } })) >= max) return "limit" as const;
        const created = await tx.webhook.createManyAndReturn({ data: [{ id: randomUUID(), ...row }], skipDuplicates: true });
        if (!created[0]) return "exists" as const;
        // It hears what happens from now on: the events recorded before it are not its.
        await tx.$executeRaw`UPDATE "Webhook" SET "fromSeq" = (SELECT coalesce(max("seq"), 0) FROM "DomainEvent") WHERE "id" = ${created[0].id}::uuid`;
        return subscribed(created[0]);
      });
    },

    list: async (userId: string): Promise<WebhookRow[]> =>
      (await prisma.webhook.findMany({ where: { userId }, orderBy: [{ createdAt: "asc" }, { id: "asc" }] })).map(subscribed),

    /** Whether the user has a webhook for this URL (as stored: the URL's normal form). */
    hasUrl: async (userId: string, url: string) => (await prisma.webhook.count({ where: { userId, url } })) > 0,

    /** The user's webhook; null for another user's or an unknown id. */
    find: async (userId: string, id: string): Promise<WebhookRow | null> => {
      const row = await prisma.webhook.findFirst({ where: { id, userId } });
      return row && subscribed(row);
    },

    async update(userId: string, id: string, data: { events?: WebhookEvent[]; status?: string }, now: Date): Promise<WebhookRow | null> {
      const { count } = await prisma.webhook.updateMany({ where: { id, userId }, data: { ...data, updatedAt: now } });
      if (count === 0) return null;
      const row = await prisma.webhook.findFirst({ where: { id, userId } });
      return row && subscribed(row);
    },

    async remove(userId: string, id: string): Promise<boolean> {
      const { count } = await prisma.webhook.deleteMany({ where: { id, userId } });
      return count === 1;
    },

    /** Each webhook's newest attempt. */
    async lastDeliveries(webhookIds: string[]): Promise<Map<string, DeliveryRow>> {
      if (webhookIds.length === 0) return new Map();
      const rows = await prisma.$queryRaw<DeliveryRow[]>`
        SELECT DISTINCT ON ("webhookId") "id", "webhookId", "eventId", "event", "attempt", "status",
            "statusCode", "durationMs", "error", "createdAt"
          FROM "WebhookDelivery" WHERE "webhookId" = ANY(${webhookIds}::uuid[])
          ORDER BY "webhookId", "createdAt" DESC, "id" DESC`;
      return new Map(rows.map((row) => [row.webhookId, row]));
    },

    deliveries: async (webhookId: string, limit: number): Promise<DeliveryRow[]> =>
      prisma.webhookDelivery.findMany({ where: { webhookId }, orderBy: [{ createdAt: "desc" }, { id: "desc" }], take: limit }),

    /** A domain event, as the outbox keeps it. */
    event: async (id: string) => {
      const row = await prisma.domainEvent.findUnique({ where: { id } });
      return row && cataloged(row);
    },

    /**
     * A replay's events: of `types` since `since` (service clock) and after the outbox's `fromSeq`,
     * not reverted, the user's (everyone's for the `everyones` types), in their order; `limit` at most.
     */
    async eventsSince<T extends EventType>(
      userId: string,
      { types, everyones, since, fromSeq }: { types: readonly T[]; everyones: readonly T[]; since: Date; fromSeq: bigint },
      limit: number,
    ): Promise<{ id: string; type: T }[]> {
      const rows = await prisma.$queryRaw<{ id: string; type: string }[]>`
        SELECT "id", "type" FROM "DomainEvent"
          WHERE "createdAt" >= ${since.toISOString()}::timestamp(3) AND "type" = ANY(${types}::text[]) AND "revertedAt" IS NULL
            AND "seq" > ${fromSeq}
            AND ("userId" = ${userId} OR "type" = ANY(${everyones}::text[]))
          ORDER BY "createdAt", "seq" LIMIT ${limit}`;
      const asked = (type: string): type is T => (types as readonly string[]).includes(type);
      return rows.map(({ id, type }) => {
        if (!asked(type)) throw new Error(`A replay read an event of a type it did not ask for: ${type}`);
        return { id, type };
      });
    },

    /**
     * What a try of a delivery job reads: its webhook and each item's event (null when gone);
     * whether the payload `attemptedId` was ever attempted at this webhook (a reorg's follow-up
     * asks); and, with `history` (a later try), of the payload an item sends the last attempt
     * logged and whether a success was logged since `since` (its job's creation: a try after a
     * crash skips what the crashed one delivered). The reads of jobs that start together go out
     * together.
     */
    forJob: (webhookId: string, items: readonly ItemWanted[], since: Date, { history }: { history: boolean }) =>
      readForJobs({ webhookId, items, since, history }),

    /** The active webhooks subscribed to any of `names`: those of `users`, and everyone's for the `everyones` names. */
    subscribers: async (tx: RawTx, names: WebhookEvent[], users: string[], everyones: WebhookEvent[]) =>
      (
        await tx.$queryRaw<{ id: string; userId: string; events: string[]; fromSeq: bigint }[]>`
          SELECT "id", "userId", "events", "fromSeq" FROM "Webhook"
            WHERE "status" = 'active' AND "events" && ${names}::text[]
              AND ("userId" = ANY(${users}::text[]) OR "events" && ${everyones}::text[])`
      ).map(subscribed),

    /** Turns an active webhook failing; false when it was not active (another attempt did it first). */
    async markFailing(tx: Tx, id: string, now: Date): Promise<boolean> {
      const { count } = await tx.webhook.updateMany({ where: { id, status: "active" }, data: { status: "failing", updatedAt: now } });
      return count === 1;
    },

    /** The new secret, the current one kept as the previous until `until`. */
    async rotate(userId: string, id: string, sealed: string, until: Date, now: Date): Promise<boolean> {
      const count = await prisma.$executeRaw`
        UPDATE "Webhook" SET "previousSecret" = "secret", "previousSecretUntil" = ${until.toISOString()}::timestamp(3),
            "secret" = ${sealed}, "updatedAt" = ${now.toISOString()}::timestamp(3)
          WHERE "id" = ${id}::uuid AND "userId" = ${userId}`;
      return count === 1;
    },

    delivery: async (webhookId: string, id: string): Promise<DeliveryRow | null> => {
      const row = await prisma.webhookDelivery.findFirst({ where: { id, webhookId } });
      return row;
    },

    /** The highest attempt number logged for an event at a webhook. */
    async lastAttempt(webhookId: string, eventId: string): Promise<number> {
      const found = await prisma.webhookDelivery.aggregate({ where: { webhookId, eventId }, _max: { attempt: true } });
      return found._max.attempt ?? 0;
    },

    /** Deletes the deliveries logged before `before`, a thousand at a time; answers how many. */
    async pruneDeliveries(before: Date): Promise<number> {
      let deleted = 0;
      for (;;) {
        const count = await prisma.$executeRaw`
          DELETE FROM "WebhookDelivery" WHERE "id" IN (
            SELECT "id" FROM "WebhookDelivery" WHERE "createdAt" < ${before.toISOString()}::timestamp(3) LIMIT 1000)`;
        deleted += count;
        if (count < 1000) return deleted;
      }
    },

    /** Logs an attempt; the attempts that end together are one INSERT (core/coalesce.ts). */
    recordDelivery: (delivery: NewDelivery) => insertDelivery({ id: randomUUID(), ...delivery }),
  };
}

export type WebhooksRepo = ReturnType<typeof createWebhooksRepo>;
