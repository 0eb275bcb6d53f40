import { type FeedEnd, type FeedItem, MAX_STREAMS_PER_USER, type NotificationFeed } from "../../domain/notifications/feed.js";
import { notificationsModule } from "../../domain/notifications/module.js";
import { MAX_PUSH_DEVICES, type NotificationsService } from "../../domain/notifications/service.js";
import { AppError } from "../http/errors.js";
import { pageRequestOf } from "../http/pagination.js";
import { defineRoute, type RouteSpec, routesOf } from "../http/route.js";
import {
  listExtra,
  messageOnly,
  notification,
  notificationIdParams,
  notificationsQuery,
  preferences,
  preferencesPatch,
  readAllResponse,
  readResponse,
  registerBody,
  registerResponse,
  testBody,
  unreadCountResponse,
  unregisterBody,
} from "./schemas.js";

/** A comment line every so often keeps proxies from closing an idle stream. */
const KEEPALIVE_MS = 15_000;
/** Last-Event-ID: the seq of the last notification a client got (decimal digits). */
const EVENT_ID = /^\d{1,19}$/;
/** setTimeout's longest delay (about 24.8 days): a later expiry is still met by the look before each write. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Why a stream ends, in its last event (`event: close`). */
type StreamEnd = FeedEnd | "token_expired";

export function notificationRoutes({
  notifications,
  feed,
  production,
}: {
  notifications: NotificationsService;
  feed: NotificationFeed;
  production: boolean;
}): RouteSpec[] {
  return routesOf(notificationsModule, [
    defineRoute({
      method: "get",
      path: "/v1/notifications/stream",
      operationId: "streamNotifications",
      summary: "Your new notifications as they happen (Server-Sent Events)",
      description: `A \`text/event-stream\`: an \`unread\` event with \`{"unreadCount"}\` at once, then for each new in-app notification a \`notification\` event (\`id:\` its sequence number, \`data:\` the Notification) followed by \`unread\`. Send the token in the Authorization header. After a disconnect, reconnect with \`Last-Event-ID\` (EventSource does it for you) to get what you missed first. A \`: keep-alive\` comment comes every 15 s. A stream lasts as long as the token it was opened with: at its expiry the last event is \`close\` with \`{"reason":"token_expired"}\` (reconnect with a fresh token and \`Last-Event-ID\`). An account keeps ${MAX_STREAMS_PER_USER} streams open per API process: the next one closes the oldest (\`close\` with \`{"reason":"stream_limit"}\`: do not reconnect it). A stopping process closes its streams (\`server_stopping\`: reconnect).`,
      auth: "user",
      streams: "text/event-stream",
      handler: async ({ req, res, principal }) => {
        const { user, tokenExpiresAt } = principal();
        const clock = req.context.clock;
        const lastEventId = req.header("last-event-id");
        if (lastEventId !== undefined && !EVENT_ID.test(lastEventId)) {
          throw new AppError("VALIDATION_ERROR", "Last-Event-ID must be the id of an event this stream sent", {
            field: "Last-Event-ID",
            reason: "decimal digits",
          });
        }
        res.status(200);
        res.setHeader("Content-Type", "text/event-stream; charset=utf-8");
        res.setHeader("Cache-Control", "no-store");
        res.setHeader("Connection", "keep-alive");
        // Tells nginx-style proxies not to buffer the stream.
        res.setHeader("X-Accel-Buffering", "no");
        res.flushHeaders();
        /** The stream's last event says why it ends, then it ends (the client reconnects only when it should). */
        const close = (reason: StreamEnd) => {
          if (res.writableEnded) return;
          res.write(`event: close\ndata: ${JSON.stringify({ reason })}\n\n`);
          res.end();
        };
        // A token's stream lasts as long as the token, on the service clock: a timer for the
        // expiry in real time, and a look before each write for a clock moved forward meanwhile.
        const expired = () => tokenExpiresAt !== undefined && clock.now().getTime() >= tokenExpiresAt.getTime();
        const write = (text: string) => {
          if (expired()) close("token_expired");
          if (!res.writableEnded) res.write(text);
        };
        const sendUnread = async () => write(`event: unread\ndata: ${JSON.stringify(await notifications.unreadCount(user))}\n\n`);
        let lastSent = lastEventId === undefined ? -1n : BigInt(lastEventId);
        const send = (item: FeedItem) => {
          if (item.seq <= lastSent) return;
          lastSent = item.seq;
          const { seq, ...view } = item;
          write(`id: ${seq}\nevent: notification\ndata: ${JSON.stringify(view)}\n\n`);
        };
        // Subscribed before the replay, so nothing falls between the two; what arrives meanwhile
        // waits and is sent in order after it.
        let replaying = true;
        const waiting: FeedItem[] = [];
        const unsubscribe = await feed.subscribe(
          user.id,
          (item) => {
            if (replaying) waiting.push(item);
            else {
              send(item);
              void sendUnread().catch(() => undefined);
            }
          },
          // The user opened one stream too many (this is the oldest), or the process is stopping.
          close,
        );
        const keepAlive = setInterval(() => write(": keep-alive\n\n"), KEEPALIVE_MS);
        const expiry =
          tokenExpiresAt === undefined
            ? undefined
            : setTimeout(
                () => close("token_expired"),
                Math.min(Math.max(0, tokenExpiresAt.getTime() - clock.now().getTime()), MAX_TIMER_MS),
              );
        req.on("close", () => {
          clearInterval(keepAlive);
          clearTimeout(expiry);
          unsubscribe();
        });
        try {
          write("retry: 2000\n\n");
          if (lastEventId !== undefined) for (const item of await feed.missedSince(user.id, BigInt(lastEventId))) send(item);
          for (const item of waiting.sort((a, b) => (a.seq < b.seq ? -1 : 1))) send(item);
          replaying = false;
          await sendUnread();
        } catch {
          res.end();
        }
        return { streamed: true };
      },
    }),
    defineRoute({
      method: "get",
      path: "/v1/notifications",
      operationId: "listNotifications",
      summary: "Your notifications, newest first, with your unread count",
      description:
        "The envelope carries `unreadCount` (all your unread notifications, whatever the filter) beside `data` and `pagination`.",
      auth: "user",
      query: notificationsQuery,
      response: notification.array(),
      envelopeExtra: listExtra,
      paginated: true,
      handler: async ({ query, principal }) => notifications.list(principal().user, query, pageRequestOf(query)),
    }),
    defineRoute({
      method: "get",
      path: "/v1/notifications/unread/count",
      operationId: "countUnreadNotifications",
      summary: "How many of your notifications are unread",
      auth: "user",
      response: unreadCountResponse,
      handler: async ({ principal }) => ({ data: await notifications.unreadCount(principal().user) }),
    }),
    defineRoute({
      method: "patch",
      path: "/v1/notifications/{notifId}/read",
      operationId: "markNotificationRead",
      summary: "Mark one of your notifications read",
      auth: "user",
      params: notificationIdParams,
      response: readResponse,
      errors: ["NOTIFICATION_NOT_FOUND"],
      handler: async ({ params, principal }) => ({ data: await notifications.markRead(principal().user, params.notifId) }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/notifications/read-all",
      operationId: "markAllNotificationsRead",
      summary: "Mark all your notifications read",
      auth: "user",
      response: readAllResponse,
      handler: async ({ principal }) => ({ data: await notifications.markAllRead(principal().user) }),
    }),
    defineRoute({
      method: "delete",
      path: "/v1/notifications/{notifId}",
      operationId: "deleteNotification",
      summary: "Delete one of your notifications",
      auth: "user",
      params: notificationIdParams,
      envelopeExtra: messageOnly,
      errors: ["NOTIFICATION_NOT_FOUND"],
      handler: async ({ params, principal }) => {
        await notifications.remove(principal().user, params.notifId);
        return { message: "Notification deleted", extra: {} };
      },
    }),
    defineRoute({
      method: "get",
      path: "/v1/notifications/preferences",
      operationId: "getNotificationPreferences",
      summary: "Your notification preferences",
      description:
        "`push.enabled` and `email.enabled` are your `settings.notifications` and `settings.emailAlerts` (GET /v1/users/me): one switch each, changed from either route. `quietHours` is an extension of the spec's groups.",
      auth: "user",
      response: preferences,
      handler: async ({ principal }) => ({ data: await notifications.preferences(principal().user) }),
    }),
    defineRoute({
      method: "patch",
      path: "/v1/notifications/preferences",
      operationId: "updateNotificationPreferences",
      summary: "Change any group and field of your preferences; answers the full result",
      description:
        "Fields left out keep their values. An unknown group or field is 400 VALIDATION_ERROR. `quietHours` is given whole ({start, end, timeZone}; start and end differ) or null to remove it.",
      auth: "user",
      body: preferencesPatch,
      response: preferences,
      handler: async ({ body, principal }) => ({ data: await notifications.updatePreferences(principal().user, body) }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/notifications/push/register",
      operationId: "registerPushDevice",
      summary: "Register a device for push notifications",
      description: `One device id holds one token: registering the device again replaces its token. A token reaches one device, so a token registered before under another device id (yours or another account's) moves to this registration. An account keeps at most ${MAX_PUSH_DEVICES} devices: a registration past it removes the least recently registered one (register again at each app start to stay recent), and the answer's message names it. A token that is not an Expo push token is 400 INVALID_TOKEN (details.field \`token\`), whatever else is wrong with the body.`,
      auth: "user",
      body: registerBody,
      response: registerResponse,
      errors: ["INVALID_TOKEN"],
      areaRules: async ({ body }) => notifications.checkPushToken((body as { token?: unknown }).token),
      handler: async ({ body, principal }) => notifications.registerPush(principal().user, body),
    }),
    defineRoute({
      method: "delete",
      path: "/v1/notifications/push/unregister",
      operationId: "unregisterPushDevice",
      summary: "Stop push notifications to a device",
      description: "Idempotent: a device id you have not registered (or already unregistered) answers 200 too, with a message saying so.",
      auth: "user",
      body: unregisterBody,
      envelopeExtra: messageOnly,
      handler: async ({ body, principal }) => ({ message: await notifications.unregisterPush(principal().user, body.deviceId), extra: {} }),
    }),
    production
      ? // Not served in production, answered as the router answers an unknown path whoever asks and
        // whatever the body (unmounted, its path would be 405: DELETE /v1/notifications/{notifId} matches it).
        defineRoute({
          method: "post",
          path: "/v1/notifications/test",
          operationId: "sendTestNotification",
          summary: "Development only: not served in production (404 NOT_FOUND)",
          auth: "none",
          idempotent: false,
          errors: ["NOT_FOUND"],
          handler: async ({ req }) => {
            throw new AppError("NOT_FOUND", `No route for ${req.method} ${req.path}`);
          },
        })
      : defineRoute({
          method: "post",
          path: "/v1/notifications/test",
          operationId: "sendTestNotification",
          summary: "Send yourself a test notification (development only)",
          description:
            "Writes a test notification to your in-app feed (type trust_score_updated, `data.test` true) through the path every notification takes, and hands it to the channel asked for whatever your preferences say. Not served in production (404 NOT_FOUND).",
          auth: "user",
          body: testBody,
          envelopeExtra: messageOnly,
          handler: async ({ body, principal }) => {
            await notifications.sendTest(principal().user, body.type);
            return { message: `Test notification sent (${body.type})`, extra: {} };
          },
        }),
  ]);
}
