import { randomUUID } from "node:crypto";
import { coalesce } from "../../core/coalesce.js";
import { jsonForPostgres } from "../../core/text.js";
import type { Db, Tx } from "../db.js";

export interface WebhookRow {
  id: string;
  userId: string;
  url: string;
  events: string[];
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
  type: string;
  data: unknown;
  createdAt: Date;
  revertedAt: Date | null;
}

/** What an attempt reads (forAttempt). */
export interface AttemptRead {
  webhook: WebhookRow | null;
  event: AttemptEvent | null;
  /** An attempt of the payload a follow-up depends on was logged at this webhook. */
  attempted: boolean;
  /** The last attempt logged of the payload this item sends (0: none). */
  lastAttempt: number;
  /** A success of it was logged since the job was created. */
  delivered: boolean;
}

type WebhookJson = Omit<WebhookRow, "previousSecretUntil" | "createdAt" | "updatedAt" | "fromSeq"> & {
  fromSeq: string;
  previousSecretUntil: string | null;
  createdAt: string;
  updatedAt: string;
};

export function createWebhooksRepo({ db }: { db: Db }) {
  const { prisma } = db;

  const readForAttempt = coalesce(
    async (
      wanted: readonly { webhookId: string; eventId: string; attemptedId: string | undefined; payloadId: string; since: string }[],
    ): Promise<AttemptRead[]> => {
      const input = jsonForPostgres(wanted.map((entry, i) => ({ i, ...entry, attemptedId: entry.attemptedId ?? null })));
      const rows = await prisma.$queryRaw<
        {
          i: number;
          webhook: WebhookJson | null;
          event: AttemptEvent | null;
          attempted: boolean;
          lastAttempt: number;
          delivered: boolean;
        }[]
      >`
        SELECT v."i",
            (SELECT row_to_json(w) FROM (SELECT "id"::text AS "id", "userId", "url", "events", "secret", "previousSecret",
                "previousSecretUntil", "status", "createdAt", "updatedAt", "fromSeq"::text AS "fromSeq" FROM "Webhook" WHERE "id" = v."webhookId") w) AS "webhook",
            (SELECT row_to_json(e) FROM (SELECT "id"::text AS "id", "type", "data", "createdAt", "revertedAt"
                FROM "DomainEvent" WHERE "id" = v."eventId") e) AS "event",
            v."attemptedId" IS NOT NULL
              AND EXISTS (SELECT 1 FROM "WebhookDelivery" d WHERE d."webhookId" = v."webhookId" AND d."eventId" = v."attemptedId") AS "attempted",
            coalesce((SELECT max(d."attempt") FROM "WebhookDelivery" d WHERE d."webhookId" = v."webhookId" AND d."eventId" = v."payloadId"), 0) AS "lastAttempt",
            EXISTS (SELECT 1 FROM "WebhookDelivery" d WHERE d."webhookId" = v."webhookId" AND d."eventId" = v."payloadId"
                      AND d."status" = 'success' AND d."createdAt" >= v."since") AS "delivered"
          FROM json_to_recordset(${input}::json)
            AS v ("i" int, "webhookId" uuid, "eventId" uuid, "attemptedId" text, "payloadId" text, "since" timestamp(3))`;
      const byIndex = new Map(rows.map((row) => [row.i, row]));
      // row_to_json writes timestamps without a zone: they are UTC.
      const utc = (text: string | null) => (text === null ? null : new Date(`${text}Z`));
      return wanted.map((_, i) => {
        const row = byIndex.get(i);
        const webhook = row?.webhook ?? null;
        const event = row?.event ?? null;
        return {
          webhook: webhook && {
            ...webhook,
            fromSeq: BigInt(webhook.fromSeq),
            previousSecretUntil: utc(webhook.previousSecretUntil),
            createdAt: utc(webhook.createdAt)!,
            updatedAt: utc(webhook.updatedAt)!,
          },
          event: event && {
            ...event,
            createdAt: utc(event.createdAt as unknown as string)!,
            revertedAt: utc(event.revertedAt as unknown as string | null),
          },
          attempted: row?.attempted === true,
          lastAttempt: Number(row?.lastAttempt ?? 0),
          delivered: row?.delivered === true,
        };
      });
    },
  );

  const insertDelivery = coalesce(async (deliveries: readonly DeliveryRow[]): Promise<DeliveryRow[]> => {
    const rows = jsonForPostgres(deliveries.map((row) => ({ ...row, createdAt: row.createdAt.toISOString() })));
    await prisma.$executeRaw`
      INSERT INTO "WebhookDelivery" ("id", "webhookId", "eventId", "event", "attempt", "status", "statusCode", "durationMs", "error", "createdAt")
      SELECT v."id", v."webhookId", v."eventId", v."event", v."attempt", v."status", v."statusCode", v."durationMs", v."error", v."createdAt"
        FROM json_to_recordset(${rows}::json) AS v ("id" uuid, "webhookId" uuid, "eventId" text, "event" text, "attempt" int, "status" text,
          "statusCode" int, "durationMs" int, "error" text, "createdAt" timestamp(3))`;
    return [...deliveries];
  });

  return {
    /**
     * Inserts the webhook unless the user already has `max` (checked under a lock of the user's
     * row, so two concurrent creations cannot both pass the count) or this URL. Answers
     * "limit", "exists" or the row.
     */
    async create(row: Omit<WebhookRow, "id" | "fromSeq">, max: number): Promise<WebhookRow | "limit" | "exists"> {
      return prisma.$transaction(async (tx) => {
        await tx.$queryRaw`SELECT 1 FROM "User" WHERE "id" = ${row.userId} FOR UPDATE`;
        if ((await tx.webhook.count({ where: { userId: row.userId } })) >= max) return "limit" as const;
        const created = await tx.webhook.createManyAndReturn({ data: [{ id: randomUUID(), ...row }], skipDuplicates: true });
        if (!created[0]) return "exists" as const;
        // It hears what happens from now on: the events recorded before it are not its.
        await tx.$executeRaw`UPDATE "Webhook" SET "fromSeq" = (SELECT coalesce(max("seq"), 0) FROM "DomainEvent") WHERE "id" = ${created[0].id}::uuid`;
        return created[0];
      });
    },

    list: (userId: string) => prisma.webhook.findMany({ where: { userId }, orderBy: [{ createdAt: "asc" }, { id: "asc" }] }),

    /** The user's webhook; null for another user's or an unknown id. */
    find: (userId: string, id: string) => prisma.webhook.findFirst({ where: { id, userId } }),

    async update(userId: string, id: string, data: { events?: string[]; status?: string }, now: Date): Promise<WebhookRow | null> {
      const { count } = await prisma.webhook.updateMany({ where: { id, userId }, data: { ...data, updatedAt: now } });
      return count === 0 ? null : prisma.webhook.findFirst({ where: { id, userId } });
    },

    async remove(userId: string, id: string): Promise<boolean> {
      const { count } = await prisma.webhook.deleteMany({ where: { id, userId } });
      return count === 1;
    },

    /** Each webhook's newest attempt. */
    async lastDeliveries(webhookIds: string[]): Promise<Map<string, DeliveryRow>> {
      if (webhookIds.length === 0) return new Map();
      const rows = await prisma.$queryRaw<DeliveryRow[]>`
        SELECT DISTINCT ON ("webhookId") "id"::text AS "id", "webhookId"::text AS "webhookId", "eventId", "event", "attempt", "status",
            "statusCode", "durationMs", "error", "createdAt"
          FROM "WebhookDelivery" WHERE "webhookId" = ANY(${webhookIds}::uuid[])
          ORDER BY "webhookId", "createdAt" DESC, "id" DESC`;
      return new Map(rows.map((row) => [row.webhookId, row]));
    },

    deliveries: (webhookId: string, limit: number) =>
      prisma.webhookDelivery.findMany({ where: { webhookId }, orderBy: [{ createdAt: "desc" }, { id: "desc" }], take: limit }),

    /** The event names some active webhook subscribes to. */
    async subscribedNames(): Promise<string[]> {
      const rows = await prisma.$queryRaw<{ name: string }[]>`
        SELECT DISTINCT unnest("events") AS "name" FROM "Webhook" WHERE "status" = 'active'`;
      return rows.map((row) => row.name);
    },

    /** A domain event, as the outbox keeps it. */
    event: (id: string) => prisma.domainEvent.findUnique({ where: { id } }),

    /**
     * What an attempt of a delivery job reads: its webhook and event (either null when gone);
     * whether the payload `attemptedId` was ever attempted at this webhook (a reorg's follow-up
     * asks); and, of the payload it sends (`payloadId`), the last attempt logged and whether a
     * success was logged since `since` (its job's creation: a try after a crash skips what the
     * crashed one delivered). The reads of attempts that start together are one statement.
     */
    forAttempt: (webhookId: string, eventId: string, attemptedId: string | undefined, payloadId: string, since: Date) =>
      readForAttempt({ webhookId, eventId, attemptedId, payloadId, since: since.toISOString() }),

    /** The active webhooks subscribed to any of `names`: those of `users`, and everyone's for the `everyones` names. */
    subscribers: (tx: Tx, names: string[], users: string[], everyones: string[]) =>
      tx.$queryRaw<(Pick<WebhookRow, "id" | "userId" | "events"> & { fromSeq: bigint })[]>`
        SELECT "id"::text AS "id", "userId", "events", "fromSeq" FROM "Webhook"
          WHERE "status" = 'active' AND "events" && ${names}::text[]
            AND ("userId" = ANY(${users}::text[]) OR "events" && ${everyones}::text[])`,

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

    delivery: (webhookId: string, id: string) => prisma.webhookDelivery.findFirst({ where: { id, webhookId } }),

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
