import { createConfig, lintFromString } from "@redocly/openapi-core";
import { expect } from "chai";
import fc from "fast-check";
import { Redis } from "ioredis";
import { type ApiResponse, type Json, PRODUCTION_ENV, startTestApi, type TestApi } from "../helpers/api.js";
import { usingPostgres } from "../helpers/database.js";
import { expectErrorEnvelope, randomIp, STACK } from "../helpers/envelope.js";

describe(`HTTP platform (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(60_000);

  describe("envelope, errors and documentation", () => {
    let api: TestApi;
    let token: string;
    before(async () => {
      api = await startTestApi();
      token = await api.token("platform-user");
    });
    after(async () => {
      await api?.close();
    });

    it("answers unknown routes with NOT_FOUND, and a method a known path does not serve with METHOD_NOT_ALLOWED", async () => {
      expectErrorEnvelope(await api.request("GET", "/v1/nothing"), 404, "NOT_FOUND");
      const refused = await api.request("PUT", "/v1/users/me", { token, body: {} });
      expectErrorEnvelope(refused, 405, "METHOD_NOT_ALLOWED");
      expect(refused.headers.get("allow")).to.equal("GET, HEAD, PATCH, DELETE");
    });

    it("keeps a well-formed X-Request-Id and replaces a malformed one", async () => {
      const kept = await api.request("GET", "/v1/nothing", { headers: { "x-request-id": "client-req-12345" } });
      expect(kept.headers.get("x-request-id")).to.equal("client-req-12345");
      expect(kept.body.meta.requestId).to.equal("client-req-12345");
      const replaced = await api.request("GET", "/v1/nothing", { headers: { "x-request-id": "bad id <script>" } });
      expect(replaced.headers.get("x-request-id")).to.match(/^[0-9a-f-]{36}$/);
    });

    it("answers malformed JSON with VALIDATION_ERROR (400) naming the body", async () => {
      const response = await api.request("PATCH", "/v1/users/me", {
        token,
        rawBody: '{"displayName": ',
        headers: { "content-type": "application/json" },
      });
      expectErrorEnvelope(response, 400, "VALIDATION_ERROR");
      expect(response.body.error.details).to.deep.equal({ field: "body", reason: "invalid JSON" });
    });

    it("answers a body that is not JSON with 415", async () => {
      const response = await api.request("POST", "/dev/token", {
        rawBody: "sub=x",
        headers: { "content-type": "application/x-www-form-urlencoded" },
      });
      expectErrorEnvelope(response, 415, "UNSUPPORTED_MEDIA_TYPE");
    });

    it("answers an oversized body with 413", async () => {
      const response = await api.request("POST", "/dev/token", { body: { sub: "x", name: "y".repeat(200_000) } });
      expectErrorEnvelope(response, 413, "PAYLOAD_TOO_LARGE");
    });

    it("serves the OpenAPI 3 document of every route, with security schemes and error envelopes", async () => {
      const response = await api.request("GET", "/v1/openapi.json");
      expect(response.status).to.equal(200);
      const doc = response.body;
      expect(doc.openapi).to.match(/^3\.0\./);
      expect(doc.components.securitySchemes).to.have.keys("bearerAuth", "apiKeyAuth");
      const operations = Object.entries(doc.paths as Record<string, Json>).flatMap(([path, item]) =>
        Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
      );
      for (const expected of [
        "GET /v1/users/me",
        "PATCH /v1/users/me",
        "DELETE /v1/users/me",
        "GET /v1/users/{userId}",
        "GET /v1/users/{userId}/xp",
        "GET /v1/users/me/activity",
        "GET /v1/users/me/guardians",
        "GET /v1/users/me/export",
        "POST /v1/api-keys",
        "GET /v1/api-keys",
        "DELETE /v1/api-keys/{keyId}",
        "POST /dev/token",
        "POST /dev/time/advance",
        "PUT /dev/users/{userId}/plan",
      ]) {
        expect(operations).to.include(expected);
      }
      const me = doc.paths["/v1/users/me"].get;
      expect(me.security).to.deep.equal([{ bearerAuth: [] }, { apiKeyAuth: [] }]);
      expect(me.responses["401"].content["application/json"].schema.$ref).to.equal("#/components/schemas/ErrorEnvelope");
      expect(me.responses["200"].headers).to.have.property("X-RateLimit-Reset");
      const patch = doc.paths["/v1/users/me"].patch;
      expect(patch.requestBody.content["application/json"].schema.properties).to.have.keys("displayName", "settings");
      expect(patch.responses["400"].description).to.include("VALIDATION_ERROR");
      const activity = doc.paths["/v1/users/me/activity"].get;
      expect(activity.parameters.map((p: Json) => `${p.in}:${p.name}`)).to.deep.equal([
        "query:limit",
        "query:offset",
        "query:starting_after",
        "query:ending_before",
        "query:type",
      ]);
      expect(doc.paths["/v1/users/{userId}"].get.security).to.deep.equal([]);
      expect(doc.paths["/v1/users/{userId}"].get.parameters[0]).to.include({ name: "userId", in: "path", required: true });
    });

    it("serves a valid OpenAPI 3.0 document (Redocly's rules): every $ref resolves, every tag is declared, part 2's shapes by name", async () => {
      const source = (await api.request("GET", "/v1/openapi.json")).text;
      // A route whose tag no domain's manifest declares is an operation-tag-defined error.
      const config = await createConfig({ extends: ["minimal"], rules: { "operation-tag-defined": "error" } });
      const problems = await lintFromString({ source, absoluteRef: "openapi.json", config });
      const errors = problems.filter((problem) => problem.severity === "error");
      expect(errors.map((problem) => `${problem.ruleId}: ${problem.message} at ${problem.location[0]?.pointer}`)).to.deep.equal([]);
      const doc = JSON.parse(source);
      expect(doc.paths["/v1/users/me"].get.responses["200"].content["application/json"].schema.properties.data).to.deep.equal({
        $ref: "#/components/schemas/User",
      });
      expect(doc.components.schemas).to.include.keys("User", "PublicUser", "ActivityEntry", "TrustScore", "Notification", "Webhook");
    });

    it("serves /docs from local assets", async () => {
      const page = await api.request("GET", "/docs");
      expect(page.status).to.equal(200);
      expect(page.text).to.include("/docs/assets/swagger-ui-bundle.js");
      expect(page.text).to.not.match(/https?:\/\//);
      const bundle = await fetch(`${api.url}/docs/assets/swagger-ui-bundle.js`);
      expect(bundle.status).to.equal(200);
      expect((await bundle.text()).length).to.be.above(100_000);
      expect((await api.request("GET", "/docs/init.js")).text).to.include("/v1/openapi.json");
    });
  });

  describe("NODE_ENV=production", () => {
    let api: TestApi;
    before(async () => {
      api = await startTestApi({
        env: PRODUCTION_ENV,
      });
    });
    after(async () => {
      await api?.close();
    });

    it("answers every /dev route with 404", async () => {
      for (const [method, path] of [
        ["POST", "/dev/token"],
        ["GET", "/dev/.well-known/jwks.json"],
        ["POST", "/dev/time/advance"],
        ["PUT", "/dev/users/usr_x/plan"],
      ]) {
        expectErrorEnvelope(await api.request(method!, path!, { body: method === "GET" ? undefined : {} }), 404, "NOT_FOUND");
      }
      const doc = (await api.request("GET", "/v1/openapi.json")).body;
      expect(Object.keys(doc.paths).filter((path) => path.startsWith("/dev"))).to.deep.equal([]);
    });

    it("refuses tokens when the provider's key set is unreachable (401, no stack)", async () => {
      const response = await api.request("GET", "/v1/users/me", { headers: { authorization: "Bearer a.b.c" } });
      expectErrorEnvelope(response, 401, "UNAUTHORIZED");
    });
  });

  for (const store of process.env.REDIS_URL ? ["memory", "redis"] : ["memory"]) {
    describe(`rate limits (${store})`, () => {
      let api: TestApi;
      let redis: Redis | undefined;
      before(async () => {
        redis = store === "redis" ? new Redis(process.env.REDIS_URL!, { enableOfflineQueue: true }) : undefined;
        api = await startTestApi({ redis });
      });
      after(async () => {
        await api?.close();
        await redis?.quit();
      });

      it("counts anonymous calls per client IP: 60 a minute, then 429 RATE_LIMITED until the window ends", async () => {
        const ip = randomIp();
        const get = () => api.request("GET", "/v1/users/usr_nobody", { headers: { "x-forwarded-for": ip } });
        const first = await get();
        expect(first.headers.get("x-ratelimit-limit")).to.equal("60");
        expect(first.headers.get("x-ratelimit-remaining")).to.equal("59");
        const reset = Number(first.headers.get("x-ratelimit-reset"));
        expect(reset % 60).to.equal(0);
        expect(reset).to.be.within(api.clock.nowSeconds() + 1, api.clock.nowSeconds() + 60);
        for (let i = 1; i < 60; i++) expect((await get()).status).to.equal(404);
        const refused = await get();
        expectErrorEnvelope(refused, 429, "RATE_LIMITED");
        expect(refused.headers.get("x-ratelimit-remaining")).to.equal("0");
        expect(Number(refused.headers.get("retry-after"))).to.be.within(1, 60);
        // Another client is not affected.
        expect((await api.request("GET", "/v1/users/usr_nobody", { headers: { "x-forwarded-for": randomIp() } })).status).to.equal(404);
        // The window follows the service clock.
        api.clock.advance(60);
        expect((await get()).status).to.equal(404);
      });

      // Memory store only: in Redis, 127.0.0.1's window is shared with every other suite's API.
      if (store === "memory") {
        it("does not limit the anonymous sandbox: the API's own key-set fetch and new tokens pass after the IP's limit", async () => {
          // No X-Forwarded-For: these come from 127.0.0.1, as the API's fetch of its own JWKS does.
          let last = await api.request("GET", "/v1/users/usr_nobody");
          while (last.status !== 429) last = await api.request("GET", "/v1/users/usr_nobody");
          const jwks = await api.request("GET", "/dev/.well-known/jwks.json");
          expect(jwks.status).to.equal(200);
          expect(jwks.headers.get("x-ratelimit-limit")).to.equal("unlimited");
          const token = await api.token(`sandbox-${store}`); // POST /dev/token from the same IP
          const me = await api.request("GET", "/v1/users/me", { token });
          expect(me.status, me.text).to.equal(200);
          api.clock.advance(60);
        });
      }

      it("counts a user per user, by plan, and reports unlimited for Enterprise", async () => {
        const token = await api.token(`limits-${store}`);
        const me = await api.request("GET", "/v1/users/me", { token, headers: { "x-forwarded-for": randomIp() } });
        expect(me.headers.get("x-ratelimit-limit")).to.equal("60");
        await api.request("PUT", `/dev/users/${me.body.data.id}/plan`, { body: { plan: "pro" } });
        const pro = await api.request("GET", "/v1/users/me", { token });
        expect(pro.headers.get("x-ratelimit-limit")).to.equal("300");
        expect(pro.headers.get("x-ratelimit-remaining")).to.equal("299");
        await api.request("PUT", `/dev/users/${me.body.data.id}/plan`, { body: { plan: "enterprise" } });
        const enterprise = await api.request("GET", "/v1/users/me", { token });
        expect(enterprise.headers.get("x-ratelimit-limit")).to.equal("unlimited");
        expect(enterprise.headers.get("x-ratelimit-remaining")).to.equal("unlimited");
        expect(Number(enterprise.headers.get("x-ratelimit-reset"))).to.be.above(api.clock.nowSeconds());
      });

      it("reports the day window once it is the closer one, and refuses after 1,000 a day", async function () {
        this.timeout(60_000);
        const ip = randomIp();
        const get = () => api.request("GET", "/v1/users/usr_nobody", { headers: { "x-forwarded-for": ip } });
        let last: ApiResponse | undefined;
        for (let i = 0; i < 1000; i++) {
          if (i % 60 === 0) api.clock.advance(60 - (api.clock.nowSeconds() % 60)); // next minute window, same day mostly
          last = await get();
          if (last.status === 429) break;
        }
        // Whether or not a day boundary was crossed, the last answers show the day window closing in.
        const refusedOrLow = Number(last!.headers.get("x-ratelimit-remaining"));
        expect(refusedOrLow).to.be.below(60);
      });
    });
  }

  describe("property: random input never gets a 5xx or a non-envelope answer", () => {
    let api: TestApi;
    let token: string;
    let routes: { method: string; path: string }[];
    before(async () => {
      api = await startTestApi();
      token = await api.token("fuzzer", { expiresIn: 86_400 });
      const me = await api.request("GET", "/v1/users/me", { token });
      await api.request("PUT", `/dev/users/${me.body.data.id}/plan`, { body: { plan: "enterprise" } });
      const doc = (await api.request("GET", "/v1/openapi.json")).body;
      // A stream (Server-Sent Events) answers 200 and never ends: its bad input is tested in
      // test/api/notification-delivery.test.ts; every other route is fuzzed here.
      const streams = (operation: Json) => Object.keys(operation.responses?.["200"]?.content ?? {}).includes("text/event-stream");
      routes = Object.entries(doc.paths as Record<string, Json>).flatMap(([path, item]) =>
        Object.entries(item as Record<string, Json>)
          .filter(([, operation]) => !streams(operation))
          .map(([method]) => ({ method: method.toUpperCase(), path })),
      );
    });
    after(async () => {
      await api?.close();
    });

    it("holds for every route", async () => {
      // Hostile strings (issue "Hardening"): U+0000, lone surrogates, bad percent-encodings, 10 KB values.
      const hostile = fc.constantFrom(
        "\u0000",
        "a\u0000b",
        "\ud800",
        "x\udc00y",
        "\uffff",
        "a".repeat(10_000),
        "\u202e\u0301",
        "' OR 1=1 --",
      );
      const rawSegment = fc.constantFrom("%FF", "%", "%E0%A4%A", "%C0%AF", "%00", "%ED%A0%80", "..%2F..", "a".repeat(10_000));
      const segment = fc.oneof(
        fc.string({ maxLength: 80 }).map(encodeURIComponent),
        hostile.map((value) => encodeURIComponent(value.toWellFormed())),
        fc.constantFrom("me", "usr_nobody", "%00", "..", "%2F", "a".repeat(300)),
        rawSegment,
      );
      const text = fc.oneof(fc.string({ maxLength: 40 }), hostile);
      // JSON.stringify writes a lone surrogate as a \ud800 escape: the server parses it back to one.
      const body = fc.oneof(
        fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)),
        fc
          .record({ sub: text, seconds: fc.integer(), plan: text, name: text, confirmation: text, displayName: text, amount: fc.double() })
          .map((v) => JSON.stringify(v)),
        fc.record({ settings: fc.record({ language: text, notifications: fc.boolean() }) }).map((v) => JSON.stringify(v)),
        fc.dictionary(text, text, { maxKeys: 3 }).map((v) => JSON.stringify(v)),
        fc.string({ maxLength: 200 }),
      );
      const queryValue = fc.oneof(
        fc.string({ maxLength: 20 }).map(encodeURIComponent),
        hostile.map((value) => encodeURIComponent(value.toWellFormed())),
        rawSegment,
        fc.constantFrom("0x10", "1e2", "-1", "99999999999999999999", "5.0"),
      );
      const query = fc.dictionary(fc.constantFrom("limit", "offset", "type", "x", "period", "%00", "%FF"), queryValue, { maxKeys: 3 });
      // Header values are bytes (fetch refuses control characters and non-Latin-1): long and odd ones.
      const headerValue = fc.oneof(
        fc.string({ maxLength: 40 }).map((v) => v.replace(/[^\x20-\x7e]/g, "")),
        fc.constantFrom("x".repeat(10_000), "%00", "\u00ff\u00fe"),
      );
      const headers = fc.record(
        {
          authorization: fc.oneof(
            headerValue,
            headerValue.map((v) => `Bearer ${v}`),
          ),
          "x-api-key": headerValue,
          "x-request-id": headerValue,
          "x-forwarded-for": fc.oneof(headerValue, fc.constant("not-an-ip")),
          "accept-language": headerValue,
        },
        { requiredKeys: [] },
      );
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 0, max: 1000 }),
          segment,
          query,
          body,
          fc.boolean(),
          headers,
          async (pick, value, q, raw, withToken, extraHeaders) => {
            const route = routes[pick % routes.length]!;
            if (route.path === "/dev/time/advance") return; // moving the clock is covered elsewhere
            const path = route.path.replace(/\{[^}]+\}/g, value);
            const search = Object.entries(q)
              .map(([key, v]) => `${key}=${v}`)
              .join("&");
            const response = await api.request(route.method, `${path}${search ? `?${search}` : ""}`, {
              token: withToken && !("authorization" in extraHeaders) ? token : undefined,
              rawBody: route.method === "GET" ? undefined : raw,
              headers: { "x-forwarded-for": randomIp(), ...extraHeaders, "content-type": "application/json" },
            });
            expect(response.status, `${route.method} ${path} -> ${response.text}`).to.be.below(500);
            expect(response.text).to.not.match(STACK);
            const bare = route.path.endsWith("jwks.json") || route.path.endsWith("openapi.json");
            if (!bare || response.status >= 400) {
              expect(response.body?.success, `${route.method} ${path} -> ${response.text}`).to.be.a("boolean");
              expect(response.body.meta.requestId).to.be.a("string");
            }
          },
        ),
        { numRuns: 300 },
      );
    });
  });
});
