// The live notification feed (GET /v1/notifications/stream, Server-Sent Events) as an async
// iterator. Each connection is parsed by eventsource-parser; after a dropped connection the
// iterator reconnects with Last-Event-ID, so the service sends what was missed first. Every end
// of a connection is surfaced as a `closed` event with its reason, and handled by it:
// `token_expired` (reconnect at once with a fresh token), `server_stopping` (reconnect after the
// service's retry delay), `dropped` (reconnect with backoff), `stream_limit` (a newer stream of
// the account took this one's place: the iterator ends, as reconnecting would only push out
// another). Breaking out of the loop, or the caller's signal, closes it. A client keeps one
// connection for all its iterators (createStreamHub), so an app's parts do not use up the
// account's streams.
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { ApiError, apiErrorOf } from "./errors.js";
import { type Credentials, clientHeaders } from "./transport.js";
import type { Notification } from "./types.js";

export type StreamEvent =
  /** A new in-app notification; `id` is its sequence number in the feed (what Last-Event-ID resumes from). */
  | { type: "notification"; id: string; notification: Notification }
  /** The account's unread count: at once on connecting, then after each notification. */
  | { type: "unread"; unreadCount: number }
  /** A connection ended, and why; `reconnecting` false: the iterator ends after this event. */
  | { type: "closed"; reason: StreamEnd; reconnecting: boolean };

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
export type StreamEnd = "token_expired" | "server_stopping" | "stream_limit" | "dropped";

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
      if (stop.signal.aborted) return;
      yield { type: "closed", reason: ended, reconnecting: ended !== "stream_limit" };
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

/** What a shared connection hands each iterator: an event, its end, or the error it gave up with. */
type Delivery = { event: StreamEvent } | { end: true } | { error: unknown };

/**
 * One connection for every iterator of a client that starts from now (no `lastEventId`): it opens
 * with the first and closes when the last one stops. An iterator that joins later gets the
 * latest unread count at once, as a new connection would give it.
 */
export function createStreamHub(connection: StreamConnection) {
  let shared: { stop: AbortController; members: Set<(delivery: Delivery) => void>; unread?: StreamEvent } | null = null;

  function open(options: StreamOptions) {
    const current = { stop: new AbortController(), members: new Set<(delivery: Delivery) => void>() } as NonNullable<typeof shared>;
    const send = (delivery: Delivery) => {
      for (const member of current.members) member(delivery);
    };
    void (async () => {
      try {
        for await (const event of streamNotifications(connection, { maxReconnects: options.maxReconnects, signal: current.stop.signal })) {
          if (event.type === "unread") current.unread = event;
          send({ event });
        }
        send({ end: true });
      } catch (error) {
        send({ error });
      } finally {
        if (shared === current) shared = null;
      }
    })();
    return current;
  }

  return async function* subscribe(options: StreamOptions = {}): AsyncGenerator<StreamEvent, void, undefined> {
    // A resume point of its own needs a connection of its own.
    if (options.lastEventId !== undefined) return yield* streamNotifications(connection, options);
    if (options.signal?.aborted) return;
    shared ??= open(options);
    const source = shared;
    const queue: Delivery[] = source.unread ? [{ event: source.unread }] : [];
    let wake: (() => void) | undefined;
    const member = (delivery: Delivery) => {
      queue.push(delivery);
      wake?.();
    };
    const onAbort = () => member({ end: true });
    source.members.add(member);
    options.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      for (;;) {
        while (queue.length === 0) await new Promise<void>((resolve) => (wake = resolve));
        const delivery = queue.shift()!;
        if ("end" in delivery) return;
        if ("error" in delivery) throw delivery.error;
        yield delivery.event;
      }
    } finally {
      options.signal?.removeEventListener("abort", onAbort);
      source.members.delete(member);
      if (source.members.size === 0) {
        source.stop.abort();
        if (shared === source) shared = null;
      }
    }
  };
}
