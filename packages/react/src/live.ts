// One notification stream per provider (and the SDK keeps one connection per client), open while
// some component shows the unread count: each `unread` event writes the count into the query
// cache, each new notification refreshes the notification lists. Its state is surfaced
// (useNotificationStream): `live`, `reconnecting` with the reason of the last close, or `ended`
// when it will not come back by itself (a newer stream of the account took its place, or it gave
// up after its own reconnections). Once ended, the count is an ordinary query polled every
// `pollMs` (and refetched on focus), so it never freezes; a new subscriber opens the stream again.

import type { QueryClient } from "@tanstack/react-query";
import type { StreamEnd, TrustMintClient } from "@trustmint/sdk";
import { trustMintKeys } from "./keys.js";

export type LiveStatus =
  | { state: "idle" }
  | { state: "connecting" }
  | { state: "live" }
  | { state: "reconnecting"; reason: StreamEnd }
  | { state: "ended"; reason: StreamEnd | "failed" };

export interface LiveFeed {
  /** Keeps the stream open until the returned function is called (by every subscriber). */
  subscribe(): () => void;
  stop(): void;
  status(): LiveStatus;
  /** Calls `listener` on each change of the status; returns the unsubscribe (useSyncExternalStore's shape). */
  watch(listener: () => void): () => void;
}

export function createLiveFeed(client: TrustMintClient, queryClient: QueryClient): LiveFeed {
  let subscribers = 0;
  let controller: AbortController | null = null;
  let status: LiveStatus = { state: "idle" };
  const listeners = new Set<() => void>();
  const become = (next: LiveStatus) => {
    status = next;
    for (const listener of listeners) listener();
  };

  async function follow(signal: AbortSignal) {
    become({ state: "connecting" });
    try {
      for await (const event of client.notifications.stream({ signal })) {
        if (event.type === "closed") {
          become(event.reconnecting ? { state: "reconnecting", reason: event.reason } : { state: "ended", reason: event.reason });
          continue;
        }
        if (status.state !== "live") become({ state: "live" });
        if (event.type === "unread") queryClient.setQueryData(trustMintKeys.unreadCount(), event.unreadCount);
        else await queryClient.invalidateQueries({ queryKey: trustMintKeys.notificationLists });
      }
      if (signal.aborted) return;
    } catch {
      if (signal.aborted) return;
      become({ state: "ended", reason: "failed" });
    }
    // Ended by itself: the count is a polled query from here.
    if (status.state !== "ended") become({ state: "ended", reason: "failed" });
    controller = null;
    await queryClient.invalidateQueries({ queryKey: trustMintKeys.unreadCount() });
  }

  const stop = () => {
    controller?.abort();
    controller = null;
    if (status.state !== "idle") become({ state: "idle" });
  };
  return {
    subscribe() {
      subscribers++;
      // The first subscriber opens the stream; so does a new one after it ended.
      if (controller === null) {
        controller = new AbortController();
        void follow(controller.signal);
      }
      return () => {
        if (--subscribers === 0) stop();
      };
    },
    stop,
    status: () => status,
    watch(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
