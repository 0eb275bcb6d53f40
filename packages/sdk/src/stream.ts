// The live notification feed (GET /v1/notifications/stream, Server-Sent Events) as an async
// iterator. Each connection is parsed by eventsource-parser; after a dropped connection the
// iterator reconnects with Last-Event-ID, so the service sends what was missed first. The
// service's last event says why a stream ends: `token_expired` (reconnect with a fresh token),
// `server_stopping` (reconnect), `stream_limit` (a newer stream of the account took this one's
// place: the iterator ends). Breaking out of the loop, or the caller's signal, closes it.
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { ApiError, apiErrorOf } from "./errors.js";
import { type Credentials, clientHeaders } from "./transport.js";
import type { Notification } from "./types.js";

export type StreamEvent =
  /** A new in-app notification; `id` is its sequence number in the feed (what Last-Event-ID resumes from). */
  | { type: "notification"; id: string; notification: Notification }
  /** The account's unread count: at once on connecting, then after each notification. */
  | { type: "unread"; unreadCount: number };

export interface StreamOptions {
  /** Resume after this event id (the `id` of the last notification event you handled). */
  lastEventId?: string;
  /** Closes the stream when aborted (the iterator then ends). */
  signal?: AbortSignal;
  /** Reconnections in a row that may fail before the iterator throws (default 5). */
  maxReconnects?: number;
}

export interface StreamConnection extends Credentials {
  baseUrl: string;
  fetch?: ((input: Request) => Promise<Response>) | undefined;
}

/** Why a connection ended: the service's `close` reason, or dropped (no reason given). */
type StreamEnd = "token_expired" | "server_stopping" | "stream_limit" | "dropped";

/** How long to wait before reconnecting: the service's `retry:` (2 s) else 1 s, doubling per failure in a row, at most 30 s. */
const reconnectDelay = (retryMs: number, failures: number) =>
  Math.min(30_000, retryMs * 2 ** Math.max(0, failures - 1)) * (0.75 + Math.random() / 2);

/** Waits `ms`, or less if the signal aborts first. */
const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });

export async function* streamNotifications(
  connection: StreamConnection,
  options: StreamOptions = {},
): AsyncGenerator<StreamEvent, void, undefined> {
  const fetchOf = connection.fetch ?? ((request: Request) => globalThis.fetch(request));
  const url = `${connection.baseUrl.replace(/\/$/, "")}/v1/notifications/stream`;
  const maxReconnects = options.maxReconnects ?? 5;
  const stop = new AbortController();
  const onCallerAbort = () => stop.abort(options.signal?.reason);
  if (options.signal?.aborted) return;
  options.signal?.addEventListener("abort", onCallerAbort, { once: true });

  let lastEventId = options.lastEventId;
  let retryMs = 1_000;
  let failures = 0;
  let forceRefresh = false;
  try {
    while (!stop.signal.aborted) {
      const headers = clientHeaders(new Headers({ accept: "text/event-stream" }));
      if (connection.getToken) headers.set("authorization", `Bearer ${await connection.getToken({ forceRefresh })}`);
      else if (connection.apiKey) headers.set("x-api-key", connection.apiKey);
      if (lastEventId !== undefined) headers.set("last-event-id", lastEventId);

      let ended: StreamEnd = "dropped";
      try {
        const response = await fetchOf(new Request(url, { headers, signal: stop.signal }));
        if (!response.ok) {
          const error = apiErrorOf(response, await response.json().catch(() => undefined));
          // A 401 gets one fresh token; other refusals (403, 404, 4xx) will not change by retrying.
          if (response.status === 401 && connection.getToken && !forceRefresh) {
            forceRefresh = true;
            continue;
          }
          if (response.status < 500 && response.status !== 429) throw error;
          throw Object.assign(error, { retryable: true });
        }
        forceRefresh = false;
        const events: EventSourceMessage[] = [];
        const parser = createParser({ onEvent: (event) => events.push(event), onRetry: (ms) => (retryMs = ms) });
        const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
        try {
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            parser.feed(value);
            failures = 0;
            while (events.length > 0) {
              const event = events.shift()!;
              if (event.event === "close") {
                ended = (JSON.parse(event.data) as { reason: StreamEnd }).reason;
                continue;
              }
              if (event.event === "unread")
                yield { type: "unread", unreadCount: (JSON.parse(event.data) as { unreadCount: number }).unreadCount };
              else if (event.event === "notification" && event.id !== undefined) {
                lastEventId = event.id;
                yield { type: "notification", id: event.id, notification: JSON.parse(event.data) as Notification };
              }
            }
          }
        } finally {
          await reader.cancel().catch(() => undefined);
        }
      } catch (error) {
        if (stop.signal.aborted) return;
        if (error instanceof ApiError && !(error as ApiError & { retryable?: boolean }).retryable) throw error;
        if (++failures > maxReconnects) throw error;
      }
      if (ended === "stream_limit") return;
      // The connection ended: reconnect (a fresh token for one that expired) from the last event seen.
      if (ended === "token_expired") forceRefresh = true;
      if (ended === "dropped" && failures === 0) failures = 1;
      const wait = ended === "server_stopping" || ended === "dropped" ? reconnectDelay(retryMs, failures) : 0;
      await pause(wait, stop.signal);
    }
  } finally {
    options.signal?.removeEventListener("abort", onCallerAbort);
    stop.abort();
  }
}
