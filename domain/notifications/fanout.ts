// The outbox consumer `notifications`: it only fans out. For each domain event, in the
// transaction of its page job that marks it taken, it writes the in-app rows (a database write, the feed's own
// channel) and enqueues one job per notification and outside channel (deliveries.ts), or a
// scheduled job for a notification that may not be written yet (guardian_accepted at the
// guardian's activation). The I/O happens later, in the jobs, outside any transaction.
import { WEEK_MS } from "../../core/clock.js";
import type { Db, Tx } from "../db.js";
import type { OutboxConsumer } from "../events/consumer.js";
import type { JobQueue } from "../jobs/queue.js";
import type { WeeklySummaryPayload } from "./deliveries.js";
import { NOTIFIABLE_EVENT_TYPES } from "./from-events.js";
import { SCHEDULED_JOB, WEEKLY_SUMMARY_JOB } from "./module.js";
import type { NotificationsRepo } from "./repo.js";
import type { NotificationsService } from "./service.js";
import type { NotificationItem } from "./types.js";

/** Events fanned out per transaction: large enough that a burst costs a few statements per page, small enough that a page commits in well under a second. */
const PAGE_SIZE = 500;
/** Pages fanned out at once, across processes: one transaction each. */
const FANOUT_CONCURRENCY = 4;
/**
 * In-app rows the fan-out can have written but not yet committed, at most (a page per running
 * job, each row of an event or two): how far the live feed looks back for late commits (feed.ts).
 */
export const FANOUT_ROWS_IN_FLIGHT = FANOUT_CONCURRENCY * PAGE_SIZE * 2;

export function createNotificationFanout(deps: {
  db: Db;
  notifications: Pick<NotificationsService, "itemsFor" | "notify" | "notifyMany" | "retract">;
  jobs: Pick<JobQueue, "enqueue" | "enqueueMany" | "wake">;
  repo: Pick<NotificationsRepo, "weeklySummaryRecipients">;
  /** The wallets of a vault's guardians active at an instant (domain/social-vault/repo.ts). */
  activeGuardiansOf(tx: Tx, vault: string, at: Date): Promise<string[]>;
}) {
  /** A scheduled notification still true when its time comes: an activation the owner did not undo by removing the guardian. */
  async function stillTrue(tx: Tx, item: NotificationItem, now: Date): Promise<boolean> {
    if (item.type !== "guardian_accepted") return true;
    const { vaultAddress, guardianAddress } = item.data as { vaultAddress: string; guardianAddress: string };
    const active = await deps.activeGuardiansOf(tx, vaultAddress, now);
    return active.some((wallet) => wallet.toLowerCase() === guardianAddress.toLowerCase());
  }

  return {
    /**
     * The outbox consumer `notifications`: a page (up to 500 events) per job, several at once
     * across processes: their items read with one query per kind of need, the in-app rows written
     * with one insert, their deliveries enqueued with another.
     */
    consumer: {
      name: "notifications",
      types: NOTIFIABLE_EVENT_TYPES,
      pageSize: PAGE_SIZE,
      concurrency: FANOUT_CONCURRENCY,
      async apply(tx, events, now) {
        const items = await deps.notifications.itemsFor(tx, events);
        const isLater = (item: NotificationItem) => item.notBefore !== undefined && new Date(item.notBefore) > now;
        const later = items.filter(isLater);
        await deps.jobs.enqueueMany(
          later.map((item) => ({
            kind: SCHEDULED_JOB,
            payload: { item },
            runAt: new Date(item.notBefore!),
            dedupeKey: `scheduled:${item.sourceId}:${item.userId}:${item.type}`,
          })),
          tx,
        );
        await deps.notifications.notifyMany(
          tx,
          items.filter((item) => !isLater(item)),
          now,
        );
      },
      // A fact a reorganisation removed: what it announced is corrected (D-94); a scheduled item not yet due is left to `stillTrue`.
      async revert(tx, facts, now) {
        const items = await deps.notifications.itemsFor(tx, facts);
        await deps.notifications.retract(tx, items, now);
      },
      // The deliveries were enqueued inside the page's transaction: this process's runners run them now.
      afterCommit: () => deps.jobs.wake(),
    } satisfies OutboxConsumer<(typeof NOTIFIABLE_EVENT_TYPES)[number]>,

    /**
     * One weekly summary e-mail job per user who asked for it, for the week that ends at the
     * start of `now`'s week slot (slots of 7 days on the service clock): keyed by user and week,
     * so a repeated run enqueues nothing twice. Returns how many it enqueued.
     */
    async enqueueWeeklySummaries(now: Date): Promise<number> {
      const weekEnd = Math.floor(now.getTime() / WEEK_MS) * WEEK_MS;
      const since = new Date(weekEnd - WEEK_MS).toISOString();
      let enqueued = 0;
      for (let after = ""; ; ) {
        const users = await deps.repo.weeklySummaryRecipients(after, 500);
        if (users.length === 0) break;
        const ids = await deps.jobs.enqueueMany(
          users.map((userId) => ({
            kind: WEEKLY_SUMMARY_JOB,
            payload: { userId, since, until: new Date(weekEnd).toISOString() } satisfies WeeklySummaryPayload,
            dedupeKey: `weekly:${userId}:${since}`,
          })),
        );
        enqueued += ids.length;
        after = users[users.length - 1]!;
      }
      return enqueued;
    },

    /** A scheduled notification's time has come: written (and delivered) now, once. */
    async writeScheduled({ item }: { item: NotificationItem }, now: Date): Promise<void> {
      await deps.db.prisma.$transaction(async (tx) => {
        if (await stillTrue(tx, item, now)) await deps.notifications.notify(tx, item, now);
      });
      deps.jobs.wake();
    },
  };
}

export type NotificationFanout = ReturnType<typeof createNotificationFanout>;
