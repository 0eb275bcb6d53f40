import { createClient, type StreamEvent } from "@trustmint/sdk";
import { expect } from "chai";
import { startProxy, type TestProxy } from "./proxy.js";
import { sharedService, signIn } from "./support.js";

// notifications.stream(): the live feed as an async iterator that resumes after a dropped
// connection with Last-Event-ID, renews an expired token, and stops when the service says so.

/** Pulls events from an iterator until `done` says enough (or the timeout). */
async function collect(iterator: AsyncIterator<StreamEvent>, done: (events: StreamEvent[]) => boolean, timeoutMs = 15_000) {
  const events: StreamEvent[] = [];
  const deadline = Date.now() + timeoutMs;
  while (!done(events)) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`timed out with ${JSON.stringify(events)}`);
    const next = await Promise.race([iterator.next(), new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), left))]);
    if (next === "timeout") throw new Error(`timed out with ${JSON.stringify(events)}`);
    if (next.done) break;
    events.push(next.value);
  }
  return events;
}
const notificationsIn = (events: StreamEvent[]) => events.flatMap((event) => (event.type === "notification" ? [event] : []));

describe("@trustmint/sdk: the notification stream", function () {
  this.timeout(60_000);
  let baseUrl: string;
  let proxy: TestProxy;

  before(async () => {
    baseUrl = (await sharedService()).url;
    proxy = await startProxy(baseUrl);
  });
  after(async () => {
    await proxy?.close();
  });

  it("yields the unread count at once, then each new notification and the count after it", async () => {
    const user = await signIn(baseUrl, "sdk-stream");
    const stream = user.client.notifications.stream();
    const [hello] = await collect(stream, (events) => events.length >= 1);
    expect(hello).to.deep.equal({ type: "unread", unreadCount: 0 });
    await user.client.notifications.test({ type: "in_app" });
    const events = await collect(stream, (seen) => seen.length >= 2);
    expect(events[0]!.type).to.equal("notification");
    const notification = (events[0] as Extract<StreamEvent, { type: "notification" }>).notification;
    expect(notification.read).to.equal(false);
    expect(events[1]).to.deep.equal({ type: "unread", unreadCount: 1 });
    expect((await user.client.notifications.list()).data[0]!.id).to.equal(notification.id);
    await stream.return(undefined);
  });

  it("resumes after a dropped connection with Last-Event-ID: what was missed comes first, nothing twice", async () => {
    const user = await signIn(baseUrl, "sdk-resume");
    const viaProxy = createClient({
      baseUrl: proxy.url,
      getToken: async () => (await createClient({ baseUrl }).sandbox.token({ sub: user.sub })).accessToken,
    });
    const stream = viaProxy.notifications.stream();
    await collect(stream, (events) => events.length >= 1);
    await user.client.notifications.test({ type: "in_app" });
    const [first] = notificationsIn(await collect(stream, (events) => notificationsIn(events).length >= 1));

    const streamsBefore = proxy.seen.filter((request) => request.path === "/v1/notifications/stream").length;
    proxy.dropAll();
    const closed = await collect(stream, (events) => events.some((event) => event.type === "closed"));
    expect(closed.at(-1)).to.deep.equal({ type: "closed", reason: "dropped", reconnecting: true });
    // While the client is cut off, two more notifications.
    await user.client.notifications.test({ type: "in_app" });
    await user.client.notifications.test({ type: "in_app" });
    const missed = notificationsIn(await collect(stream, (events) => notificationsIn(events).length >= 2));
    expect(missed.map((event) => Number(event.id))).to.deep.equal([Number(first!.id) + 1, Number(first!.id) + 2]);
    const reconnect = proxy.seen.filter((request) => request.path === "/v1/notifications/stream")[streamsBefore]!;
    expect(reconnect.headers["last-event-id"]).to.equal(first!.id);
    const all = (await user.client.notifications.list()).data.map((entry) => entry.id);
    expect(missed.map((event) => event.notification.id)).to.deep.equal(all.slice(0, 2).reverse());
    await stream.return(undefined);
  });

  it("renews an expired token: the service closes with token_expired, the stream reconnects with a fresh one", async () => {
    const user = await signIn(baseUrl, "sdk-expiry");
    const { sandbox } = createClient({ baseUrl });
    const tokens: { forceRefresh: boolean }[] = [];
    const shortLived = createClient({
      baseUrl,
      getToken: async ({ forceRefresh }) => {
        tokens.push({ forceRefresh });
        return (await sandbox.token({ sub: user.sub, expiresIn: forceRefresh ? 3_600 : 2 })).accessToken;
      },
    });
    const stream = shortLived.notifications.stream();
    await collect(stream, (events) => events.length >= 1);
    // Past the first token's expiry: the stream was closed and reopened with a refreshed token.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await user.client.notifications.test({ type: "in_app" });
    const events = await collect(stream, (seen) => notificationsIn(seen).length >= 1);
    expect(notificationsIn(events)).to.have.length(1);
    expect(tokens.map((call) => call.forceRefresh)).to.deep.equal([false, true]);
    await stream.return(undefined);
  });

  it("says why a connection ended: a newer stream of the account took its place (stream_limit), so it ends; an abort ends the rest", async () => {
    const user = await signIn(baseUrl, "sdk-limit");
    const token = (await createClient({ baseUrl }).sandbox.token({ sub: user.sub })).accessToken;
    const oldest = user.client.notifications.stream();
    await collect(oldest, (events) => events.length >= 1);
    const controller = new AbortController();
    // Ten other apps of the same account (a client each: one client shares one connection).
    const others = Array.from({ length: 10 }, () =>
      createClient({ baseUrl, getToken: () => token }).notifications.stream({ signal: controller.signal }),
    );
    for (const other of others) await collect(other, (events) => events.length >= 1);
    // The eleventh stream closed the oldest: it says so, then its iterator is done, without an error.
    expect((await oldest.next()).value).to.deep.equal({ type: "closed", reason: "stream_limit", reconnecting: false });
    expect(await oldest.next()).to.deep.equal({ done: true, value: undefined });
    controller.abort();
    for (const other of others) expect((await other.next()).done).to.equal(true);
  });

  it("one connection per client: a second iterator joins it with the count at once; the connection closes with the last", async () => {
    const user = await signIn(baseUrl, "sdk-shared");
    const viaProxy = createClient({
      baseUrl: proxy.url,
      getToken: async () => (await createClient({ baseUrl }).sandbox.token({ sub: user.sub })).accessToken,
    });
    const opened = () => proxy.seen.filter((request) => request.path === "/v1/notifications/stream").length;
    const before = opened();
    const first = viaProxy.notifications.stream();
    expect(await collect(first, (events) => events.length >= 1)).to.deep.equal([{ type: "unread", unreadCount: 0 }]);
    const second = viaProxy.notifications.stream();
    expect(await collect(second, (events) => events.length >= 1)).to.deep.equal([{ type: "unread", unreadCount: 0 }]);
    await user.client.notifications.test({ type: "in_app" });
    for (const stream of [first, second]) {
      const events = await collect(stream, (seen) => seen.length >= 2);
      expect(events.map((event) => event.type)).to.deep.equal(["notification", "unread"]);
    }
    expect(opened() - before).to.equal(1);
    // One leaves, the other still hears; both gone, the next iterator opens a new connection.
    await first.return(undefined);
    await user.client.notifications.test({ type: "in_app" });
    expect((await collect(second, (seen) => seen.length >= 2)).at(-1)).to.deep.equal({ type: "unread", unreadCount: 2 });
    await second.return(undefined);
    const third = viaProxy.notifications.stream();
    await collect(third, (events) => events.length >= 1);
    expect(opened() - before).to.equal(2);
    await third.return(undefined);
  });
});
