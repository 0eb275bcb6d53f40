import { coalesce } from "../../core/coalesce.js";
import { Prisma } from "../../generated/prisma/client.js";
import type { Db } from "../db.js";
import type { ProcessPresence } from "../processes/presence.js";

/** How long a first answer is kept: a retry within this time gets it again. */
export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
/**
 * How long a request may hold its key while it runs. A retry takes the key over past it, or as
 * soon as the holding process stops beating (domain/processes/presence.ts); the operation must
 * then find what the first attempt did (a money operation finds its recorded transaction by the
 * same key) rather than do it twice.
 */
export const IDEMPOTENCY_LOCK_MS = 120_000;

export type IdempotencyStart =
  | { kind: "started" }
  | { kind: "replay"; status: number; body: string }
  | { kind: "mismatch" }
  | { kind: "in_progress"; lockedUntil: Date };

/** This file is the only code that reads and writes IdempotencyRecord. */
type NewRecord = Prisma.IdempotencyRecordCreateManyInput & { userId: string; key: string };

/**
 * Forgets the kept answers of the keys under which these transactions, or the users' requests
 * they carry, were sent (D-92): a reorganisation removed them, so an answer naming them may no
 * longer be true. A statement for the caller's database transaction (the transactions repo's
 * `reopen`); the next request with such a key runs again and answers from the chain's outcome.
 */
export const forgetAnswersOf = (prisma: Db["prisma"], transactionIds: readonly string[]) =>
  prisma.$executeRaw`
    DELETE FROM "IdempotencyRecord" r
     USING (SELECT "userId", "idempotencyKey" FROM "ChainTransaction"
             WHERE "id" = ANY(${[...transactionIds]}::text[]) AND "userId" IS NOT NULL AND "idempotencyKey" IS NOT NULL
            UNION
            SELECT "userId", "idempotencyKey" FROM "RelayedRequest" WHERE "transactionId" = ANY(${[...transactionIds]}::text[])) k
     WHERE r."userId" = k."userId" AND r."key" = k."idempotencyKey" AND r."status" = 'completed'`;

export function createIdempotencyRepo({
  db,
  presence,
  followChain,
}: {
  db: Db;
  presence: Pick<ProcessPresence, "id" | "isAlive">;
  /**
   * Brings the relay up to the chain before a kept answer is replayed: what a reorganisation
   * removed is reopened and its keys' answers forgotten (`forgetAnswersOf`), so the replay runs
   * again instead of naming a transaction the chain no longer holds (D-92). True when it did.
   */
  followChain?: () => Promise<boolean>;
}) {
  const { prisma } = db;
  const keyOf = (record: { userId: string; key: string }) => `${record.userId} ${record.key}`;

  // Concurrent requests' first claims and their answers go as one statement each (group commit).
  /** Inserts the records whose keys are free; true for each one inserted (the first of a key repeated in the batch). */
  const claimFirst = coalesce(async (records: readonly NewRecord[]) => {
    const inserted = await prisma.idempotencyRecord.createManyAndReturn({
      data: [...records],
      skipDuplicates: true,
      select: { userId: true, key: true },
    });
    const won = new Set(inserted.map(keyOf));
    return records.map((record) => won.delete(keyOf(record)));
  });
  const completeAll = coalesce(async (answers: readonly { userId: string; key: string; status: number; body: string }[]) => {
    const rows = answers.map((answer) => Prisma.sql`(${answer.userId}, ${answer.key}, ${answer.status}::int, ${answer.body})`);
    await prisma.$executeRaw`
      UPDATE "IdempotencyRecord" AS r
         SET "status" = 'completed', "responseStatus" = v."status", "responseBody" = v."body"
        FROM (VALUES ${Prisma.join(rows)}) AS v("userId", "key", "status", "body")
       WHERE r."userId" = v."userId" AND r."key" = v."key" AND r."status" = 'in_progress'`;
    return answers.map(() => undefined);
  });

  return {
    /**
     * Claims (user, key) for a request, in one atomic step (a unique key: the first insert wins):
     * `started` for the first request (or a retry taking over an expired or abandoned claim),
     * `replay` when the answer is known, `mismatch` for another operation or body under the same
     * key, `in_progress` while another live request holds it.
     */
    async start(input: { userId: string; key: string; operation: string; requestHash: string; now: Date }): Promise<IdempotencyStart> {
      const { userId, key, now } = input;
      const holder = await presence.id();
      for (let attempt = 0; attempt < 3; attempt++) {
        const fresh: NewRecord = {
          userId,
          key,
          operation: input.operation,
          requestHash: input.requestHash,
          status: "in_progress",
          createdAt: now,
          lockedUntil: new Date(now.getTime() + IDEMPOTENCY_LOCK_MS),
          expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS),
          holder,
        };
        if (await claimFirst(fresh)) return { kind: "started" };
        const record = await prisma.idempotencyRecord.findUnique({ where: { userId_key: { userId, key } } });
        if (!record) continue; // deleted meanwhile: claim again
        if (record.expiresAt <= now) {
          // Past its 24 hours the key is free again (a conditional delete: one taker).
          await prisma.idempotencyRecord.deleteMany({ where: { userId, key, expiresAt: { lte: now } } });
          continue;
        }
        if (record.operation !== input.operation || record.requestHash !== input.requestHash) return { kind: "mismatch" };
        if (record.status === "completed") {
          if (attempt === 0 && followChain && (await followChain())) continue;
          return { kind: "replay", status: record.responseStatus!, body: record.responseBody! };
        }
        const busy = { kind: "in_progress", lockedUntil: record.lockedUntil } as const;
        // A record without a holder (written before processes beat) has only its time.
        const holderLive = !record.holder || record.holder === holder || (await presence.isAlive(record.holder));
        if (record.lockedUntil > now && holderLive) return busy;
        // The holder died (its beat stopped, or its time ran out): take the claim over, if nobody else did first.
        const { count: taken } = await prisma.idempotencyRecord.updateMany({
          where: { userId, key, status: "in_progress", lockedUntil: record.lockedUntil, holder: record.holder },
          data: { lockedUntil: new Date(now.getTime() + IDEMPOTENCY_LOCK_MS), holder },
        });
        return taken === 1 ? { kind: "started" } : busy;
      }
      return { kind: "in_progress", lockedUntil: new Date(now.getTime() + IDEMPOTENCY_LOCK_MS) };
    },

    /** Keeps the answer for replays. */
    complete: (userId: string, key: string, status: number, body: string) => completeAll({ userId, key, status, body }),

    /** Frees the key after a failure that a retry should run again (nothing was done). */
    release: (userId: string, key: string) => prisma.idempotencyRecord.deleteMany({ where: { userId, key, status: "in_progress" } }),

    /** Removes answers past their 24 hours. */
    purgeExpired: async (now: Date) => (await prisma.idempotencyRecord.deleteMany({ where: { expiresAt: { lte: now } } })).count,
  };
}

export type IdempotencyRepo = ReturnType<typeof createIdempotencyRepo>;
