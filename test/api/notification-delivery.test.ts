import { verify as verifyGithubStyle } from "@octokit/webhooks-methods";
import { expect } from "chai";
import { ensureChainIdentity } from "../../core/chain-identity.js";
import { createLogger } from "../../core/logger.js";
import { CHAIN_DERIVED_TABLES } from "../../domain/modules.js";
import { MAX_STREAMS_PER_USER } from "../../domain/notifications/feed.js";
import { MAX_PUSH_DEVICES } from "../../domain/notifications/service.js";
import type { Indexer } from "../../indexer/indexer.js";
import { startPlatformWorkers } from "../../worker/jobs.js";
import type { Workers } from "../../worker/scheduler.js";
import { startTestApi, type TestApi } from "../helpers/api.js";
import { startTestChain, type TestChain } from "../helpers/chain.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";
import { testIndexer, waitFor } from "../helpers/mirror.js";
import { answerTickets, type SeenPush, startPushReceiver } from "../helpers/push-receiver.js";
import { startSmtpServer } from "../helpers/smtp.js";
import { startWebhookReceiver, type WebhookReceiver } from "../helpers/webhook-receiver.js";

const WEBHOOK_SECRET = "owner-integration-secret-0001";

// Notifications from domain events to the user, over real parts: the chain and the indexer
// write the events, the platform workers fan them out and run the delivery jobs, e-mails go to
// a real SMTP server in the test and pushes to a local receiver that answers as Expo's API does.

describe(`notifications delivered: in-app, push and e-mail from domain events (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(240_000);
  let chain: TestChain;
  let db: TestDatabase;
  let indexer: Indexer;
  let api: TestApi;
  let workers: Workers;
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  let expo: Awaited<ReturnType<typeof startPushReceiver>>;
  let mails: Awaited<ReturnType<typeof startSmtpServer>>["mails"] = [];
  const pushes: SeenPush[] = [];
  let receiver: WebhookReceiver;

  before(async () => {
    receiver = await startWebhookReceiver();
    smtp = await startSmtpServer();
    mails = smtp.mails;
    // A token containing "gone" is an uninstalled app.
    expo = await startPushReceiver((messages, res) => {
      pushes.push(...messages);
      answerTickets(
        res,
        messages.map((m) =>
          m.to.includes("gone")
            ? { status: "error", message: "not registered", details: { error: "DeviceNotRegistered" } }
            : { status: "ok", id: `t-${pushes.length}` },
        ),
      );
    });

    chain = await startTestChain();
    db = await createTestDatabase();
    await ensureChainIdentity(db, chain.deployment, { embedded: true, logger: createLogger("silent"), chainTables: CHAIN_DERIVED_TABLES });
    indexer = testIndexer(db, chain);
    indexer.start();
    api = await startTestApi({
      chain,
      db,
      env: {
        SMTP_URL: smtp.url,
        EXPO_PUSH_URL: expo.url,
      },
    });
    workers = startPlatformWorkers({ services: api.services, clock: api.clock, logger: createLogger("silent"), tickMs: 100 });
  });
  after(async () => {
    await workers?.stop();
    await api?.close();
    await indexer?.stop();
    await db?.destroy();
    await chain?.close();
    await smtp?.close();
    await expo?.close();
    await receiver?.close();
  });

  /** A user whose token carries an e-mail address (the first request creates them). */
  async function newTestUser(_api: TestApi, prefix: string, _funds: number) {
    const email = `${prefix}-${Math.random().toString(36).slice(2)}@example.com`;
    const token = await api.token(email, { email, expiresIn: 86_400 });
    const me = (await api.request("GET", "/v1/users/me", { token })).body.data;
    return { token, id: me.id as string, email };
  }

  const feed = (token: string) => api.request("GET", "/v1/notifications?limit=100", { token });
  const register = (token: string, deviceId: string, push: string) =>
    api.request("POST", "/v1/notifications/push/register", { token, body: { token: push, platform: "ios", deviceId } });

  it("a loan request reaches the borrower in the app, by push and by e-mail, once each", async () => {
    const borrower = await newTestUser(api, "borrower", 0);
    await api.request("PATCH", "/v1/users/me", { token: borrower.token, body: { displayName: "Bea" } });
    const email = borrower.email;
    expect((await register(borrower.token, "phone-1", "ExponentPushToken[bea-phone]")).status).to.equal(200);
    const loan = await api.request("POST", "/v1/loans", { token: borrower.token, body: { amount: 20, duration: 7 } });
    expect(loan.status, loan.text).to.equal(200);

    const inApp = await waitFor(
      async () => {
        const list = (await feed(borrower.token)).body;
        return list.data.find((n: { type: string }) => n.type === "loan_created");
      },
      20_000,
      "the in-app notification",
    );
    expect(inApp.data).to.deep.equal({ loanId: loan.body.data.id });
    expect(inApp.title).to.be.a("string").and.not.empty;
    await waitFor(async () => pushes.some((p) => p.to === "ExponentPushToken[bea-phone]"), 20_000, "the push");
    const mail = await waitFor(
      async () => mails.find((m) => m.to.includes(email) && m.text.includes(`Subject: ${inApp.title}`)),
      20_000,
      "the e-mail",
    );
    expect(mail.text).to.include(inApp.body.slice(0, 20));
    // Once per channel, even as the fan-out and the runners keep polling.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(pushes.filter((p) => p.to === "ExponentPushToken[bea-phone]" && p.data.loanId === loan.body.data.id)).to.have.length(1);
    // (The first loan also earns a badge: its own notification, its own e-mail.)
    expect(mails.filter((m) => m.to.includes(email) && m.text.includes(`Subject: ${inApp.title}`))).to.have.length(1);
    const rows = await db.prisma.notification.count({ where: { userId: borrower.id, type: "loan_created" } });
    expect(rows).to.equal(1);
  });

  it("a channel switched off sends nothing there; a device the provider says is gone is dropped", async () => {
    const user = await newTestUser(api, "quiet-borrower", 0);
    const email = user.email;
    await register(user.token, "phone-a", "ExponentPushToken[kept-a]");
    await register(user.token, "phone-b", "ExponentPushToken[gone-b]");
    const off = await api.request("PATCH", "/v1/notifications/preferences", { token: user.token, body: { email: { enabled: false } } });
    expect(off.status, off.text).to.equal(200);
    const mailsBefore = mails.length;
    const loan = await api.request("POST", "/v1/loans", { token: user.token, body: { amount: 10, duration: 7 } });
    expect(loan.status, loan.text).to.equal(200);
    await waitFor(async () => pushes.some((p) => p.to === "ExponentPushToken[kept-a]"), 20_000, "the push to the kept device");
    await waitFor(
      async () => (await db.prisma.pushDevice.count({ where: { userId: user.id, token: "ExponentPushToken[gone-b]" } })) === 0,
      20_000,
      "the gone device to be dropped",
    );
    expect(await db.prisma.pushDevice.count({ where: { userId: user.id } })).to.equal(1);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(mails.slice(mailsBefore).filter((m) => m.to.includes(email))).to.deep.equal([]);
  });

  it("a duress lock alerts each guardian silently, reaches the owner's own webhook, and shows nothing on the owner's side: no notification, push or e-mail", async () => {
    const owner = await newTestUser(api, "owner", 0);
    const guardian = await newTestUser(api, "guardian", 0);
    const guardianWallet = (await api.request("GET", "/v1/users/me", { token: guardian.token })).body.data.walletAddress as string;
    // The owner's server-side integration: a webhook subscribed to social_vault.locked.
    const hook = await api.request("POST", "/v1/webhooks", {
      token: owner.token,
      body: { url: `${receiver.base}/owner-locks`, events: ["social_vault.locked"], secret: WEBHOOK_SECRET },
    });
    expect(hook.status, hook.text).to.equal(201);
    await register(owner.token, "owner-phone", "ExponentPushToken[owner-phone]");
    await register(guardian.token, "guardian-phone", "ExponentPushToken[guardian-phone]");
    const vault = await api.request("POST", "/v1/social-vault", {
      token: owner.token,
      body: { dailyLimit: 100, timelockDuration: 3600, requiredSignatures: 1, duressPin: "4821" },
    });
    expect(vault.status, vault.text).to.equal(200);
    const added = await api.request("POST", "/v1/social-vault/guardians", { token: owner.token, body: { walletAddress: guardianWallet } });
    expect(added.status, added.text).to.equal(200);
    await waitFor(
      async () => (await feed(guardian.token)).body.data.find((n: { type: string }) => n.type === "guardian_request"),
      20_000,
      "the guardian's request",
    );
    // The guardian becomes active after the timelock: the owner hears of it then, not before.
    expect((await feed(owner.token)).body.data.map((n: { type: string }) => n.type)).to.not.include("guardian_accepted");
    expect((await api.request("POST", "/dev/time/advance", { body: { seconds: 3_601 } })).status).to.equal(200);
    await waitFor(
      async () => (await feed(owner.token)).body.data.find((n: { type: string }) => n.type === "guardian_accepted"),
      20_000,
      "the owner's guardian_accepted",
    );
    // A new account vouches for nothing (D-88): the active guardian leaves the owner's Trust Score as it was.

    // Every delivery of those done, so what follows the lock is counted from a settled state.
    await waitFor(
      async () =>
        (await db.prisma.job.count({ where: { kind: { startsWith: "notification." }, status: { in: ["queued", "running"] } } })) === 0,
      20_000,
      "the deliveries so far",
    );
    const ownerRows = await db.prisma.notification.count({ where: { userId: owner.id } });
    const ownerPushes = pushes.filter((p) => p.to === "ExponentPushToken[owner-phone]").length;
    const ownerMails = mails.filter((m) => m.to.includes(owner.email)).length;
    const locked = await api.request("POST", "/v1/social-vault/lock", { token: owner.token, body: { duressPin: "4821" } });
    expect(locked.status, locked.text).to.equal(200);

    const alert = await waitFor(
      async () => (await feed(guardian.token)).body.data.find((n: { type: string }) => n.type === "vault_locked"),
      20_000,
      "the guardian's alert",
    );
    expect(alert.data.vaultAddress.toLowerCase()).to.equal(vault.body.data.vaultAddress.toLowerCase());
    await waitFor(
      async () => pushes.some((p) => p.to === "ExponentPushToken[guardian-phone]" && p.data.type === "vault_locked"),
      20_000,
      "the guardian's push",
    );
    await waitFor(
      async () => mails.some((m) => m.to.includes(guardian.email) && m.text.includes(`Subject: ${alert.title}`)),
      20_000,
      "the guardian's e-mail",
    );
    // The owner's webhook receives the lock, signed with its secret: vaultOwner and lockedAt as part 6 says.
    const delivered = await waitFor(async () => receiver.of("/owner-locks")[0], 20_000, "the owner's webhook delivery");
    expect(await verifyGithubStyle(WEBHOOK_SECRET, delivered.body, delivered.headers["x-service-signature"] as string)).to.equal(true);
    const payload = JSON.parse(delivered.body);
    expect(payload.event).to.equal("social_vault.locked");
    expect(payload.data).to.deep.equal({
      vaultOwner: owner.id,
      vaultAddress: vault.body.data.vaultAddress.toLowerCase(),
      lockedAt: locked.body.data.lockedAt,
    });
    // Long enough for every consumer and delivery of the lock to have run.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(receiver.of("/owner-locks")).to.have.length(1);
    const ownerFeed = await db.prisma.notification.findMany({ where: { userId: owner.id }, orderBy: { seq: "asc" } });
    expect(ownerFeed.length, `nothing in the owner's feed: ${ownerFeed.map((n) => n.type).join(", ")}`).to.equal(ownerRows);
    expect(pushes.filter((p) => p.to === "ExponentPushToken[owner-phone]").length, "no push to the owner").to.equal(ownerPushes);
    expect(mails.filter((m) => m.to.includes(owner.email)).length, "no e-mail to the owner").to.equal(ownerMails);
  });

  it("sends the weekly summary e-mail to the users who asked for it, once a week, in their language", async () => {
    const reader = await newTestUser(api, "weekly-reader", 0);
    const other = await newTestUser(api, "weekly-other", 0);
    const on = await api.request("PATCH", "/v1/notifications/preferences", {
      token: reader.token,
      body: { email: { weekly_summary: true } },
    });
    expect(on.status, on.text).to.equal(200);
    await api.request("PATCH", "/v1/users/me", { token: reader.token, body: { settings: { language: "es" } } });
    for (const user of [reader, other]) {
      await api.request("POST", "/v1/notifications/test", { token: user.token, body: { type: "in_app" } });
      await api.request("POST", "/v1/notifications/test", { token: user.token, body: { type: "in_app" } });
    }
    // A week later on the service clock, the summary of the week that just ended goes out.
    expect((await api.request("POST", "/dev/time/advance", { body: { seconds: 7 * 86_400 } })).status).to.equal(200);
    const mail = await waitFor(
      async () => mails.find((m) => m.to.includes(reader.email) && m.text.includes("Tu semana en TrustMint")),
      20_000,
      "the weekly summary",
    );
    expect(mail.text).to.match(/recibiste 2 notificaciones/);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(mails.filter((m) => m.to.includes(other.email) && /semana|week/i.test(m.text))).to.deep.equal([]);
    expect(mails.filter((m) => m.to.includes(reader.email) && m.text.includes("Tu semana en TrustMint"))).to.have.length(1);
  });

  /** A stream of `token`'s notifications: what it sent so far, whether it ended, and how to drop it. */
  async function openStream(token: string, lastEventId?: string) {
    const controller = new AbortController();
    const response = await fetch(`${api.url}/v1/notifications/stream`, {
      headers: { authorization: `Bearer ${token}`, ...(lastEventId ? { "last-event-id": lastEventId } : {}) },
      signal: controller.signal,
    });
    expect(response.status).to.equal(200);
    const chunks: string[] = [];
    const stream = {
      contentType: response.headers.get("content-type"),
      text: () => chunks.join(""),
      ended: false,
      drop: () => controller.abort(),
    };
    const reader = response.body!.getReader();
    void (async () => {
      const decoder = new TextDecoder();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          chunks.push(decoder.decode(value));
        }
        stream.ended = true;
      } catch {
        // dropped
      }
    })();
    return stream;
  }
  const closeEvent = (reason: string) => `event: close\ndata: {"reason":"${reason}"}\n\n`;

  it("streams a new notification within a second, and resumes after a disconnect with Last-Event-ID", async () => {
    const user = await newTestUser(api, "streamer", 0);
    const first = await openStream(user.token);
    expect(first.contentType).to.match(/^text\/event-stream/);
    await waitFor(async () => first.text().includes("event: unread"), 5_000, "the first unread count");
    const started = Date.now();
    const test = await api.request("POST", "/v1/notifications/test", { token: user.token, body: { type: "in_app" } });
    expect(test.status, test.text).to.equal(200);
    await waitFor(async () => first.text().includes("event: notification"), 5_000, "the streamed notification");
    expect(Date.now() - started, "within a second").to.be.lessThan(1_000);
    const ids = [...first.text().matchAll(/^id: (\d+)$/gm)].map((m) => m[1]!);
    expect(ids).to.have.length(1);
    first.drop();

    // Missed while disconnected: two more.
    await api.request("POST", "/v1/notifications/test", { token: user.token, body: { type: "in_app" } });
    await api.request("POST", "/v1/notifications/test", { token: user.token, body: { type: "in_app" } });
    const again = await openStream(user.token, ids[0]);
    await waitFor(async () => [...again.text().matchAll(/^id: (\d+)$/gm)].length >= 2, 5_000, "the missed notifications");
    const resumed = [...again.text().matchAll(/^id: (\d+)$/gm)].map((m) => BigInt(m[1]!));
    expect(resumed).to.have.length(2);
    expect(resumed.every((id) => id > BigInt(ids[0]!))).to.equal(true);
    expect(again.text()).to.match(/event: unread\ndata: \{"unreadCount":3\}/);
    again.drop();
  });

  it("ends a stream when its token expires, in real time and when the clock moved past it, with a close event", async () => {
    const user = await newTestUser(api, "stream-expiry", 0);
    const shortLived = await api.token(user.email, { email: user.email, expiresIn: 2 });
    const brief = await openStream(shortLived);
    await waitFor(async () => brief.text().includes("event: unread"), 5_000, "the first unread count");
    await waitFor(async () => brief.ended, 6_000, "the stream's end at the token's expiry");
    expect(brief.text().endsWith(closeEvent("token_expired"))).to.equal(true);

    // An hour's token, then the service clock moves past its expiry: the next notification is not sent, the stream ends.
    const hourLong = await api.token(user.email, { email: user.email, expiresIn: 3_600 });
    const stream = await openStream(hourLong);
    await waitFor(async () => stream.text().includes("event: unread"), 5_000, "the first unread count");
    expect((await api.request("POST", "/dev/time/advance", { body: { seconds: 3_601 } })).status).to.equal(200);
    const fresh = await api.token(user.email, { email: user.email, expiresIn: 86_400 });
    const sent = await api.request("POST", "/v1/notifications/test", { token: fresh, body: { type: "in_app" } });
    expect(sent.status, sent.text).to.equal(200);
    await waitFor(async () => stream.ended, 5_000, "the stream's end once the clock passed the expiry");
    expect(stream.text()).to.not.include("event: notification");
    expect(stream.text().endsWith(closeEvent("token_expired"))).to.equal(true);
    // The client reconnects with a fresh token and gets what it missed.
    const again = await openStream(fresh, "0");
    await waitFor(async () => again.text().includes("event: notification"), 5_000, "the missed notification");
    again.drop();
  });

  it(`keeps ${MAX_STREAMS_PER_USER} streams open per account: the next one closes the oldest with a close event`, async () => {
    const user = await newTestUser(api, "many-streams", 0);
    const streams: Awaited<ReturnType<typeof openStream>>[] = [];
    // One after the other: a stream is subscribed (the oldest first) once its unread count came.
    for (let i = 0; i < MAX_STREAMS_PER_USER; i++) {
      const stream = await openStream(user.token);
      await waitFor(async () => stream.text().includes("event: unread"), 5_000, "the stream's unread count");
      streams.push(stream);
    }
    const newest = await openStream(user.token);
    await waitFor(async () => streams[0]!.ended, 5_000, "the oldest stream's end");
    expect(streams[0]!.text().endsWith(closeEvent("stream_limit"))).to.equal(true);
    // The others go on: a new notification reaches the ten open ones.
    const sent = await api.request("POST", "/v1/notifications/test", { token: user.token, body: { type: "in_app" } });
    expect(sent.status).to.equal(200);
    const open = [...streams.slice(1), newest];
    await waitFor(
      async () => open.every((stream) => stream.text().includes("event: notification")),
      5_000,
      "the notification on each open stream",
    );
    expect(open.some((stream) => stream.ended)).to.equal(false);
    expect(streams[0]!.text()).to.not.include("event: notification");
    for (const stream of open) stream.drop();
  });

  it(`keeps ${MAX_PUSH_DEVICES} push devices per account: a new one replaces the least recently registered, even 50 at once`, async () => {
    const user = await newTestUser(api, "many-devices", 0);
    // More requests in a minute than the free plan's 60.
    await api.request("PUT", `/dev/users/${user.id}/plan`, { body: { plan: "enterprise" } });
    const devices = () => db.prisma.pushDevice.findMany({ where: { userId: user.id }, select: { deviceId: true } });
    for (let i = 0; i < MAX_PUSH_DEVICES; i++) {
      const registered = await register(user.token, `tablet-${i}`, `ExponentPushToken[cap-${user.id}-${i}]`);
      expect(registered.body).to.not.have.property("message");
    }
    // Registering tablet-0 again makes it recent: tablet-1 is the least recently registered now.
    await register(user.token, "tablet-0", `ExponentPushToken[cap-${user.id}-0]`);
    const eleventh = await register(user.token, "tablet-10", `ExponentPushToken[cap-${user.id}-10]`);
    expect(eleventh.status, eleventh.text).to.equal(200);
    expect(eleventh.body.data).to.deep.equal({ registered: true, deviceId: "tablet-10" });
    expect(eleventh.body.message).to.include("(tablet-1)");
    expect((await devices()).map((d) => d.deviceId).sort()).to.deep.equal(
      ["tablet-0", ...Array.from({ length: MAX_PUSH_DEVICES - 1 }, (_, i) => `tablet-${i + 2}`)].sort(),
    );
    // 50 registrations at once: the cap holds.
    const burst = await Promise.all(
      Array.from({ length: 50 }, (_, i) => register(user.token, `burst-${i}`, `ExponentPushToken[burst-${user.id}-${i}]`)),
    );
    expect(burst.map((response) => response.status)).to.deep.equal(Array(50).fill(200));
    expect(await devices()).to.have.length(MAX_PUSH_DEVICES);
    // One notification: one push per kept device, no more.
    const before = pushes.length;
    expect((await api.request("POST", "/v1/notifications/test", { token: user.token, body: { type: "push" } })).status).to.equal(200);
    const kept = new Set((await db.prisma.pushDevice.findMany({ where: { userId: user.id } })).map((d) => d.token));
    await waitFor(async () => pushes.slice(before).filter((p) => kept.has(p.to)).length === MAX_PUSH_DEVICES, 20_000, "the pushes");
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(pushes.slice(before).filter((p) => p.to.includes(user.id))).to.have.length(MAX_PUSH_DEVICES);
  });

  it("refuses a malformed Last-Event-ID in the envelope, and ends open streams when the API stops", async () => {
    const user = await newTestUser(api, "stream-edge", 0);
    const bad = await api.request("GET", "/v1/notifications/stream", { token: user.token, headers: { "last-event-id": "abc" } });
    expect(bad.status).to.equal(400);
    expect(bad.body.error).to.deep.include({ code: "VALIDATION_ERROR" });
    expect(bad.body.error.details.field).to.equal("Last-Event-ID");

    const other = await startTestApi({ db });
    const token = await other.token("stream-stopper", { expiresIn: 3_600 });
    const response = await fetch(`${other.url}/v1/notifications/stream`, { headers: { authorization: `Bearer ${token}` } });
    expect(response.status).to.equal(200);
    const reader = response.body!.getReader();
    await reader.read();
    // close() waits for open connections: it returns only because the stream was ended.
    await other.close();
    for (;;) {
      const { done } = await reader.read();
      if (done) break;
    }
  });
});
