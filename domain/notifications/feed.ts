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
/** Why the feed ends a subscription: its user opened one too many, or the process is stopping. */
export type FeedEnd = "stream_limit" | "server_stopping";
interface Subscription {
  listener: Listener;
  end?: ((reason: FeedEnd) => void) | undefined;
}

/**
 * Open subscriptions (live streams) one user keeps in one process (D-80): a phone and a few
 * browser tabs. The next one ends the oldest, which its client learns from the stream's close event.
 */
export const MAX_STREAMS_PER_USER = 10;

/** How often the live feed looks for new rows while anyone listens: a notification reaches a stream within this. */
const POLL_MS = 200;
/** Rows read per statement: a burst reaches the streams over several reads rather than one large one. */
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
  /** Each user's open subscriptions, oldest first (a Set keeps insertion order). */
  const subscriptions = new Map<string, Set<Subscription>>();
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
          for (const subscription of subscriptions.get(row.userId) ?? []) subscription.listener(itemOf(row));
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
    if (subscriptions.size > 0 || !timer) return;
    clearInterval(timer);
    timer = undefined;
    highest = undefined;
    handed.clear();
  }

  return {
    /**
     * Calls `listener` with every new notification of `userId` from now on; returns the
     * unsubscribe function. The first subscriber starts the poller, the last one stops it. `end`
     * is called when the feed ends the subscription itself: the user's MAX_STREAMS_PER_USER + 1st
     * ends their oldest, and a stopping process ends them all.
     */
    async subscribe(userId: string, listener: Listener, end?: (reason: FeedEnd) => void): Promise<() => void> {
      if (highest === undefined) {
        const last = await deps.repo.lastSeq();
        highest ??= last;
      }
      const set = subscriptions.get(userId) ?? new Set<Subscription>();
      subscriptions.set(userId, set);
      for (const oldest of [...set].slice(0, Math.max(0, set.size - MAX_STREAMS_PER_USER + 1))) {
        set.delete(oldest);
        oldest.end?.("stream_limit");
      }
      const subscription: Subscription = { listener, end };
      set.add(subscription);
      if (!timer) {
        timer = setInterval(() => void poll(), deps.pollMs ?? POLL_MS);
        timer.unref();
      }
      return () => {
        set.delete(subscription);
        if (set.size === 0 && subscriptions.get(userId) === set) subscriptions.delete(userId);
        stopIfIdle();
      };
    },

    /** The user's notifications after `seq` (what a reconnecting client missed), oldest first. */
    async missedSince(userId: string, seq: bigint, limit = BATCH): Promise<FeedItem[]> {
      return (await deps.repo.userFeedAfter(userId, seq, limit)).map(itemOf);
    },

    /** Ends every open subscription (its `onStop`), so a stopping server is not held open by streams. */
    stop() {
      const open = [...subscriptions.values()].flatMap((set) => [...set]);
      subscriptions.clear();
      for (const subscription of open) subscription.end?.("server_stopping");
      stopIfIdle();
    },
  };
}

export type NotificationFeed = ReturnType<typeof createNotificationFeed>;
