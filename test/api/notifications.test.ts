import { randomUUID } from "node:crypto";
import { expect } from "chai";
import { type NotifiableEvent, TYPE_RULES } from "../../domain/notifications/from-events.js";
import { createNotificationsRepo } from "../../domain/notifications/repo.js";
import { createNotificationsService, type Deliver } from "../../domain/notifications/service.js";
import type { NotificationItem, NotificationType, TemplateValues } from "../../domain/notifications/types.js";
import { activeGuardiansOf } from "../../domain/social-vault/repo.js";
import { createUsersRepo } from "../../domain/users/repo.js";
import { type Json, PRODUCTION_ENV, startTestApi, type TestApi } from "../helpers/api.js";
import { usingPostgres } from "../helpers/database.js";
import { expectErrorEnvelope } from "../helpers/envelope.js";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const TOKEN = "ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]";

const DEFAULTS = {
  push: { enabled: true, loan_reminders: true, guardian_alerts: true, marketing: false },
  email: { enabled: true, loan_reminders: true, guardian_alerts: true, weekly_summary: false, marketing: false },
  sms: { enabled: false },
  quietHours: null,
};

describe(`notifications (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(60_000);
  let api: TestApi;
  let alice: string;
  let bob: string;
  let aliceId: string;
  let bobId: string;

  /** A notification written as real ones are: through `notify`, in its own transaction. */
  function item(userId: string, type: NotificationType, values: TemplateValues, extra: Partial<NotificationItem> = {}): NotificationItem {
    return { userId, type, data: { ref: randomUUID() }, values, ...TYPE_RULES[type], sourceId: randomUUID(), ...extra };
  }
  const notify = (entry: NotificationItem) => api.db.prisma.$transaction((tx) => api.services.notifications.notify(tx, entry));
  const levelUp = (userId: string, level = "Saver") => item(userId, "level_up", { level }, { data: { level } });

  before(async () => {
    api = await startTestApi();
    alice = await api.token("notif|alice", { name: "Alice" });
    bob = await api.token("notif|bob", { name: "Bob" });
    aliceId = (await api.request("GET", "/v1/users/me", { token: alice })).body.data.id;
    bobId = (await api.request("GET", "/v1/users/me", { token: bob })).body.data.id;
  });
  after(async () => {
    await api?.close();
  });

  describe("notify", () => {
    it("writes the row once per (source, user, type), in the user's language", async () => {
      const entry = item(aliceId, "loan_funded", { netAmount: "18000000", dueDate: "2026-12-24T10:00:00.000Z" });
      const first = await notify(entry);
      expect(first).to.include({ type: "loan_funded", title: "Loan funded", read: false });
      expect(first!.body).to.match(/^18\.00 USDC is in your wallet\. Repay by Dec 24, 2026/);
      expect(first!.createdAt).to.match(ISO);
      expect(await notify(entry)).to.equal(null);
      expect(await api.db.prisma.notification.count({ where: { userId: aliceId, type: "loan_funded" } })).to.equal(1);

      await api.request("PATCH", "/v1/users/me", { token: bob, body: { settings: { language: "es-MX" } } });
      const spanish = await notify(item(bobId, "badge_earned", { badge: "First Loan" }));
      expect(spanish).to.include({ title: "Insignia conseguida", body: "Conseguiste la insignia First Loan." });
      await api.request("PATCH", "/v1/users/me", { token: bob, body: { settings: { language: "en" } } });
      await api.db.prisma.notification.deleteMany({ where: { userId: { in: [aliceId, bobId] } } });
    });

    it("skips users who do not exist or asked for their account's deletion", async () => {
      expect(await notify(levelUp("usr_nobody"))).to.equal(null);
      const token = await api.token("notif|leaving");
      const id = (await api.request("GET", "/v1/users/me", { token })).body.data.id;
      const deleted = await api.request("DELETE", "/v1/users/me", { token, body: { confirmation: "DELETE_MY_ACCOUNT" } });
      expect(deleted.status, deleted.text).to.equal(200);
      expect(await notify(levelUp(id))).to.equal(null);
      expect(await api.db.prisma.notification.count({ where: { userId: id } })).to.equal(0);
    });

    it("hands each new row to deliver inside its transaction, with the channels the preferences give", async () => {
      const calls: { id: string; userId: string; channels: string[]; holdUntil: Date | null }[] = [];
      const deliver: Deliver = async (written, tx) => {
        for (const { notification, delivery } of written) {
          // Inside the writing transaction: the row is visible there.
          expect(await tx.notification.count({ where: { id: notification.id } })).to.equal(1);
          calls.push({ id: notification.id, userId: notification.userId, ...delivery });
        }
      };
      const service = createNotificationsService({
        db: api.db,
        clock: api.clock,
        repo: createNotificationsRepo({ db: api.db }),
        users: createUsersRepo({ db: api.db }),
        activeGuardiansOf,
        deliver,
      });
      const overdue = item(bobId, "loan_overdue", { dueDate: "2026-11-01T00:00:00.000Z" });
      const written = await api.db.prisma.$transaction((tx) => service.notify(tx, overdue));
      expect(await api.db.prisma.$transaction((tx) => service.notify(tx, overdue))).to.equal(null);
      expect(calls).to.deep.equal([{ id: written!.id, userId: bobId, channels: ["push", "email"], holdUntil: null }]);
      // A row whose deliverer fails is not written: one transaction.
      const failing = createNotificationsService({
        db: api.db,
        clock: api.clock,
        repo: createNotificationsRepo({ db: api.db }),
        users: createUsersRepo({ db: api.db }),
        activeGuardiansOf,
        deliver: async () => {
          throw new Error("queue down");
        },
      });
      // Many items at once (the fan-out's path): one row per recipient who can have it, each in
      // their own language, a twin (same source, user and type) written once, one call to deliver.
      calls.length = 0;
      const source = randomUUID();
      const badge = (userId: string) => ({ ...item(userId, "badge_earned", { badge: "Saver" }), sourceId: source });
      await api.request("PATCH", "/v1/users/me", { token: bob, body: { settings: { language: "es" } } });
      const many = await api.db.prisma.$transaction((tx) =>
        service.notifyMany(tx, [badge(bobId), badge("usr_nobody"), badge(aliceId), badge(bobId)]),
      );
      await api.request("PATCH", "/v1/users/me", { token: bob, body: { settings: { language: "en" } } });
      expect(many.map((view) => view?.title ?? null)).to.deep.equal(["Insignia conseguida", null, "Badge earned", null]);
      expect(calls.map((call) => call.userId)).to.deep.equal([bobId, aliceId]);
      await api.db.prisma.notification.deleteMany({ where: { dedupeKey: { startsWith: source } } });
      const lost = item(bobId, "level_up", { level: "Saver" });
      let failed = false;
      await api.db.prisma
        .$transaction((tx) => failing.notify(tx, lost))
        .catch(() => {
          failed = true;
        });
      expect(failed).to.equal(true);
      expect(await api.db.prisma.notification.count({ where: { userId: bobId, type: "level_up" } })).to.equal(0);
      await api.db.prisma.notification.deleteMany({ where: { userId: bobId } });
    });

    it("reads what an event needs from the database: the guardian's user by wallet, the owner's name", async () => {
      const bobWallet = (await api.request("GET", "/v1/users/me", { token: bob })).body.data.walletAddress as string;
      const vault = "0x1111111111111111111111111111111111111111";
      const event = {
        id: randomUUID(),
        type: "user.guardian_added",
        userId: aliceId,
        createdAt: api.clock.now(),
        data: { vaultAddress: vault, guardianAddress: bobWallet.toLowerCase(), guardianUserId: null, activeAt: "2026-12-01T00:00:00.000Z" },
      } as NotifiableEvent & { createdAt: Date };
      const items = await api.db.prisma.$transaction((tx) => api.services.notifications.itemsFor(tx, [event]));
      expect(items.map(({ userId, type }) => `${type}->${userId}`)).to.deep.equal([
        `guardian_request->${bobId}`,
        `guardian_accepted->${aliceId}`,
      ]);
      const request = await notify(items[0]!);
      expect(request!.body).to.equal("Alice added you as a guardian of their social vault.");
      expect(request!.data).to.deep.equal({ vaultAddress: vault, guardianAddress: bobWallet.toLowerCase() });
      await api.db.prisma.notification.deleteMany({ where: { userId: bobId } });
    });
  });

  describe("the feed", () => {
    const ids: string[] = [];

    before(async () => {
      // Oldest first: loan_created, level_up, loan_created, badge_earned, trust_score_updated.
      const entries = [
        item(aliceId, "loan_created", { amount: "20000000", duration: 30 }, { data: { loanId: "loan-1" } }),
        levelUp(aliceId),
        item(aliceId, "loan_created", { amount: "50000000", duration: 60 }, { data: { loanId: "loan-2" } }),
        item(aliceId, "badge_earned", { badge: "First Loan" }, { data: { badgeId: "first_loan" } }),
        item(aliceId, "trust_score_updated", { previousScore: 10, newScore: 15, change: 5 }),
      ];
      for (const entry of entries) {
        ids.unshift((await notify(entry))!.id);
        await api.clock.advance(1);
      }
    });

    it("lists newest first with pagination and the unread count at the envelope's top level", async () => {
      const page = await api.request("GET", "/v1/notifications?limit=2", { token: alice });
      expect(page.status, page.text).to.equal(200);
      expect(Object.keys(page.body)).to.deep.equal(["success", "data", "pagination", "unreadCount", "meta"]);
      expect(page.body.data.map((n: Json) => n.id)).to.deep.equal(ids.slice(0, 2));
      expect(page.body.pagination).to.deep.equal({ total: 5, limit: 2, offset: 0, hasMore: true });
      expect(page.body.unreadCount).to.equal(5);
      const [newest] = page.body.data;
      expect(Object.keys(newest).sort()).to.deep.equal(["body", "createdAt", "data", "id", "read", "title", "type"]);
      expect(newest).to.deep.include({ type: "trust_score_updated", title: "Trust Score updated", read: false });
      expect(newest.body).to.equal("Your Trust Score went from 10 to 15 (+5).");
      expect(newest.createdAt).to.match(ISO);

      const last = await api.request("GET", "/v1/notifications?limit=2&offset=4", { token: alice });
      expect(last.body.data.map((n: Json) => n.id)).to.deep.equal(ids.slice(4));
      expect(last.body.pagination).to.deep.equal({ total: 5, limit: 2, offset: 4, hasMore: false });
      const all = await api.request("GET", "/v1/notifications", { token: alice });
      expect(all.body.pagination.limit).to.equal(20);
      expect(all.body.data.map((n: Json) => n.id)).to.deep.equal(ids);
      // Another user's feed is theirs alone.
      const other = await api.request("GET", "/v1/notifications", { token: bob });
      expect(other.body.data).to.deep.equal([]);
      expect(other.body.unreadCount).to.equal(0);
    });

    it("filters by type and by read state; the unread count stays the user's whole count", async () => {
      const loans = await api.request("GET", "/v1/notifications?type=loan_created", { token: alice });
      expect(loans.body.data.map((n: Json) => n.data.loanId)).to.deep.equal(["loan-2", "loan-1"]);
      expect(loans.body.data[0].body).to.equal("Your request for 50.00 USDC over 60 days is waiting for funding.");
      expect(loans.body.pagination.total).to.equal(2);
      expect(loans.body.unreadCount).to.equal(5);

      const read = await api.request("PATCH", `/v1/notifications/${ids[1]}/read`, { token: alice });
      expect(read.status, read.text).to.equal(200);
      expect(read.body.data).to.deep.equal({ id: ids[1], read: true });
      const unread = await api.request("GET", "/v1/notifications?unread=true", { token: alice });
      expect(unread.body.data.map((n: Json) => n.id)).to.deep.equal([ids[0], ...ids.slice(2)]);
      expect(unread.body.unreadCount).to.equal(4);
      const readOnly = await api.request("GET", "/v1/notifications?unread=false", { token: alice });
      expect(readOnly.body.data.map((n: Json) => n.id)).to.deep.equal([ids[1]]);
      expect(readOnly.body.data[0].read).to.equal(true);
      const both = await api.request("GET", "/v1/notifications?unread=true&type=loan_created", { token: alice });
      expect(both.body.pagination.total).to.equal(2);
      const count = await api.request("GET", "/v1/notifications/unread/count", { token: alice });
      expect(count.body.data).to.deep.equal({ unreadCount: 4 });
      // Marking it read again is no error.
      expect((await api.request("PATCH", `/v1/notifications/${ids[1]}/read`, { token: alice })).status).to.equal(200);
    });

    for (const [query, field] of [
      ["type=loan_paid", "type"],
      ["type=", "type"],
      ["unread=yes", "unread"],
      ["limit=0", "limit"],
      ["limit=101", "limit"],
      ["offset=-1", "offset"],
      ["limit=1e2", "limit"],
    ] as const) {
      it(`refuses ?${query} with VALIDATION_ERROR on ${field}`, async () => {
        const response = await api.request("GET", `/v1/notifications?${query}`, { token: alice });
        expectErrorEnvelope(response, 400, "VALIDATION_ERROR");
        expect(response.body.error.details.field).to.equal(field);
      });
    }

    it("answers NOTIFICATION_NOT_FOUND for another user's notification and leaves it unchanged", async () => {
      const target = ids[2]!;
      expectErrorEnvelope(await api.request("PATCH", `/v1/notifications/${target}/read`, { token: bob }), 404, "NOTIFICATION_NOT_FOUND");
      expectErrorEnvelope(await api.request("DELETE", `/v1/notifications/${target}`, { token: bob }), 404, "NOTIFICATION_NOT_FOUND");
      const row = await api.db.prisma.notification.findUniqueOrThrow({ where: { id: target } });
      expect(row).to.include({ userId: aliceId, read: false });
      // Unknown ids and ids that are no UUID get the same answer.
      for (const id of [randomUUID(), "not-a-uuid", ids[2]!.toUpperCase().replace(/.$/, "X")]) {
        expectErrorEnvelope(await api.request("PATCH", `/v1/notifications/${id}/read`, { token: alice }), 404, "NOTIFICATION_NOT_FOUND");
        expectErrorEnvelope(await api.request("DELETE", `/v1/notifications/${id}`, { token: alice }), 404, "NOTIFICATION_NOT_FOUND");
      }
      expectErrorEnvelope(await api.request("DELETE", `/v1/notifications/${"x".repeat(101)}`, { token: alice }), 400, "VALIDATION_ERROR");
    });

    it("needs credentials", async () => {
      expectErrorEnvelope(await api.request("GET", "/v1/notifications"), 401, "UNAUTHORIZED");
      expectErrorEnvelope(await api.request("POST", "/v1/notifications/read-all"), 401, "UNAUTHORIZED");
    });

    it("marks all read, then deletes one", async () => {
      const all = await api.request("POST", "/v1/notifications/read-all", { token: alice });
      expect(all.status, all.text).to.equal(200);
      expect(all.body.data).to.deep.equal({ markedRead: 4 });
      expect((await api.request("POST", "/v1/notifications/read-all", { token: alice })).body.data).to.deep.equal({ markedRead: 0 });
      expect((await api.request("GET", "/v1/notifications/unread/count", { token: alice })).body.data.unreadCount).to.equal(0);
      expect(await api.db.prisma.notification.count({ where: { userId: aliceId, read: false } })).to.equal(0);

      const deleted = await api.request("DELETE", `/v1/notifications/${ids[0]}`, { token: alice });
      expect(deleted.status, deleted.text).to.equal(200);
      expect(deleted.body).to.include({ success: true, message: "Notification deleted" });
      expect(deleted.body).to.not.have.property("data");
      expectErrorEnvelope(await api.request("DELETE", `/v1/notifications/${ids[0]}`, { token: alice }), 404, "NOTIFICATION_NOT_FOUND");
      const list = await api.request("GET", "/v1/notifications", { token: alice });
      expect(list.body.data.map((n: Json) => n.id)).to.deep.equal(ids.slice(1));
    });

    it("serves API keys like the other user routes", async () => {
      const token = await api.token("notif|pro");
      const id = (await api.request("GET", "/v1/users/me", { token })).body.data.id;
      await api.request("PUT", `/dev/users/${id}/plan`, { body: { plan: "pro" } });
      const key = (await api.request("POST", "/v1/api-keys", { token, body: { name: "ci" } })).body.data.key;
      await notify(levelUp(id));
      const list = await api.request("GET", "/v1/notifications", { apiKey: key });
      expect(list.status, list.text).to.equal(200);
      expect(list.body.unreadCount).to.equal(1);
    });
  });

  describe("preferences", () => {
    it("answers the defaults", async () => {
      const response = await api.request("GET", "/v1/notifications/preferences", { token: alice });
      expect(response.status, response.text).to.equal(200);
      expect(response.body.data).to.deep.equal(DEFAULTS);
    });

    it("applies a partial change and answers the full result", async () => {
      const quietHours = { start: "22:00", end: "07:00", timeZone: "europe/madrid" };
      const response = await api.request("PATCH", "/v1/notifications/preferences", {
        token: alice,
        body: { push: { marketing: true }, email: { weekly_summary: true }, sms: { enabled: true }, quietHours },
      });
      expect(response.status, response.text).to.equal(200);
      const expected = {
        push: { ...DEFAULTS.push, marketing: true },
        email: { ...DEFAULTS.email, weekly_summary: true },
        sms: { enabled: true },
        quietHours: { ...quietHours, timeZone: "Europe/Madrid" },
      };
      expect(response.body.data).to.deep.equal(expected);
      expect((await api.request("GET", "/v1/notifications/preferences", { token: alice })).body.data).to.deep.equal(expected);
      // Another field later keeps the first change; {} changes nothing.
      const more = await api.request("PATCH", "/v1/notifications/preferences", { token: alice, body: { push: { loan_reminders: false } } });
      expect(more.body.data.push).to.deep.equal({ ...DEFAULTS.push, marketing: true, loan_reminders: false });
      expect(more.body.data.quietHours).to.deep.equal(expected.quietHours);
      expect((await api.request("PATCH", "/v1/notifications/preferences", { token: alice, body: {} })).body.data).to.deep.equal(
        more.body.data,
      );
      // Times in notifications follow the zone of the quiet hours.
      const funded = await notify(item(aliceId, "loan_funded", { netAmount: "1000000", dueDate: "2026-11-24T14:45:00.000Z" }));
      expect(funded!.body).to.match(/03:45 PM GMT\+1\.$/);
      // null removes the quiet hours.
      const cleared = await api.request("PATCH", "/v1/notifications/preferences", { token: alice, body: { quietHours: null } });
      expect(cleared.body.data.quietHours).to.equal(null);
    });

    for (const [body, field] of [
      [{ push: { vibrate: true } }, "push.vibrate"],
      [{ slack: { enabled: true } }, "slack"],
      [{ sms: { loan_reminders: true } }, "sms.loan_reminders"],
      [{ email: { enabled: "no" } }, "email.enabled"],
      [{ push: null }, "push"],
      [{ quietHours: { start: "24:00", end: "07:00", timeZone: "UTC" } }, "quietHours.start"],
      [{ quietHours: { start: "7:00", end: "08:00", timeZone: "UTC" } }, "quietHours.start"],
      [{ quietHours: { start: "07:00", end: "07:00", timeZone: "UTC" } }, "quietHours.end"],
      [{ quietHours: { start: "22:00", end: "07:00", timeZone: "+01:00" } }, "quietHours.timeZone"],
      [{ quietHours: { start: "22:00", end: "07:00", timeZone: "Mars/Olympus" } }, "quietHours.timeZone"],
      [{ quietHours: { start: "22:00", end: "07:00" } }, "quietHours.timeZone"],
      [{ quietHours: { start: "22:00", end: "07:00", timeZone: "UTC", days: [] } }, "quietHours.days"],
    ] as const) {
      it(`refuses ${JSON.stringify(body)} with VALIDATION_ERROR on ${field}, changing nothing`, async () => {
        const before = (await api.request("GET", "/v1/notifications/preferences", { token: bob })).body.data;
        const response = await api.request("PATCH", "/v1/notifications/preferences", { token: bob, body });
        expectErrorEnvelope(response, 400, "VALIDATION_ERROR");
        expect(response.body.error.details.field).to.equal(field);
        expect((await api.request("GET", "/v1/notifications/preferences", { token: bob })).body.data).to.deep.equal(before);
      });
    }

    it("push.enabled is settings.notifications and email.enabled is settings.emailAlerts, both ways", async () => {
      const patched = await api.request("PATCH", "/v1/users/me", { token: bob, body: { settings: { notifications: false } } });
      expect(patched.status, patched.text).to.equal(200);
      let prefs = (await api.request("GET", "/v1/notifications/preferences", { token: bob })).body.data;
      expect(prefs.push.enabled).to.equal(false);
      expect(prefs.email.enabled).to.equal(true);

      const changed = await api.request("PATCH", "/v1/notifications/preferences", {
        token: bob,
        body: { push: { enabled: true }, email: { enabled: false } },
      });
      expect(changed.body.data.push.enabled).to.equal(true);
      expect(changed.body.data.email.enabled).to.equal(false);
      const me = (await api.request("GET", "/v1/users/me", { token: bob })).body.data;
      expect(me.settings).to.include({ notifications: true, emailAlerts: false });
      // The switches live on the User row only: no preferences row was needed for them.
      expect(await api.db.prisma.notificationPreference.count({ where: { userId: bobId } })).to.equal(0);

      await api.request("PATCH", "/v1/users/me", { token: bob, body: { settings: { emailAlerts: true } } });
      prefs = (await api.request("GET", "/v1/notifications/preferences", { token: bob })).body.data;
      expect(prefs).to.deep.equal(DEFAULTS);
    });

    it("two changes of different fields at once both land", async () => {
      const token = await api.token("notif|racer");
      const [a, b] = await Promise.all([
        api.request("PATCH", "/v1/notifications/preferences", { token, body: { push: { marketing: true } } }),
        api.request("PATCH", "/v1/notifications/preferences", { token, body: { email: { marketing: true } } }),
      ]);
      expect([a.status, b.status]).to.deep.equal([200, 200]);
      const prefs = (await api.request("GET", "/v1/notifications/preferences", { token })).body.data;
      expect([prefs.push.marketing, prefs.email.marketing]).to.deep.equal([true, true]);
    });
  });

  describe("push devices", () => {
    const devices = (userId?: string) =>
      api.db.prisma.pushDevice.findMany({
        where: userId ? { userId } : {},
        select: { userId: true, deviceId: true, token: true, platform: true },
      });

    it("registers an Expo push token for a device", async () => {
      const response = await api.request("POST", "/v1/notifications/push/register", {
        token: alice,
        body: { token: TOKEN, platform: "ios", deviceId: "alice-phone" },
      });
      expect(response.status, response.text).to.equal(200);
      expect(response.body.data).to.deep.equal({ registered: true, deviceId: "alice-phone" });
      expect(await devices(aliceId)).to.deep.equal([{ userId: aliceId, deviceId: "alice-phone", token: TOKEN, platform: "ios" }]);
    });

    for (const token of ["abc", "ExponentPushToken[]", "ExponentPushToken[abc", "FooPushToken[abc]", "ExponentPushToken[a b]", ""]) {
      it(`refuses the token ${JSON.stringify(token)} with INVALID_TOKEN on token`, async () => {
        const response = await api.request("POST", "/v1/notifications/push/register", {
          token: alice,
          body: { token, platform: "android", deviceId: "alice-tablet" },
        });
        expectErrorEnvelope(response, 400, "INVALID_TOKEN");
        expect(response.body.error.details.field).to.equal("token");
      });
    }

    it("refuses a bad platform, a missing device id or an unknown field with VALIDATION_ERROR", async () => {
      for (const [body, field] of [
        [{ token: TOKEN, platform: "windows", deviceId: "d" }, "platform"],
        [{ token: TOKEN, platform: "ios" }, "deviceId"],
        [{ token: TOKEN, platform: "ios", deviceId: "  " }, "deviceId"],
        [{ token: 5, platform: "ios", deviceId: "d" }, "token"],
        [{ token: TOKEN, platform: "ios", deviceId: "d", name: "x" }, "name"],
      ] as const) {
        const response = await api.request("POST", "/v1/notifications/push/register", { token: alice, body });
        expectErrorEnvelope(response, 400, "VALIDATION_ERROR");
        expect(response.body.error.details.field).to.equal(field);
      }
    });

    it("replaces the token of a device registered again", async () => {
      const fresh = "ExpoPushToken[yyyyyyyyyyyyyyyyyyyyyy]";
      const response = await api.request("POST", "/v1/notifications/push/register", {
        token: alice,
        body: { token: fresh, platform: "ios", deviceId: "alice-phone" },
      });
      expect(response.status, response.text).to.equal(200);
      expect(await devices(aliceId)).to.deep.equal([{ userId: aliceId, deviceId: "alice-phone", token: fresh, platform: "ios" }]);
    });

    it("moves a token registered by another device, of the same user or another", async () => {
      const token = "ExponentPushToken[zzzzzzzzzzzzzzzzzzzzzz]";
      await api.request("POST", "/v1/notifications/push/register", {
        token: alice,
        body: { token, platform: "android", deviceId: "old-id" },
      });
      await api.request("POST", "/v1/notifications/push/register", {
        token: alice,
        body: { token, platform: "android", deviceId: "new-id" },
      });
      expect((await devices()).filter((device) => device.token === token)).to.deep.equal([
        { userId: aliceId, deviceId: "new-id", token, platform: "android" },
      ]);
      const moved = await api.request("POST", "/v1/notifications/push/register", {
        token: bob,
        body: { token, platform: "android", deviceId: "bob-phone" },
      });
      expect(moved.status, moved.text).to.equal(200);
      expect((await devices()).filter((device) => device.token === token)).to.deep.equal([
        { userId: bobId, deviceId: "bob-phone", token, platform: "android" },
      ]);
      // Alice's other device keeps its own token.
      expect((await devices(aliceId)).map((device) => device.deviceId)).to.deep.equal(["alice-phone"]);
    });

    it("unregisters a device; an unknown device id is no error", async () => {
      const response = await api.request("DELETE", "/v1/notifications/push/unregister", {
        token: alice,
        body: { deviceId: "alice-phone" },
      });
      expect(response.status, response.text).to.equal(200);
      expect(response.body).to.include({ success: true, message: "Device unregistered" });
      expect(await devices(aliceId)).to.deep.equal([]);
      const again = await api.request("DELETE", "/v1/notifications/push/unregister", { token: alice, body: { deviceId: "alice-phone" } });
      expect(again.status).to.equal(200);
      expect(again.body.message).to.equal("No device was registered under this id");
      // Another user's device id is not the caller's to remove.
      await api.request("DELETE", "/v1/notifications/push/unregister", { token: alice, body: { deviceId: "bob-phone" } });
      expect(await devices(bobId)).to.have.length(1);
      expectErrorEnvelope(
        await api.request("DELETE", "/v1/notifications/push/unregister", { token: alice, body: {} }),
        400,
        "VALIDATION_ERROR",
      );
    });
  });

  describe("POST /v1/notifications/test", () => {
    it("writes a test notification to the caller's feed through notify", async () => {
      const response = await api.request("POST", "/v1/notifications/test", { token: bob, body: { type: "push" } });
      expect(response.status, response.text).to.equal(200);
      expect(response.body).to.include({ success: true, message: "Test notification sent (push)" });
      const [latest] = (await api.request("GET", "/v1/notifications?limit=1", { token: bob })).body.data;
      expect(latest).to.deep.include({
        type: "trust_score_updated",
        title: "Test notification",
        read: false,
        data: { test: true, channel: "push" },
      });
      // Each test is a new notification.
      await api.request("POST", "/v1/notifications/test", { token: bob, body: { type: "in_app" } });
      const tests = await api.db.prisma.notification.count({ where: { userId: bobId, title: "Test notification" } });
      expect(tests).to.equal(2);
      expectErrorEnvelope(
        await api.request("POST", "/v1/notifications/test", { token: bob, body: { type: "sms" } }),
        400,
        "VALIDATION_ERROR",
      );
      expectErrorEnvelope(await api.request("POST", "/v1/notifications/test", { body: { type: "push" } }), 401, "UNAUTHORIZED");
    });

    it("is not served in production: 404 NOT_FOUND like an unknown path, whoever asks with whatever body", async () => {
      const production = await startTestApi({
        env: PRODUCTION_ENV,
      });
      try {
        for (const body of [{ type: "push" }, {}, { type: "sms" }]) {
          const response = await production.request("POST", "/v1/notifications/test", { body });
          expectErrorEnvelope(response, 404, "NOT_FOUND");
          expect(response.body.error.message).to.equal("No route for POST /v1/notifications/test");
        }
        const withToken = await production.request("POST", "/v1/notifications/test", {
          body: { type: "push" },
          headers: { authorization: "Bearer a.b.c" },
        });
        expectErrorEnvelope(withToken, 404, "NOT_FOUND");
        expect(await production.db.prisma.notification.count()).to.equal(0);
      } finally {
        await production.close();
      }
    });
  });

  it("documents every route in the OpenAPI document", async () => {
    const doc = (await api.request("GET", "/v1/openapi.json")).body;
    const methods = (path: string) => Object.keys(doc.paths[path] ?? {}).sort();
    expect(methods("/v1/notifications")).to.deep.equal(["get"]);
    expect(methods("/v1/notifications/unread/count")).to.deep.equal(["get"]);
    expect(methods("/v1/notifications/{notifId}/read")).to.deep.equal(["patch"]);
    expect(methods("/v1/notifications/read-all")).to.deep.equal(["post"]);
    expect(methods("/v1/notifications/{notifId}")).to.deep.equal(["delete"]);
    expect(methods("/v1/notifications/preferences")).to.deep.equal(["get", "patch"]);
    expect(methods("/v1/notifications/push/register")).to.deep.equal(["post"]);
    expect(methods("/v1/notifications/push/unregister")).to.deep.equal(["delete"]);
    expect(methods("/v1/notifications/test")).to.deep.equal(["post"]);

    const list = doc.paths["/v1/notifications"].get;
    const envelope = list.responses["200"].content["application/json"].schema;
    expect(envelope.required).to.include.members(["success", "data", "pagination", "unreadCount", "meta"]);
    expect(envelope.properties.unreadCount.type).to.equal("integer");
    // Part 2's 13 types and the five extensions.
    // The items are part 2's Notification, by name.
    expect(envelope.properties.data.items).to.deep.equal({ $ref: "#/components/schemas/Notification" });
    expect(doc.components.schemas.Notification.properties.type.enum)
      .to.have.length(18)
      .and.include("webhook_failing")
      .and.include("payment_receipt");
    const limit = list.parameters.find((parameter: Json) => parameter.name === "limit");
    expect(limit.schema).to.include({ type: "integer", maximum: 100, default: 20 });
    const type = list.parameters.find((parameter: Json) => parameter.name === "type");
    expect(type.schema.enum).to.have.length(18);

    const removed = doc.paths["/v1/notifications/{notifId}"].delete.responses["200"].content["application/json"].schema;
    expect(removed.required).to.include("message").and.not.include("data");
    expect(doc.paths["/v1/notifications/{notifId}"].delete.responses["404"].description).to.include("NOTIFICATION_NOT_FOUND");
    expect(doc.paths["/v1/notifications/push/register"].post.responses["400"].description).to.include("INVALID_TOKEN");
    const patch = doc.paths["/v1/notifications/preferences"].patch.requestBody.content["application/json"].schema;
    expect(patch.additionalProperties).to.equal(false);
    expect(Object.keys(patch.properties).sort()).to.deep.equal(["email", "push", "quietHours", "sms"]);
    // DELETE /users/me keeps its shape: a message and deletionDate, no data.
    const deleteMe = doc.paths["/v1/users/me"].delete.responses["200"].content["application/json"].schema;
    expect(deleteMe.required).to.include.members(["message", "deletionDate"]).and.not.include("data");
  });
});
