import { randomUUID } from "node:crypto";
import { expect } from "chai";
import { importJWK, type JWK, SignJWT } from "jose";
import { MAX_INPUT_DEPTH } from "../../api/http/input.js";
import { memoryCounters } from "../../api/http/rate-limit.js";
import { ConfigError, loadConfig } from "../../core/config.js";
import { type Json, startTestApi, type TestApi } from "../helpers/api.js";
import { startTestChain, type TestChain } from "../helpers/chain.js";
import { usingPostgres } from "../helpers/database.js";
import { expectErrorEnvelope, randomIp } from "../helpers/envelope.js";
import { capturingLogger } from "../helpers/waiting.js";

// Regression tests for what outside probes found (issue "Hardening"): each `it` is one finding.

const BAD_ENCODINGS = ["%FF", "%", "%E0%A4%A", "%C0%AF"];
const JSON_TYPE = { "content-type": "application/json" };

describe(`hardening (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(120_000);
  let api: TestApi;
  let doc: Json;

  before(async () => {
    api = await startTestApi();
    doc = (await api.request("GET", "/v1/openapi.json")).body;
  });
  after(async () => {
    await api?.close();
  });

  async function userWithPlan(sub: string, plan: "free" | "pro" | "enterprise") {
    const token = await api.token(sub);
    const me = await api.request("GET", "/v1/users/me", { token, headers: { "x-forwarded-for": randomIp() } });
    await api.request("PUT", `/dev/users/${me.body.data.id}/plan`, { body: { plan } });
    return { token, id: me.body.data.id as string };
  }

  describe("bad input gets a 4xx envelope, never a 500", () => {
    it("answers bad percent-encoding in a path parameter with VALIDATION_ERROR on every route that has one", async () => {
      const { token } = await userWithPlan("encodings", "enterprise");
      const routes = Object.entries(doc.paths as Record<string, Json>).flatMap(([template, item]) =>
        Object.keys(item)
          .filter(() => template.includes("{"))
          .map((method) => ({ method: method.toUpperCase(), template })),
      );
      expect(routes.length).to.be.at.least(5);
      for (const { method, template } of routes) {
        for (const bad of BAD_ENCODINGS) {
          const url = template.replace(/\{[^}]+\}/, bad);
          const response = await api.request(method, url, { token, body: method === "GET" || method === "DELETE" ? undefined : {} });
          expectErrorEnvelope(response, 400, "VALIDATION_ERROR");
          expect(response.body.error.details, `${method} ${url}`).to.deep.equal({ field: "path", reason: "bad percent-encoding" });
        }
      }
    });

    it("refuses U+0000 and lone surrogates in a path, a query and a body, naming the field", async () => {
      const { token } = await userWithPlan("nul-bytes", "pro");
      const nulPath = await api.request("GET", "/v1/users/%00");
      expectErrorEnvelope(nulPath, 400, "VALIDATION_ERROR");
      expect(nulPath.body.error.details).to.deep.equal({ field: "userId", reason: "must not contain U+0000" });
      const surrogatePath = await api.request("GET", "/v1/users/%ED%A0%80"); // UTF-8 of a lone U+D800: not decodable
      expectErrorEnvelope(surrogatePath, 400, "VALIDATION_ERROR");

      const displayName = await api.request("PATCH", "/v1/users/me", { token, body: { displayName: "a\u0000b" } });
      expectErrorEnvelope(displayName, 400, "VALIDATION_ERROR");
      expect(displayName.body.error.details).to.deep.equal({ field: "displayName", reason: "must not contain U+0000" });
      // A lone surrogate written as a JSON escape parses to a string that is not Unicode.
      const surrogate = await api.request("PATCH", "/v1/users/me", { token, rawBody: '{"displayName":"x\\ud800y"}', headers: JSON_TYPE });
      expectErrorEnvelope(surrogate, 400, "VALIDATION_ERROR");
      expect(surrogate.body.error.details.reason).to.match(/well-formed Unicode/);
      const key = await api.request("POST", "/v1/api-keys", { token, body: { name: "k\u0000" } });
      expectErrorEnvelope(key, 400, "VALIDATION_ERROR");
      expect(key.body.error.details.field).to.equal("name");
      const query = await api.request("GET", "/v1/users/me/activity?type=%00", { token });
      expectErrorEnvelope(query, 400, "VALIDATION_ERROR");
      const unknownKey = await api.request("PATCH", "/v1/users/me", { token, rawBody: '{"a\\u0000":1}', headers: JSON_TYPE });
      expectErrorEnvelope(unknownKey, 400, "VALIDATION_ERROR");
      // Nothing was written: the profile is as it was.
      const me = await api.request("GET", "/v1/users/me", { token });
      expect(me.body.data.displayName).to.equal("New user");
    });

    it("serves a token whose name or email holds U+0000 (the claims are cleaned) and refuses one whose sub does", async () => {
      await api.token("warm-up");
      const devKey: JWK = JSON.parse(
        (await api.db.prisma.serviceSecret.findUniqueOrThrow({ where: { name: "dev-identity-signing-key" } })).value,
      );
      const sign = async (claims: Record<string, unknown>) => {
        const now = api.clock.nowSeconds();
        return new SignJWT(claims)
          .setProtectedHeader({ alg: "ES256", kid: devKey.kid })
          .setIssuer(`${api.url}/dev`)
          .setAudience("trustmint-api")
          .setIssuedAt(now)
          .setExpirationTime(now + 600)
          .sign(await importJWK(devKey, "ES256"));
      };
      const odd = await sign({ sub: "odd-claims", name: "Ann\u0000Lee", email: "ann\u0000@example.com" });
      for (let i = 0; i < 2; i++) {
        const me = await api.request("GET", "/v1/users/me", { token: odd });
        expect(me.status, me.text).to.equal(200);
        expect(me.body.data.displayName).to.equal("AnnLee");
        expect(me.body.data.email).to.equal("ann@example.com");
      }
      const badSub = await sign({ sub: "evil\u0000sub" });
      expectErrorEnvelope(await api.request("GET", "/v1/users/me", { token: badSub }), 401, "UNAUTHORIZED");
      expect(await api.db.prisma.user.count({ where: { subject: { contains: "evil" } } })).to.equal(0);
    });

    it("answers a body whose Content-Encoding is gzip but whose bytes are not with VALIDATION_ERROR", async () => {
      const { token } = await userWithPlan("gzip", "free");
      const response = await api.request("PATCH", "/v1/users/me", {
        token,
        rawBody: '{"displayName":"plain"}',
        headers: { "content-type": "application/json", "content-encoding": "gzip" },
      });
      expectErrorEnvelope(response, 400, "VALIDATION_ERROR");
      expect(response.body.error.details).to.deep.equal({ field: "body", reason: "the body does not match its Content-Encoding" });
    });
  });

  describe("rate limits cannot be escaped or turned against others", () => {
    it("counts a malformed X-Forwarded-For as the connection's address, not as a new client", async () => {
      // Each request claims another "client"; none is an IP, so all count as 127.0.0.1 in a fresh window.
      api.clock.advance(60 - (api.clock.nowSeconds() % 60));
      const statuses: number[] = [];
      for (let i = 0; i < 61; i++) {
        const forged = i % 2 === 0 ? `not-an-ip-${i}` : `${"x".repeat(8_000)}${i}`;
        statuses.push((await api.request("GET", "/v1/users/usr_nobody", { headers: { "x-forwarded-for": forged } })).status);
      }
      expect(statuses.slice(0, 60).every((status) => status === 404)).to.equal(true);
      expect(statuses[60]).to.equal(429);
      api.clock.advance(60);
    });

    it("bounds the in-memory counters: the least recently used are forgotten past the bound", async () => {
      const counters = memoryCounters(1_000);
      for (let i = 0; i < 5_000; i++) await counters(`ip:${i}`, 1, 60);
      expect(counters.size()).to.equal(1_000);
      expect(await counters("ip:4999", 1, 60)).to.equal(2); // recent: still counted
      expect(await counters("ip:0", 1, 60)).to.equal(1); // oldest: forgotten, starts again
    });

    it("reads TRUST_PROXY as a setting, refusing a malformed one with the variable's name", () => {
      expect(loadConfig({}).trustProxy).to.deep.equal(["loopback"]);
      expect(loadConfig({ TRUST_PROXY: "false" }).trustProxy).to.equal(false);
      expect(loadConfig({ TRUST_PROXY: "2" }).trustProxy).to.equal(2);
      expect(loadConfig({ TRUST_PROXY: "10.0.0.0/8, 192.168.1.7, uniquelocal" }).trustProxy).to.deep.equal([
        "10.0.0.0/8",
        "192.168.1.7",
        "uniquelocal",
      ]);
      for (const bad of ["10.0.0.0/33", "proxy.example.com", "1.2.3", "::1/129"]) {
        expect(() => loadConfig({ TRUST_PROXY: bad }), bad).to.throw(ConfigError, /^config: TRUST_PROXY must be/);
      }
    });

    it("with TRUST_PROXY=false, X-Forwarded-For is ignored: every caller on this connection shares one bucket", async () => {
      const direct = await startTestApi({ env: { TRUST_PROXY: "false" }, db: api.db, chain: api.chain });
      try {
        let served = 0;
        for (let i = 0; i < 61; i++) {
          const response = await direct.request("GET", "/v1/users/usr_nobody", { headers: { "x-forwarded-for": randomIp() } });
          if (response.status === 404) served += 1;
        }
        expect(served).to.equal(60);
      } finally {
        await direct.close();
      }
    });

    it("gives a user the plan's limit once, whatever mix of token and API keys they call with", async () => {
      api.clock.advance(60 - (api.clock.nowSeconds() % 60));
      const { token } = await userWithPlan("one-plan", "pro");
      const keys: string[] = [];
      for (let i = 0; i < 3; i++) keys.push((await api.request("POST", "/v1/api-keys", { token, body: { name: `k${i}` } })).body.data.key);
      let served = 0;
      for (let i = 0; i < 400; i++) {
        const credential = i % 4 === 0 ? { token } : { apiKey: keys[(i % 4) - 1] };
        const response = await api.request("GET", "/v1/users/me", credential);
        if (response.status === 200) served += 1;
        else expect(response.status).to.equal(429);
      }
      // The key creations above were served in this minute too.
      expect(served + 3).to.equal(300);
      api.clock.advance(60);
    });

    it("counts only served requests against the day: 999 sent in one minute use 60 of the 1,000", async () => {
      api.clock.advance(86_400 - (api.clock.nowSeconds() % 86_400)); // a fresh day
      const ip = randomIp();
      const get = () => api.request("GET", "/v1/users/usr_nobody", { headers: { "x-forwarded-for": ip } });
      let served = 0;
      for (let i = 0; i < 999; i++) if ((await get()).status === 404) served += 1;
      expect(served).to.equal(60);
      // Minute after minute, the day serves the rest of its 1,000, then refuses.
      let refusedByDay = false;
      while (!refusedByDay) {
        api.clock.advance(60);
        for (let i = 0; i < 60; i++) {
          const response = await get();
          if (response.status === 404) served += 1;
          else {
            expect(response.status).to.equal(429);
            expect(response.headers.get("x-ratelimit-limit")).to.equal("1000");
            refusedByDay = true;
            break;
          }
        }
      }
      expect(served).to.equal(1_000);
    });
  });

  it("keeps the cap of 10 active API keys under 50 concurrent creations", async () => {
    const { token, id } = await userWithPlan("key-race", "enterprise");
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => api.request("POST", "/v1/api-keys", { token, body: { name: `race ${i}` } })),
    );
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 201)).to.have.length(10);
    expect(statuses.filter((status) => status === 409)).to.have.length(40);
    for (const answer of answers.filter((a) => a.status === 409)) expectErrorEnvelope(answer, 409, "CONFLICT");
    expect(await api.db.prisma.apiKey.count({ where: { userId: id, revokedAt: null } })).to.equal(10);
  });

  describe("the OpenAPI document, the validation and the messages agree", () => {
    it("takes an empty PATCH /users/me, and empty settings, as changing nothing", async () => {
      const { token } = await userWithPlan("empty-patch", "free");
      const before = await api.request("GET", "/v1/users/me", { token });
      for (const body of [{}, { settings: {} }]) {
        const response = await api.request("PATCH", "/v1/users/me", { token, body });
        expect(response.status, response.text).to.equal(200);
        expect(response.body.data).to.deep.include({
          id: before.body.data.id,
          displayName: before.body.data.displayName,
          settings: before.body.data.settings,
        });
      }
      const schema = doc.paths["/v1/users/me"].patch.requestBody.content["application/json"].schema;
      expect(schema.required ?? []).to.deep.equal([]);
      expect(schema).to.not.have.property("minProperties");
    });

    it("says in the schema that a name needs a non-space character, and refuses a blank one with that reason", async () => {
      const { token } = await userWithPlan("blank-name", "pro");
      const name = doc.paths["/v1/api-keys"].post.requestBody.content["application/json"].schema.properties.name;
      expect(name.pattern).to.equal("\\S");
      const response = await api.request("POST", "/v1/api-keys", { token, body: { name: " " } });
      expectErrorEnvelope(response, 400, "VALIDATION_ERROR");
      expect(response.body.error.details).to.deep.equal({ field: "name", reason: "must contain a non-space character" });
      const trimmed = await api.request("POST", "/v1/api-keys", { token, body: { name: "  ci  " } });
      expect(trimmed.status).to.equal(201);
      expect(trimmed.body.data.name).to.equal("ci");
      const displayName = doc.paths["/v1/users/me"].patch.requestBody.content["application/json"].schema.properties.displayName;
      expect(displayName.pattern).to.equal("\\S");
    });

    it("takes query integers in decimal digits only, and documents them as integers", async () => {
      const { token } = await userWithPlan("digits", "free");
      for (const bad of ["0x10", "1e2", "+5", "5.0", " 5", "", "99999999999999999999"]) {
        const response = await api.request("GET", `/v1/users/me/activity?limit=${encodeURIComponent(bad)}`, { token });
        expectErrorEnvelope(response, 400, "VALIDATION_ERROR");
        expect(response.body.error.details.field, bad).to.equal("limit");
      }
      const ok = await api.request("GET", "/v1/users/me/activity?limit=16&offset=0", { token });
      expect(ok.status).to.equal(200);
      expect(ok.body.pagination).to.deep.include({ limit: 16, offset: 0 });
      const limit = doc.paths["/v1/users/me/activity"].get.parameters.find((p: Json) => p.name === "limit");
      expect(limit.schema).to.deep.equal({ type: "integer", minimum: 1, maximum: 100, default: 20 });
    });
  });
});

describe(`hardening: nested bodies on every JSON route (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(120_000);
  let chain: TestChain;
  let api: TestApi;
  const { logger, lines } = capturingLogger();

  before(async () => {
    // A deployment, so that the vault, social vault and loan routes are served too.
    chain = await startTestChain();
    api = await startTestApi({ chain, logger });
  });
  after(async () => {
    await api?.close();
    await chain?.close();
  });

  const arrays = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
  const objects = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

  it(`answers a body nested deeper than ${MAX_INPUT_DEPTH} levels with 400 VALIDATION_ERROR on every route that takes one, and logs no error`, async () => {
    const token = await api.token("nested-bodies");
    const me = (await api.request("GET", "/v1/users/me", { token })).body.data;
    await api.request("PUT", `/dev/users/${me.id}/plan`, { body: { plan: "enterprise" } });
    // Real ids where a route's area rules look the resource up (an unknown webhook is 404 WEBHOOK_NOT_FOUND first).
    const hook = await api.request("POST", "/v1/webhooks", {
      token,
      body: { url: "http://127.0.0.1:9/nested", events: ["loan.funded"], secret: "nested-bodies-secret-000" },
    });
    const params: Record<string, string> = {
      webhookId: hook.body.data.id,
      deliveryId: randomUUID(),
      loanId: randomUUID(),
      notifId: randomUUID(),
      keyId: randomUUID(),
      userId: me.id,
      guardianId: "0x0000000000000000000000000000000000000001",
      withdrawalId: `0x${"1".repeat(40)}-1`,
    };
    const doc = (await api.request("GET", "/v1/openapi.json")).body;
    const routes = Object.entries(doc.paths as Record<string, Json>).flatMap(([template, item]) =>
      Object.keys(item)
        .filter((method) => method !== "get")
        .map((method) => ({ method: method.toUpperCase(), path: template.replace(/\{([^}]+)\}/g, (_, name: string) => params[name]!) })),
    );
    expect(routes.length).to.be.at.least(40);
    expect(routes.map((route) => route.path)).to.include.members(["/v1/vault/deposit", "/v1/social-vault/lock", "/v1/loans", "/dev/token"]);
    for (const { method, path } of routes) {
      // 10 KB to 40 KB of nesting, as the probe sent, and one level past the limit.
      for (const body of [arrays(10_000), objects(8_000), arrays(40_000), arrays(MAX_INPUT_DEPTH + 1)]) {
        const response = await api.request(method, path, { token, rawBody: body, headers: JSON_TYPE });
        expectErrorEnvelope(response, 400, "VALIDATION_ERROR");
        expect(response.body.error.details, `${method} ${path}`).to.deep.equal({
          field: "body",
          reason: `must not nest deeper than ${MAX_INPUT_DEPTH} levels`,
        });
      }
    }
    // At the limit the walk goes on: what answers is the route's own schema.
    const atLimit = await api.request("POST", "/v1/vault/yield/calculate", { rawBody: arrays(MAX_INPUT_DEPTH), headers: JSON_TYPE });
    expectErrorEnvelope(atLimit, 400, "VALIDATION_ERROR");
    expect(atLimit.body.error.details.reason).to.not.match(/nest/);
    expect(lines.filter((line) => line.level >= 50).map((line) => line.msg)).to.deep.equal([]);
  });
});
