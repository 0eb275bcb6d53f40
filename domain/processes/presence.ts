// Which service processes are alive. Each process beats its ServiceProcess row every
// HEARTBEAT_MS with the database's clock; a row whose beat is older than DEAD_AFTER_S belongs
// to a process that was killed, froze or lost its database. What such a process held (an
// Idempotency-Key it was answering, a user's transaction lease) is taken over as soon as its
// beat is late, instead of when the hold's own time runs out (minutes, sized for the slowest
// live request). Real time, not the service clock: moving the sandbox clock kills nobody.
import { randomUUID } from "node:crypto";
import os from "node:os";
import type { Logger } from "../../core/logger.js";
import { Prisma } from "../../generated/prisma/client.js";
import type { Db } from "../db.js";

/** How often a process beats: often enough that five missed beats (DEAD_AFTER_S) are 10 s. */
export const HEARTBEAT_MS = 2_000;
/** Five missed beats: a busy event loop or a slow statement never looks like a death. */
export const DEAD_AFTER_S = 10;

/**
 * The longest a payer's attempt holds a payment, even while its process beats: longer than an
 * attempt takes (its transaction's answer waits 60 s at most, the mirror 10 s), so a hold that
 * outlives it is one whose attempt stopped answering (D-89). Real time too: `heldUntil` is set
 * on the database's clock.
 */
export const ATTEMPT_HOLD_MAX_S = 120;

/**
 * A condition true while the attempt holding the row `alias` (status `processing`, `claimedBy`,
 * `heldUntil`) holds it: its process beats and its time is not up, both on the database's clock.
 */
export const attemptHolds = (alias: string) =>
  Prisma.raw(`(${alias}."status" = 'processing' AND ${alias}."heldUntil" > now() AND ${processAlive(`${alias}."claimedBy"`).sql})`);

/** What an attempt's claim sets `heldUntil` to: ATTEMPT_HOLD_MAX_S from now on the database's clock. */
export const HOLD_UNTIL = Prisma.raw(`now() + make_interval(secs => ${ATTEMPT_HOLD_MAX_S})`);

/** Rows of processes dead this long are pruned (`pruneDead`): a dead row says no more than a missing one. */
export const PRUNE_DEAD_AFTER_S = 3_600;

/**
 * A condition true while the process named by the column `processId` beats, on the database's
 * clock: the one rule for every hold's staleness. A hold without a process (NULL, or a pruned
 * row) is never alive.
 */
export const processAlive = (processId: string) =>
  Prisma.raw(
    `EXISTS (SELECT 1 FROM "ServiceProcess" sp WHERE sp."id" = ${processId} AND sp."heartbeatAt" > now() - make_interval(secs => ${DEAD_AFTER_S}))`,
  );

export interface ProcessPresence {
  /** This process's id, once its row is written: what it holds carries it. */
  id(): Promise<string>;
  /** Whether the process `processId` beats. */
  isAlive(processId: string): Promise<boolean>;
  /** Stops beating and removes the row: what it still holds is free at once. */
  stop(): Promise<void>;
  /** Deletes the rows of processes dead for PRUNE_DEAD_AFTER_S (killed, not stopped); answers how many. */
  pruneDead(): Promise<number>;
}

export function createProcessPresence({ db, kind, logger }: { db: Db; kind: string; logger?: Pick<Logger, "warn"> }): ProcessPresence {
  const id = randomUUID();
  let registered: Promise<string> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let failing = false;

  const beat = () =>
    db.prisma.$executeRaw`
      INSERT INTO "ServiceProcess" ("id", "kind", "pid", "host", "startedAt", "heartbeatAt")
      VALUES (${id}, ${kind}, ${process.pid}, ${os.hostname()}, now(), now())
      ON CONFLICT ("id") DO UPDATE SET "heartbeatAt" = now()`;

  return {
    // Registered on first use, so a process that never holds anything writes nothing.
    id() {
      registered ??= beat().then(() => {
        timer = setInterval(() => {
          if (stopped) return;
          beat().then(
            () => {
              failing = false;
            },
            (error: Error) => {
              if (!failing) logger?.warn({ error: error.message }, "process heartbeat failed; retrying");
              failing = true;
            },
          );
        }, HEARTBEAT_MS);
        timer.unref();
        return id;
      });
      registered.catch(() => {
        registered = undefined;
      });
      return registered;
    },

    async isAlive(processId) {
      const [row] = await db.plain.$queryRaw<{ alive: boolean }[]>`
        SELECT ${processAlive(`v."id"`)} AS "alive" FROM (SELECT ${processId}::text AS "id") v`;
      return row?.alive === true;
    },

    async pruneDead() {
      return db.plain.$executeRaw`
        DELETE FROM "ServiceProcess" WHERE "heartbeatAt" < now() - make_interval(secs => ${PRUNE_DEAD_AFTER_S}::int)`;
    },

    async stop() {
      stopped = true;
      clearInterval(timer);
      if (registered) await db.prisma.serviceProcess.deleteMany({ where: { id } }).catch(() => undefined);
    },
  };
}
