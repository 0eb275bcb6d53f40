// One notification stream per provider, open while some component shows the unread count: each
// `unread` event writes the count into the query cache, each new notification refreshes the
// notification lists. When the stream gives up (after its own reconnections), the count falls
// back to an ordinary query refetched on focus and reconnect.

import type { QueryClient } from "@tanstack/react-query";
import type { TrustMintClient } from "@trustmint/sdk";
import { trustMintKeys } from "./keys.js";

export interface LiveFeed {
  /** Keeps the stream open until the returned function is called (by every subscriber). */
  subscribe(): () => void;
  stop(): void;
}

export function createLiveFeed(client: TrustMintClient, queryClient: QueryClient): LiveFeed {
  let subscribers = 0;
  let controller: AbortController | null = null;

  async function follow(signal: AbortSignal) {
    try {
      for await (const event of client.notifications.stream({ signal })) {
        if (event.type === "unread") queryClient.setQueryData(trustMintKeys.unreadCount(), event.unreadCount);
        else await queryClient.invalidateQueries({ queryKey: trustMintKeys.notificationLists });
      }
    } catch {
      // The stream gave up: the count is a plain query again.
      await queryClient.invalidateQueries({ queryKey: trustMintKeys.unreadCount() });
    }
  }

  const stop = () => {
    controller?.abort();
    controller = null;
  };
  return {
    subscribe() {
      if (subscribers++ === 0) {
        controller = new AbortController();
        void follow(controller.signal);
      }
      return () => {
        if (--subscribers === 0) stop();
      };
    },
    stop,
  };
}
