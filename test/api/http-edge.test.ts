import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { ensureChainIdentity } from "../../core/chain-identity.js";
import { createLogger } from "../../core/logger.js";
import { CHAIN_DERIVED_TABLES } from "../../domain/modules.js";
import { type ApiResponse, startTestApi, type TestApi } from "../helpers/api.js";
import { startTestChain, type TestChain } from "../helpers/chain.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";
import { expectErrorEnvelope, randomIp } from "../helpers/envelope.js";
import { testIndexer, waitFor } from "../helpers/mirror.js";

// The edges of the HTTP platform: methods a path does not serve, the sandbox's rate limits, a
// bad token past the anonymous limit, /health without an indexer, one issuer for several APIs.

describe(`HTTP edges (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(120_000);
  let chain: TestChain;
  let db: TestDatabase;
  let api: TestApi;

  before(async () => {
    chain = await startTestChain();
    db = await createTestDatabase();
    await ensureChainIdentity(db, chain.deployment, { embedded: true, logger: createLogger("silent"), chainTables: CHAIN_DERIVED_TABLES });
    // No indexer beside it: the money routes are mounted, /health has no heartbeat to read.
    api = await startTestApi({ chain, db });
  });
  after(async () => {
    await api?.close();
    await db?.destroy();
    await chain?.close();
  });

  /** Starts a fresh minute window on the service clock (the rate limits' windows follow it). */
  const nextMinute = () => api.clock.advance(60 - (api.clock.nowSeconds() % 60));

  function expectRateLimitHeaders(response: ApiResponse) {
    for (const name of ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"]) {
      expect(response.headers.get(name), `${name}: ${response.text}`).to.be.a("string");
    }
  }

  describe("a known path asked with a method it does not serve", () => {
    for (const [method, urlPath, allow] of [
      ["DELETE", "/v1/vault/status", "GET, HEAD"],
      ["GET", "/v1/vault/deposit", "POST"],
      ["PUT", "/v1/users/me", "GET, HEAD, PATCH, DELETE"],
      ["POST", "/v1/users/usr_nobody", "GET, HEAD"],
      ["PUT", "/v1/loans/eligibility", "GET, HEAD"],
      ["GET", "/dev/token", "POST"],
      ["DELETE", "/dev/.well-known/jwks.json", "GET, HEAD"],
      ["POST", "/v1/openapi.json", "GET, HEAD"],
      ["POST", "/health", "GET, HEAD"],
      ["DELETE", "/docs", "GET, HEAD"],
    ] as const) {
      it(`answers ${method} ${urlPath} with 405 METHOD_NOT_ALLOWED, Allow: ${allow}`, async () => {
        const response = await api.request(method, urlPath, { headers: { "x-forwarded-for": randomIp() } });
        expectErrorEnvelope(response, 405, "METHOD_NOT_ALLOWED");
        expect(response.headers.get("allow")).to.equal(allow);
        expect(response.body.error.message).to.equal(`${method} ${urlPath} is not allowed; allowed: ${allow}`);
        expectRateLimitHeaders(response);
      });
    }

    it("serves HEAD where GET is served, and answers unknown paths 404 NOT_FOUND", async () => {
      const headers = { "x-forwarded-for": randomIp() };
      expect((await api.request("HEAD", "/v1/vault/status", { headers })).status).to.equal(200);
      for (const [method, urlPath] of [
        ["GET", "/v1/vault/nothing"],
        ["DELETE", "/v1/nothing"],
        ["POST", "/dev/nothing"],
      ] as const) {
        const response = await api.request(method, urlPath, { headers });
        expectErrorEnvelope(response, 404, "NOT_FOUND");
        expect(response.headers.get("allow")).to.equal(null);
        expectRateLimitHeaders(response);
      }
    });
  });

  describe("rate limits in the sandbox", () => {
    it("counts POST /dev/faucet against its user's plan like their other calls, with the headers", async () => {
      nextMinute();
      const token = await api.token(`faucet-${randomUUID()}`);
      const faucet = (amount: number) =>
        api.request("POST", "/dev/faucet", { token, body: { amount }, headers: { "idempotency-key": randomUUID() } });
      const minted = await faucet(1);
      expect(minted.status, minted.text).to.equal(200);
      expect(minted.headers.get("x-ratelimit-limit")).to.equal("60");
      expect(minted.headers.get("x-ratelimit-remaining")).to.equal("59");
      for (let i = 1; i < 60; i++) expect((await api.request("GET", "/v1/users/me", { token })).status).to.equal(200);
      // Refused before it is read: an amount the faucet would refuse with 400 is refused 429.
      const refused = await faucet(0);
      expectErrorEnvelope(refused, 429, "RATE_LIMITED");
      expect(refused.headers.get("x-ratelimit-remaining")).to.equal("0");
      expect(Number(refused.headers.get("retry-after"))).to.be.within(1, 60);
    });

    it("does not count the anonymous sandbox routes, and says so in the headers", async () => {
      nextMinute();
      const ip = randomIp();
      const headers = { "x-forwarded-for": ip };
      let last = await api.request("GET", "/v1/trust-score/tiers", { headers });
      while (last.status !== 429) last = await api.request("GET", "/v1/trust-score/tiers", { headers });
      const token = await api.request("POST", "/dev/token", { headers, body: { sub: `sandbox-${randomUUID()}` } });
      const userId = (await api.request("GET", "/v1/users/me", { token: token.body.data.accessToken })).body.data.id;
      const answers = [
        token,
        await api.request("GET", "/dev/.well-known/jwks.json", { headers }),
        await api.request("PUT", `/dev/users/${userId}/plan`, { headers, body: { plan: "free" } }),
        // Refused by the route itself (nobody holds tmUSDC, no such loan), not by the limiter.
        await api.request("POST", "/dev/vault/yield", { headers: { ...headers, "idempotency-key": randomUUID() }, body: { amount: 1 } }),
        await api.request("POST", `/dev/loans/${randomUUID()}/fund`, { headers }),
        await api.request("POST", "/dev/time/advance", { headers, body: { seconds: 1 } }),
      ];
      for (const answer of answers) {
        expect(answer.status, answer.text).to.not.equal(429);
        expect(answer.headers.get("x-ratelimit-limit"), answer.text).to.equal("unlimited");
        expect(answer.headers.get("x-ratelimit-remaining")).to.equal("unlimited");
        expect(Number(answer.headers.get("x-ratelimit-reset")) % 60).to.equal(0);
      }
    });
  });

  describe("a bad or expired token past the anonymous limit", () => {
    it("is 401 on a route that needs authentication, and 429 on a public one", async () => {
      const expired = await api.token(`expired-${randomUUID()}`, { expiresIn: 60 });
      api.clock.advance(120);
      nextMinute();
      const headers = { "x-forwarded-for": randomIp() };
      // Counted by address like anonymous calls: 60 refusals use up the address's minute.
      for (let i = 0; i < 60; i++) {
        const response = await api.request("GET", "/v1/users/me", { token: expired, headers });
        expect(response.status).to.equal(401);
        expect(response.headers.get("x-ratelimit-remaining")).to.equal(String(59 - i));
      }
      for (const refused of [
        await api.request("GET", "/v1/users/me", { token: expired, headers }),
        await api.request("POST", "/dev/faucet", { token: expired, headers, body: { amount: 1 } }),
        await api.request("GET", "/v1/users/me", { headers: { ...headers, authorization: "Bearer not-a-token" } }),
      ]) {
        expectErrorEnvelope(refused, 401, "UNAUTHORIZED");
        expect(refused.body.error.message).to.equal("Invalid or expired token");
        expect(refused.headers.get("x-ratelimit-remaining")).to.equal("0");
        expect(refused.headers.get("retry-after")).to.equal(null);
      }
      // A public route ignores credentials: a bad token does not lift the anonymous limit.
      for (const refused of [
        await api.request("GET", "/v1/trust-score/tiers", { token: expired, headers }),
        await api.request("GET", "/v1/vault/status", { headers: { ...headers, authorization: "Bearer not-a-token" } }),
        await api.request("GET", "/v1/openapi.json", { token: expired, headers }),
        await api.request("GET", "/docs", { token: expired, headers }),
        await api.request("GET", "/v1/trust-score/tiers", { headers }),
      ]) {
        expectErrorEnvelope(refused, 429, "RATE_LIMITED");
        expect(Number(refused.headers.get("retry-after"))).to.be.within(1, 60);
      }
      // A good token from the same address is counted as its user.
      const fresh = await api.token(`fresh-${randomUUID()}`);
      expect((await api.request("GET", "/v1/users/me", { token: fresh, headers })).status).to.equal(200);
    });
  });

  describe("/health", () => {
    it("fails naming the indexer while no indexer has written a heartbeat, and passes once one has", async () => {
      const absent = await api.request("GET", "/health");
      expect(absent.status, absent.text).to.equal(503);
      expect(absent.body).to.deep.include({ status: "degraded", failing: ["indexer"], indexedBlock: 0 });
      expect(absent.body.indexer).to.deep.include({ state: "absent", lastHeartbeat: null, reorgLoop: null });

      const indexer = testIndexer(db, chain);
      indexer.start();
      try {
        const healthy = await waitFor(async () => {
          const response = await api.request("GET", "/health");
          return response.status === 200 ? response : undefined;
        });
        expect(healthy.body.status).to.equal("ok");
        expect(healthy.body.indexer.state).to.equal("indexing");
        expect(healthy.body.indexer.lastHeartbeat).to.be.a("string");
      } finally {
        await indexer.stop();
      }
    });
  });

  describe("PUBLIC_BASE_URL", () => {
    /** Two API processes on one database and one DATA_DIR (the signing key), with `env` added. */
    async function twoApis(env: Record<string, string>): Promise<[TestApi, TestApi, () => Promise<void>]> {
      const dataDir = mkdtempSync(path.join(os.tmpdir(), "shared-data-"));
      // The chain without its deployment: these APIs send no transactions.
      const options = { db, chain: { rpcUrl: chain.rpcUrl }, env: { DATA_DIR: dataDir, ...env } };
      const first = await startTestApi(options);
      const second = await startTestApi(options);
      return [
        first,
        second,
        async () => {
          await Promise.all([first.close(), second.close()]);
          rmSync(dataDir, { recursive: true, force: true });
        },
      ];
    }

    it("makes a token one API process issued good at another behind the same address", async () => {
      const [first, second, close] = await twoApis({ PUBLIC_BASE_URL: "https://api.example.test" });
      try {
        const token = await first.token(`balanced-${randomUUID()}`);
        const me = await second.request("GET", "/v1/users/me", { token });
        expect(me.status, me.text).to.equal(200);
        const claims = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString());
        expect(claims.iss).to.equal("https://api.example.test/dev");
      } finally {
        await close();
      }
    });

    it("without it, each process issues under its own address, which the other refuses", async () => {
      const [first, second, close] = await twoApis({});
      try {
        const token = await first.token(`unbalanced-${randomUUID()}`);
        expect((await first.request("GET", "/v1/users/me", { token })).status).to.equal(200);
        expectErrorEnvelope(await second.request("GET", "/v1/users/me", { token }), 401, "UNAUTHORIZED");
      } finally {
        await close();
      }
    });
  });
});
