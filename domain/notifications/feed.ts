// The live feed behind GET /v1/notifications/stream: one poller per process reads the in-app
// rows written since its last look (by any process: API, worker) and hands each to the
// subscribers of its user. Polling, not LISTEN/NOTIFY, because PGlite's one session delivers no
// notifications across connections and one mechanism serves both databases; a poll of the seq
// index every 200 ms costs one indexed read while anyone listens, none while nobody does.
import type { Logger } from "../../core/logger.js";
import { FANOUT_ROWS_IN_FLIGHT } from "./fanout.js";
import type { NotificationRow, NotificationsRepo } from "./repo.js";
import { type NotificationView, viewOf } from "./service.js";

export type FeedItem = NotificationView & { seq: bigint };
type Listener = (item: FeedItem) => void;

const POLL_MS = 200;
const BATCH = 500;
/**
 * Sequence numbers are taken at insert but become visible at commit, so a row with a lower seq
 * can appear after a higher one was read. Each poll looks this far below the highest seq seen and
 * skips what it already handed out, so a late commit is still delivered: as far as the fan-out's
 * pages in flight reach, and as much again for the single writes (scheduled and test notifications).
 */
const LATE_COMMIT_WINDOW = BigInt(2 * FANOUT_ROWS_IN_FLIGHT);

export function createNotificationFeed(deps: {
  repo: Pick<NotificationsRepo, "feedAfter" | "userFeedAfter" | "lastSeq">;
  logger?: Pick<Logger, "warn">;
  pollMs?: number;
}) {
  const listeners = new Map<string, Set<Listener>>();
  /** How to end each open subscription when the process stops (a stream never ends by itself). */
  const enders = new Set<() => void>();
  let timer: NodeJS.Timeout | undefined;
  let highest: bigint | undefined;
  const handed = new Set<bigint>();
  let polling = false;
  let failing = false;

  const itemOf = (row: NotificationRow & { seq: bigint }): FeedItem => ({ ...viewOf(row), seq: row.seq });

  async function poll() {
    if (polling || highest === undefined) return;
    polling = true;
    try {
      const low = highest > LATE_COMMIT_WINDOW ? highest - LATE_COMMIT_WINDOW : 0n;
      for (;;) {
        // Only the rows not handed out yet come back: a burst's window is thousands of rows.
        const fresh = await deps.repo.feedAfter(low, BATCH, [...handed]);
        for (const row of fresh) {
          handed.add(row.seq);
          if (row.seq > highest!) highest = row.seq;
          for (const listener of listeners.get(row.userId) ?? []) listener(itemOf(row));
        }
        if (fresh.length < BATCH) break;
      }
      const floor = highest > LATE_COMMIT_WINDOW ? highest - LATE_COMMIT_WINDOW : 0n;
      for (const seq of handed) if (seq <= floor) handed.delete(seq);
      failing = false;
    } catch (error) {
      if (!failing) deps.logger?.warn({ error: (error as Error).message }, "notification feed: poll failed; retrying");
      failing = true;
    } finally {
      polling = false;
    }
  }

  function stopIfIdle() {
    if (listeners.size > 0 || !timer) return;
    clearInterval(timer);
    timer = undefined;
    highest = undefined;
    handed.clear();
  }

  return {
    /**
     * Calls `listener` with every new notification of `userId` from now on; returns the
     * unsubscribe function. The first subscriber starts the poller, the last one stops it.
     */
    async subscribe(userId: string, listener: Listener, onStop?: () => void): Promise<() => void> {
      if (highest === undefined) {
        const last = await deps.repo.lastSeq();
        highest ??= last;
      }
      const set = listeners.get(userId) ?? new Set<Listener>();
      listeners.set(userId, set);
      set.add(listener);
      if (!timer) {
        timer = setInterval(() => void poll(), deps.pollMs ?? POLL_MS);
        timer.unref();
      }
      if (onStop) enders.add(onStop);
      return () => {
        if (onStop) enders.delete(onStop);
        set.delete(listener);
        if (set.size === 0) listeners.delete(userId);
        stopIfIdle();
      };
    },

    /** The user's notifications after `seq` (what a reconnecting client missed), oldest first. */
    async missedSince(userId: string, seq: bigint, limit = BATCH): Promise<FeedItem[]> {
      return (await deps.repo.userFeedAfter(userId, seq, limit)).map(itemOf);
    },

    /** Ends every open subscription (its `onStop`), so a stopping server is not held open by streams. */
    stop() {
      for (const end of [...enders]) end();
      enders.clear();
      listeners.clear();
      stopIfIdle();
    },
  };
}

export type NotificationFeed = ReturnType<typeof createNotificationFeed>;
