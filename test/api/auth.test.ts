import { mkdtempSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from "jose";
import { createTokenVerifier } from "../../api/http/auth.js";
import { createClock } from "../../core/clock.js";
import { startTestApi, type TestApi } from "../helpers/api.js";
import { usingPostgres } from "../helpers/database.js";

const b64url = (value: string | Buffer) => Buffer.from(value).toString("base64url");

describe(`authentication (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(60_000);
  let api: TestApi;
  let devKey: JWK;
  let issuer: string;

  before(async () => {
    api = await startTestApi();
    issuer = `${api.url}/dev`;
    await api.token("warm-up"); // creates the key
    devKey = JSON.parse((await api.db.prisma.serviceSecret.findUniqueOrThrow({ where: { name: "dev-identity-signing-key" } })).value);
  });
  after(async () => {
    await api?.close();
  });

  async function signed(
    claims: Record<string, unknown>,
    options: { key?: JWK; iss?: string; aud?: string; exp?: number; nbf?: number } = {},
  ) {
    const now = api.clock.nowSeconds();
    const key = await importJWK(options.key ?? devKey, "ES256");
    return new SignJWT(claims)
      .setProtectedHeader({ alg: "ES256", kid: (options.key ?? devKey).kid })
      .setIssuer(options.iss ?? issuer)
      .setAudience(options.aud ?? "trustmint-api")
      .setSubject("someone")
      .setIssuedAt(now)
      .setNotBefore(options.nbf ?? now)
      .setExpirationTime(options.exp ?? now + 600)
      .sign(key);
  }

  async function expectInvalid(token: string) {
    const response = await api.request("GET", "/v1/users/me", { token });
    expect(response.status, response.text).to.equal(401);
    expect(response.body.success).to.equal(false);
    expect(response.body.error).to.deep.include({ code: "UNAUTHORIZED", message: "Invalid or expired token" });
  }

  it("accepts a development token and provisions the user from its claims", async () => {
    const token = await api.token("alice", { email: "alice@example.com", name: "Alice" });
    const response = await api.request("GET", "/v1/users/me", { token });
    expect(response.status, response.text).to.equal(200);
    expect(response.body.data).to.include({ email: "alice@example.com", displayName: "Alice" });
  });

  it("a token I sign with the development key passes (the baseline for the refusals below)", async () => {
    const response = await api.request("GET", "/v1/users/me", { token: await signed({}) });
    expect(response.status, response.text).to.equal(200);
  });

  it("accepts the scheme name in any case, and answers an empty email when the token has none", async () => {
    const token = await api.token("no-email");
    for (const scheme of ["bearer", "BEARER"]) {
      const response = await api.request("GET", "/v1/users/me", { headers: { authorization: `${scheme} ${token}` } });
      expect(response.status, response.text).to.equal(200);
      expect(response.body.data.email).to.equal("");
    }
  });

  it("refuses a request without credentials: Authorization header required", async () => {
    const response = await api.request("GET", "/v1/users/me");
    expect(response.status).to.equal(401);
    expect(response.body.error).to.deep.include({ code: "UNAUTHORIZED", message: "Authorization header required" });
  });

  it("refuses a non-Bearer scheme and a garbage token", async () => {
    for (const header of ["Basic dXNlcjpwYXNz", "Bearer", "Bearer not.a.jwt", "Bearer a b"]) {
      const response = await api.request("GET", "/v1/users/me", { headers: { authorization: header } });
      expect(response.status, header).to.equal(401);
      expect(response.body.error.message).to.equal("Invalid or expired token");
    }
  });

  it("refuses a forged signature", async () => {
    const token = await api.token("mallory");
    const [header, payload] = token.split(".");
    const forgedPayload = b64url(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, "base64url").toString()), sub: "alice" }));
    await expectInvalid(`${header}.${forgedPayload}.${token.split(".")[2]}`);
  });

  it("refuses a token signed by another key under the trusted kid", async () => {
    const { privateKey } = await generateKeyPair("ES256", { extractable: true });
    const other = { ...(await exportJWK(privateKey)), kid: devKey.kid };
    await expectInvalid(await signed({}, { key: other }));
  });

  it("refuses an expired token, judged on the service clock", async () => {
    const token = await api.token("short-lived", { expiresIn: 60 });
    expect((await api.request("GET", "/v1/users/me", { token })).status).to.equal(200);
    const advanced = await api.request("POST", "/dev/time/advance", { body: { seconds: 120 } });
    expect(advanced.status, advanced.text).to.equal(200);
    await expectInvalid(token);
  });

  it("refuses a token that is not valid yet (nbf beyond the tolerance)", async () => {
    await expectInvalid(await signed({}, { nbf: api.clock.nowSeconds() + 120 }));
  });

  it("tolerates a few seconds of clock skew", async () => {
    const response = await api.request("GET", "/v1/users/me", { token: await signed({}, { nbf: api.clock.nowSeconds() + 2 }) });
    expect(response.status).to.equal(200);
  });

  it("refuses a wrong issuer and a wrong audience", async () => {
    await expectInvalid(await signed({}, { iss: "https://evil.example/" }));
    await expectInvalid(await signed({}, { aud: "another-api" }));
  });

  it("refuses alg: none", async () => {
    const now = api.clock.nowSeconds();
    const header = b64url(JSON.stringify({ alg: "none", typ: "JWT", kid: devKey.kid }));
    const payload = b64url(JSON.stringify({ sub: "alice", iss: issuer, aud: "trustmint-api", iat: now, exp: now + 600 }));
    await expectInvalid(`${header}.${payload}.`);
  });

  it("refuses HS256 signed with the public key as secret", async () => {
    const jwks = (await api.request("GET", "/dev/.well-known/jwks.json")).body;
    const now = api.clock.nowSeconds();
    const secret = new TextEncoder().encode(JSON.stringify(jwks.keys[0]));
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: "HS256", kid: devKey.kid })
      .setIssuer(issuer)
      .setAudience("trustmint-api")
      .setSubject("alice")
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(secret);
    await expectInvalid(token);
  });

  it("refuses tokens in the query string, even valid ones", async () => {
    const token = await api.token("alice");
    for (const name of ["access_token", "token", "api_key"]) {
      const response = await api.request("GET", `/v1/users/me?${name}=${token}`, { token });
      expect(response.status, name).to.equal(401);
      expect(response.body.error.code).to.equal("UNAUTHORIZED");
      expect(response.headers.get("x-ratelimit-limit")).to.equal("60");
      // With only the query-string token (no header), the header is what is missing (service-spec part 5, item 9).
      const alone = await api.request("GET", `/v1/users/me?${name}=${token}`);
      expect(alone.status, name).to.equal(401);
      expect(alone.body.error.message).to.equal("Authorization header required");
    }
  });

  it("serves the JWKS as bare JSON with public keys only", async () => {
    const response = await api.request("GET", "/dev/.well-known/jwks.json");
    expect(response.status).to.equal(200);
    expect(response.body.success).to.equal(undefined);
    expect(response.body.keys).to.have.length(1);
    expect(response.body.keys[0]).to.include({ kty: "EC", alg: "ES256", kid: devKey.kid });
    expect(response.body.keys[0]).to.not.have.property("d");
  });

  it("validates POST /dev/token", async () => {
    const cases: [unknown, string][] = [
      [{}, "sub"],
      [{ sub: "" }, "sub"],
      [{ sub: "x", expiresIn: 0 }, "expiresIn"],
      [{ sub: "x", expiresIn: 1.5 }, "expiresIn"],
      [{ sub: "x", email: 42 }, "email"],
      [{ sub: "x", extra: true }, "extra"],
    ];
    for (const [body, field] of cases) {
      const response = await api.request("POST", "/dev/token", { body });
      expect(response.status, JSON.stringify(body)).to.equal(400);
      expect(response.body.error.code).to.equal("VALIDATION_ERROR");
      expect(response.body.error.details.field).to.equal(field);
      expect(response.body.error.details.reason).to.be.a("string").and.not.empty;
    }
    const ok = await api.request("POST", "/dev/token", { body: { sub: "x" } });
    expect(ok.body.data).to.include({ tokenType: "Bearer", expiresIn: 3600 });
  });

  it("keeps the development key across restarts, shared by every process on the database (whatever its data dir)", async () => {
    const { createDevIdentityProvider } = await import("../../api/dev/identity-provider.js");
    const otherDataDir = mkdtempSync(path.join(os.tmpdir(), "other-api-"));
    const again = await createDevIdentityProvider({
      db: api.db,
      dataDir: otherDataDir,
      issuer,
      audience: "trustmint-api",
      clock: api.clock,
    });
    const response = await api.request("GET", "/v1/users/me", { token: await again.issue({ sub: "restart", expiresIn: 60 }) });
    expect(response.status).to.equal(200);
  });
});

describe("token verifier: key rotation at the provider", () => {
  it("picks up a new signing key without a restart", async () => {
    let keys: JWK[] = [];
    const server = http.createServer((_req, res) => res.setHeader("content-type", "application/json").end(JSON.stringify({ keys })));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
    try {
      const clock = createClock();
      const verify = createTokenVerifier({ jwksUrl, issuer: "https://idp.test/", audience: "api", clock, jwksCooldownMs: 0 });
      const makeKey = async (kid: string) => {
        const { privateKey, publicKey } = await generateKeyPair("EdDSA", { crv: "Ed25519" });
        return { privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: "EdDSA" } };
      };
      const sign = (key: Parameters<SignJWT["sign"]>[0], kid: string) =>
        new SignJWT({})
          .setProtectedHeader({ alg: "EdDSA", kid })
          .setIssuer("https://idp.test/")
          .setAudience("api")
          .setSubject("u1")
          .setExpirationTime(clock.nowSeconds() + 60)
          .sign(key);
      const first = await makeKey("k1");
      keys = [first.publicJwk];
      expect((await verify(await sign(first.privateKey, "k1"))).sub).to.equal("u1");
      const second = await makeKey("k2");
      keys = [second.publicJwk];
      expect((await verify(await sign(second.privateKey, "k2"))).sub).to.equal("u1");
    } finally {
      server.close();
    }
  });
});
