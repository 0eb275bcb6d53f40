import { expect } from "chai";
import { startTestApi, type TestApi } from "../helpers/api.js";
import { usingPostgres } from "../helpers/database.js";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

describe(`users, API keys and the sandbox (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(60_000);
  let api: TestApi;
  let alice: string;
  let bob: string;
  let aliceId: string;
  let bobId: string;

  before(async () => {
    api = await startTestApi();
    alice = await api.token("auth0|alice", { email: "alice@example.com", name: "Alice" });
    bob = await api.token("auth0|bob", { email: "bob@example.com" });
    aliceId = (await api.request("GET", "/v1/users/me", { token: alice })).body.data.id;
    bobId = (await api.request("GET", "/v1/users/me", { token: bob })).body.data.id;
  });
  after(async () => {
    await api?.close();
  });

  describe("GET /v1/users/me", () => {
    it("answers the private view in the envelope, provisioned just in time with a managed wallet", async () => {
      const response = await api.request("GET", "/v1/users/me", { token: alice });
      expect(response.status).to.equal(200);
      expect(response.body.success).to.equal(true);
      expect(response.body.meta.requestId).to.equal(response.headers.get("x-request-id"));
      expect(response.body.meta.timestamp).to.match(ISO);
      const user = response.body.data;
      expect(user).to.include({ id: aliceId, email: "alice@example.com", displayName: "Alice", trustScore: 0, level: "Newcomer", xp: 0 });
      expect(user.walletAddress).to.match(ADDRESS);
      expect(user.createdAt).to.match(ISO);
      expect(user.settings).to.deep.equal({ notifications: true, emailAlerts: true, language: "en", publicTrustScore: false });
    });

    it("gives every user a distinct wallet and takes the name from the e-mail when there is no name claim", async () => {
      const me = (await api.request("GET", "/v1/users/me", { token: bob })).body.data;
      expect(me.displayName).to.equal("bob");
      const other = (await api.request("GET", "/v1/users/me", { token: alice })).body.data;
      expect(me.walletAddress).to.not.equal(other.walletAddress);
    });

    it("provisions once when first requests race", async () => {
      const token = await api.token("racer");
      const answers = await Promise.all([1, 2, 3, 4].map(() => api.request("GET", "/v1/users/me", { token })));
      expect(answers.map((a) => a.status)).to.deep.equal([200, 200, 200, 200]);
      expect(new Set(answers.map((a) => a.body.data.id)).size).to.equal(1);
    });
  });

  describe("GET /v1/users/{userId}", () => {
    it("answers the public view without credentials, never email or settings", async () => {
      const response = await api.request("GET", `/v1/users/${aliceId}`);
      expect(response.status).to.equal(200);
      expect(Object.keys(response.body.data).sort()).to.deep.equal(
        ["badges", "createdAt", "displayName", "id", "level", "trustScore", "walletAddress"].sort(),
      );
      expect(response.body.data.badges).to.deep.equal([]);
    });

    it("answers USER_NOT_FOUND for an unknown user", async () => {
      const response = await api.request("GET", "/v1/users/usr_nobody");
      expect(response.status).to.equal(404);
      expect(response.body.error.code).to.equal("USER_NOT_FOUND");
    });

    it("answers VALIDATION_ERROR for an over-long id", async () => {
      const response = await api.request("GET", `/v1/users/${"x".repeat(65)}`);
      expect(response.status).to.equal(400);
      expect(response.body.error.details).to.deep.include({ field: "userId" });
    });
  });

  describe("PATCH /v1/users/me", () => {
    it("updates the display name and settings", async () => {
      const response = await api.request("PATCH", "/v1/users/me", {
        token: alice,
        body: { displayName: "Alice A.", settings: { language: "pt-BR", emailAlerts: false } },
      });
      expect(response.status, response.text).to.equal(200);
      expect(response.body.data).to.deep.include({
        id: aliceId,
        displayName: "Alice A.",
        settings: { notifications: true, emailAlerts: false, language: "pt-BR", publicTrustScore: false },
      });
      expect(response.body.data.updatedAt).to.match(ISO);
      const me = (await api.request("GET", "/v1/users/me", { token: alice })).body.data;
      expect(me.settings.language).to.equal("pt-BR");
    });

    // `{}` changes nothing and answers 200 (test/api/hardening.test.ts): the schema allows it.
    for (const [body, field] of [
      [{ displayName: "" }, "displayName"],
      [{ displayName: "   " }, "displayName"],
      [{ displayName: "x".repeat(51) }, "displayName"],
      [{ settings: { notifications: "yes" } }, "settings.notifications"],
      [{ settings: { language: "not a language" } }, "settings.language"],
      [{ settings: { theme: "dark" } }, "settings.theme"],
      [{ email: "new@example.com" }, "email"],
      [[], "body"],
    ] as const) {
      it(`refuses ${JSON.stringify(body)} with VALIDATION_ERROR (400) on ${field}`, async () => {
        const response = await api.request("PATCH", "/v1/users/me", { token: alice, body });
        expect(response.status, response.text).to.equal(400);
        expect(response.body.error.code).to.equal("VALIDATION_ERROR");
        expect(response.body.error.details.field).to.equal(field);
        expect(response.body.error.details.reason).to.be.a("string").and.not.empty;
      });
    }
  });

  describe("GET /v1/users/{userId}/xp", () => {
    it("answers XP and level progress", async () => {
      const response = await api.request("GET", `/v1/users/${bobId}/xp`, { token: alice });
      expect(response.status).to.equal(200);
      expect(response.body.data).to.deep.equal({
        userId: bobId,
        xp: 0,
        level: "Newcomer",
        nextLevel: "Explorer",
        xpToNextLevel: 100,
        progressPercent: 0,
        badges: [],
      });
    });

    it("needs a token and a known user", async () => {
      expect((await api.request("GET", `/v1/users/${bobId}/xp`)).status).to.equal(401);
      expect((await api.request("GET", "/v1/users/usr_nobody/xp", { token: alice })).body.error.code).to.equal("USER_NOT_FOUND");
    });
  });

  describe("GET /v1/users/me/activity", () => {
    before(async () => {
      const rows = Array.from({ length: 25 }, (_, i) => ({
        id: `act_${String(i).padStart(3, "0")}`,
        userId: aliceId,
        type: i % 2 === 0 ? "vault_deposit" : "loan_repaid",
        description: `entry ${i}`,
        xpEarned: 10,
        createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
      }));
      await api.db.prisma.activity.createMany({ data: rows });
    });

    it("pages newest first with pagination", async () => {
      const first = await api.request("GET", "/v1/users/me/activity?limit=10", { token: alice });
      expect(first.status).to.equal(200);
      expect(first.body.data).to.have.length(10);
      expect(first.body.data[0]).to.deep.equal({
        id: "act_024",
        type: "vault_deposit",
        description: "entry 24",
        xpEarned: 10,
        timestamp: "2026-01-01T00:00:24.000Z",
      });
      expect(first.body.pagination).to.deep.equal({ total: 25, limit: 10, offset: 0, hasMore: true });
      const last = await api.request("GET", "/v1/users/me/activity?limit=10&offset=20", { token: alice });
      expect(last.body.data).to.have.length(5);
      expect(last.body.pagination.hasMore).to.equal(false);
      const filtered = await api.request("GET", "/v1/users/me/activity?type=loan_repaid", { token: alice });
      expect(filtered.body.pagination).to.deep.include({ total: 12, limit: 20 });
    });

    it("shows another user only their own feed", async () => {
      const response = await api.request("GET", "/v1/users/me/activity", { token: bob });
      expect(response.body.data).to.deep.equal([]);
      expect(response.body.pagination).to.deep.equal({ total: 0, limit: 20, offset: 0, hasMore: false });
    });

    for (const query of ["limit=0", "limit=101", "limit=abc", "offset=-1", "type=other", "limit=1&limit=2"]) {
      it(`refuses ?${query}`, async () => {
        const response = await api.request("GET", `/v1/users/me/activity?${query}`, { token: alice });
        expect(response.status).to.equal(400);
        expect(response.body.error.code).to.equal("VALIDATION_ERROR");
        expect(response.body.error.details.field).to.be.oneOf(["limit", "offset", "type"]);
      });
    }
  });

  describe("GET /v1/users/me/guardians and /export", () => {
    it("GET /v1/users/me/guardians answers an empty list until the social vault lands", async () => {
      const response = await api.request("GET", "/v1/users/me/guardians", { token: alice });
      expect(response.status).to.equal(200);
      expect(response.body.data).to.deep.equal([]);
    });

    it("GET /v1/users/me/export holds the profile, the activity and the API keys, only the caller's", async () => {
      const response = await api.request("GET", "/v1/users/me/export", { token: alice });
      expect(response.status).to.equal(200);
      const data = response.body.data;
      expect(data.profile).to.include({ id: aliceId, email: "alice@example.com" });
      expect(data.activity).to.have.length(25);
      expect(data).to.include.keys("loans", "vaultHistory", "guardians", "apiKeys", "exportedAt");
      const bobs = (await api.request("GET", "/v1/users/me/export", { token: bob })).body.data;
      expect(bobs.profile.id).to.equal(bobId);
      expect(bobs.activity).to.deep.equal([]);
    });
  });

  describe("sandbox", () => {
    it("PUT /dev/users/{userId}/plan sets the plan", async () => {
      const response = await api.request("PUT", `/dev/users/${bobId}/plan`, { body: { plan: "pro" } });
      expect(response.status).to.equal(200);
      expect(response.body.data).to.deep.equal({ userId: bobId, plan: "pro" });
      expect((await api.request("PUT", "/dev/users/usr_nobody/plan", { body: { plan: "pro" } })).body.error.code).to.equal(
        "USER_NOT_FOUND",
      );
      const bad = await api.request("PUT", `/dev/users/${bobId}/plan`, { body: { plan: "gold" } });
      expect(bad.status).to.equal(400);
      expect(bad.body.error.details.field).to.equal("plan");
    });

    it("POST /dev/time/advance moves the service clock and the chain clock together", async () => {
      const blockTime = async () => {
        const reply = await fetch(api.chain.rpcUrl, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getBlockByNumber", params: ["latest", false] }),
        });
        return Number(((await reply.json()) as { result: { timestamp: string } }).result.timestamp);
      };
      const chainBefore = await blockTime();
      const serviceBefore = api.clock.nowSeconds();
      const response = await api.request("POST", "/dev/time/advance", { body: { seconds: 3600 } });
      expect(response.status).to.equal(200);
      const now = Date.parse(response.body.data.now) / 1000;
      expect(now - serviceBefore).to.be.within(3600, 3605);
      expect((await blockTime()) - chainBefore).to.be.within(3600, 3605);
      for (const body of [{}, { seconds: 0 }, { seconds: -5 }, { seconds: 1.5 }, { seconds: "60" }]) {
        const refused = await api.request("POST", "/dev/time/advance", { body });
        expect(refused.status, JSON.stringify(body)).to.equal(400);
        expect(refused.body.error.details.field).to.equal("seconds");
      }
    });
  });

  describe("API keys", () => {
    let bobKey: string;
    let bobKeyId: string;

    it("are refused to the free plan", async () => {
      const response = await api.request("POST", "/v1/api-keys", { token: alice, body: { name: "ci" } });
      expect(response.status).to.equal(403);
      expect(response.body.error.code).to.equal("FORBIDDEN");
    });

    it("are created for Pro, shown once, listed without the key", async () => {
      const created = await api.request("POST", "/v1/api-keys", { token: bob, body: { name: "ci" } });
      expect(created.status, created.text).to.equal(201);
      bobKey = created.body.data.key;
      bobKeyId = created.body.data.id;
      expect(bobKey).to.match(/^tmk_[A-Za-z0-9_-]{43}$/);
      expect(created.body.data.prefix).to.equal(bobKey.slice(0, 12));
      const listed = await api.request("GET", "/v1/api-keys", { token: bob });
      expect(listed.body.data).to.have.length(1);
      expect(listed.body.data[0]).to.not.have.property("key");
      expect(listed.text).to.not.include(bobKey);
      const stored = await api.db.prisma.apiKey.findUnique({ where: { id: bobKeyId } });
      expect(stored!.hash).to.match(/^[0-9a-f]{64}$/);
      expect(JSON.stringify(stored)).to.not.include(bobKey);
    });

    it("authenticate as their owner, but not for account management", async () => {
      const me = await api.request("GET", "/v1/users/me", { apiKey: bobKey });
      expect(me.status).to.equal(200);
      expect(me.body.data.id).to.equal(bobId);
      expect((await api.request("GET", "/v1/users/me/export", { apiKey: bobKey })).status).to.equal(403);
      expect((await api.request("POST", "/v1/api-keys", { apiKey: bobKey, body: { name: "x" } })).status).to.equal(403);
      expect(
        (await api.request("DELETE", "/v1/users/me", { apiKey: bobKey, body: { confirmation: "DELETE_MY_ACCOUNT" } })).status,
      ).to.equal(403);
    });

    it("refuse an unknown key with 401", async () => {
      const response = await api.request("GET", "/v1/users/me", { apiKey: "tmk_not-a-real-key" });
      expect(response.status).to.equal(401);
      expect(response.body.error.code).to.equal("UNAUTHORIZED");
    });

    it("stop working when the owner falls back to the free plan", async () => {
      await api.request("PUT", `/dev/users/${bobId}/plan`, { body: { plan: "free" } });
      expect((await api.request("GET", "/v1/users/me", { apiKey: bobKey })).status).to.equal(403);
      await api.request("PUT", `/dev/users/${bobId}/plan`, { body: { plan: "pro" } });
      expect((await api.request("GET", "/v1/users/me", { apiKey: bobKey })).status).to.equal(200);
    });

    it("cannot be listed or revoked by another user", async () => {
      expect((await api.request("GET", "/v1/api-keys", { token: alice })).body.data).to.deep.equal([]);
      const response = await api.request("DELETE", `/v1/api-keys/${bobKeyId}`, { token: alice });
      expect(response.status).to.equal(404);
      expect((await api.request("GET", "/v1/users/me", { apiKey: bobKey })).status).to.equal(200);
    });

    it("are revoked by their owner and stop working at once", async () => {
      const response = await api.request("DELETE", `/v1/api-keys/${bobKeyId}`, { token: bob });
      expect(response.status).to.equal(200);
      expect(response.body.data.id).to.equal(bobKeyId);
      expect((await api.request("GET", "/v1/users/me", { apiKey: bobKey })).status).to.equal(401);
      expect((await api.request("DELETE", `/v1/api-keys/${bobKeyId}`, { token: bob })).status).to.equal(404);
    });

    it("validate the name", async () => {
      const response = await api.request("POST", "/v1/api-keys", { token: bob, body: { name: "" } });
      expect(response.status).to.equal(400);
      expect(response.body.error.details.field).to.equal("name");
    });
  });

  describe("one user never reads or changes another's private data", () => {
    it("every /me route answers with the caller's own data only", async () => {
      for (const path of ["/v1/users/me", "/v1/users/me/activity", "/v1/users/me/guardians", "/v1/users/me/export"]) {
        const response = await api.request("GET", path, { token: bob });
        expect(response.status, path).to.equal(200);
        expect(response.text, path).to.not.include("alice@example.com");
        expect(response.text, path).to.not.include("act_0");
      }
      await api.request("PATCH", "/v1/users/me", { token: bob, body: { displayName: "Bob" } });
      expect((await api.request("GET", "/v1/users/me", { token: alice })).body.data.displayName).to.equal("Alice A.");
    });

    it("other users' private views are not reachable by id", async () => {
      const response = await api.request("GET", `/v1/users/${aliceId}`, { token: bob });
      expect(response.body.data).to.not.have.property("email");
      expect(response.body.data).to.not.have.property("settings");
      for (const [method, path] of [
        ["PATCH", `/v1/users/${aliceId}`],
        ["DELETE", `/v1/users/${aliceId}`],
        ["GET", `/v1/users/${aliceId}/activity`],
        ["GET", `/v1/users/${aliceId}/export`],
        ["GET", `/v1/users/${aliceId}/guardians`],
      ] as const) {
        const answer = await api.request(method, path, { token: bob, body: method === "GET" ? undefined : { displayName: "pwned" } });
        // The public profile's path is known, for GET only: another method there is 405.
        const [status, code] = method === "GET" ? [404, "NOT_FOUND"] : [405, "METHOD_NOT_ALLOWED"];
        expect(answer.status, `${method} ${path}`).to.equal(status);
        expect(answer.body.error.code).to.equal(code);
      }
    });
  });

  describe("DELETE /v1/users/me", () => {
    it("needs the confirmation", async () => {
      for (const body of [{}, { confirmation: "yes" }]) {
        const response = await api.request("DELETE", "/v1/users/me", { token: bob, body });
        expect(response.status).to.equal(400);
        expect(response.body.error.details.field).to.equal("confirmation");
      }
      const noBody = await api.request("DELETE", "/v1/users/me", { token: bob });
      expect(noBody.status).to.equal(400);
    });

    it("schedules deletion in 30 days of the service clock and makes the account unusable at once", async () => {
      const token = await api.token("leaver", { email: "leaver@example.com" });
      const id = (await api.request("GET", "/v1/users/me", { token })).body.data.id;
      const response = await api.request("DELETE", "/v1/users/me", { token, body: { confirmation: "DELETE_MY_ACCOUNT" } });
      expect(response.status, response.text).to.equal(200);
      expect(response.body).to.not.have.property("data");
      expect(response.body.message).to.be.a("string");
      const expected = api.clock.now().getTime() + 30 * 86_400_000;
      expect(Math.abs(Date.parse(response.body.deletionDate) - expected)).to.be.below(5_000);
      const after = await api.request("GET", "/v1/users/me", { token });
      expect(after.status).to.equal(403);
      expect(after.body.error.code).to.equal("FORBIDDEN");
      // A fresh token of the same subject does not bring the account back.
      expect((await api.request("GET", "/v1/users/me", { token: await api.token("leaver") })).status).to.equal(403);
      expect((await api.request("GET", `/v1/users/${id}`)).body.error.code).to.equal("USER_NOT_FOUND");
    });

    it("erases the personal data once the deletion date has passed on the service clock", async () => {
      const token = await api.token("eraser", { email: "eraser@example.com", name: "Eraser" });
      const id = (await api.request("GET", "/v1/users/me", { token })).body.data.id;
      await api.services.xp.award(id, { type: "vault_deposit", description: "Deposit", xp: 20, sourceId: "0xdead" });
      await api.request("POST", "/v1/notifications/test", { token, body: { type: "in_app" } });
      await api.request("PATCH", "/v1/notifications/preferences", { token, body: { push: { marketing: true } } });
      await api.request("POST", "/v1/notifications/push/register", {
        token,
        body: { token: "ExponentPushToken[eraser]", platform: "ios", deviceId: "eraser-phone" },
      });
      expect(await api.db.prisma.notification.count({ where: { userId: id } })).to.equal(1);
      await api.request("DELETE", "/v1/users/me", { token, body: { confirmation: "DELETE_MY_ACCOUNT" } });
      const before = api.clock.now();
      expect(await api.services.eraseDueAccounts(new Date(before.getTime() + 29 * 86_400_000))).to.not.include(id);
      expect((await api.db.prisma.user.findUniqueOrThrow({ where: { id } })).email).to.equal("eraser@example.com");
      const erased = await api.services.eraseDueAccounts(new Date(before.getTime() + 30 * 86_400_000 + 1_000));
      expect(erased).to.include(id);
      const row = await api.db.prisma.user.findUniqueOrThrow({ where: { id } });
      expect(row).to.deep.include({ email: null, displayName: "Deleted user", subject: "eraser" });
      expect(row.erasedAt).to.be.instanceOf(Date);
      expect(row.walletAddress).to.match(/^0x/);
      expect(await api.db.prisma.activity.count({ where: { userId: id } })).to.equal(0);
      expect(await api.db.prisma.userBadge.count({ where: { userId: id } })).to.equal(0);
      expect(await api.db.prisma.notification.count({ where: { userId: id } })).to.equal(0);
      expect(await api.db.prisma.notificationPreference.count({ where: { userId: id } })).to.equal(0);
      expect(await api.db.prisma.pushDevice.count({ where: { userId: id } })).to.equal(0);
      expect(await api.services.eraseDueAccounts(new Date(before.getTime() + 31 * 86_400_000))).to.deep.equal([]);
    });
  });
});
