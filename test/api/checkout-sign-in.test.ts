// The hosted checkout's production sign-in (#31, D-81): OpenID Connect, authorization code with
// PKCE, against a real OIDC provider running in this process (oauth2-mock-server: discovery,
// JWKS, authorize and token endpoints, PKCE checked, signed tokens). The API runs in production
// mode with that provider as its identity provider: the page's sign-in link goes to the provider,
// its callback exchanges the code, and the access token it hands the page pays the payment.
import { randomUUID } from "node:crypto";
import { expect } from "chai";
import { OAuth2Server } from "oauth2-mock-server";
import { ensureChainIdentity } from "../../core/chain-identity.js";
import { createLogger } from "../../core/logger.js";
import { CHAIN_DERIVED_TABLES } from "../../domain/modules.js";
import type { Indexer } from "../../indexer/indexer.js";
import { PRODUCTION_ENV, startTestApi, type TestApi } from "../helpers/api.js";
import { startTestChain, type TestChain, usdc } from "../helpers/chain.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";
import { expectErrorEnvelope } from "../helpers/envelope.js";
import { testIndexer } from "../helpers/mirror.js";

describe(`checkout sign-in with an OpenID Connect provider, in production (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(120_000);
  let provider: OAuth2Server;
  let chain: TestChain;
  let db: TestDatabase;
  let indexer: Indexer;
  let api: TestApi;
  /** The subject the provider's next tokens name. */
  let subject = "payer";

  before(async () => {
    provider = new OAuth2Server();
    await provider.issuer.keys.generate("RS256");
    await provider.start(0, "127.0.0.1");
    // Access tokens for the API's audience (an id token keeps its own: the client id), for the current subject.
    provider.service.on("beforeTokenSigning", (token: { payload: Record<string, unknown> }) => {
      token.payload.sub = subject;
      token.payload.aud ??= "trustmint-api";
    });
    chain = await startTestChain();
    db = await createTestDatabase();
    await ensureChainIdentity(db, chain.deployment, { embedded: true, logger: createLogger("silent"), chainTables: CHAIN_DERIVED_TABLES });
    indexer = testIndexer(db, chain);
    indexer.start();
    const issuer = provider.issuer.url!;
    api = await startTestApi({
      chain,
      db,
      env: {
        ...PRODUCTION_ENV,
        AUTH_JWKS_URL: `${issuer}/jwks`,
        AUTH_ISSUER: issuer,
        AUTH_AUDIENCE: "trustmint-api",
        OIDC_CLIENT_ID: "trustmint-checkout",
      },
    });
  });
  after(async () => {
    await api?.close();
    await indexer?.stop();
    await db?.destroy();
    await chain?.close();
    await provider?.stop();
  });

  /** A token of the provider's for `sub`, as an app that signed in elsewhere holds. */
  const tokenFor = (sub: string) =>
    provider.issuer.buildToken({
      scopesOrTransform: (_header, payload) => {
        payload.sub = sub;
        payload.aud = "trustmint-api";
      },
    });
  const get = (url: string) => fetch(url, { redirect: "manual" });

  it("signs the payer in with the authorization code and PKCE, and the token it hands the page pays", async () => {
    // A merchant whose token comes from the same provider.
    subject = `merchant-${randomUUID()}`;
    const merchantToken = await tokenFor(subject);
    const created = await api.request("POST", "/v1/payments", {
      token: merchantToken,
      body: { amount: 10, description: "A book", redirectUrl: "https://shop.example/done" },
    });
    expect(created.status, created.text).to.equal(201);
    const payment = created.body.data;

    // The page in production: no sandbox form, a sign-in link.
    const page = await (await fetch(payment.checkoutUrl)).text();
    expect(page).to.not.include("sandbox-signin");
    expect(page).to.include(`href="/checkout/${payment.id}/signin?lang=en"`);
    expectErrorEnvelope(await api.request("POST", "/dev/token", { body: { sub: "x" } }), 404, "NOT_FOUND");

    // 1. The sign-in link sends the payer to the provider with a PKCE challenge, a state and a nonce.
    subject = `payer-${randomUUID()}`;
    const start = await get(`${api.url}/checkout/${payment.id}/signin`);
    expect(start.status).to.equal(302);
    const authorize = new URL(start.headers.get("location")!);
    expect(authorize.origin).to.equal(provider.issuer.url);
    expect(authorize.searchParams.get("code_challenge_method")).to.equal("S256");
    expect(authorize.searchParams.get("code_challenge")).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect(authorize.searchParams.get("redirect_uri")).to.equal(`${api.url}/checkout/callback`);
    expect(authorize.searchParams.get("client_id")).to.equal("trustmint-checkout");
    const state = authorize.searchParams.get("state")!;
    expect(state).to.have.length.above(20);
    // The verifier never leaves the service.
    expect(start.headers.get("location")).to.not.include("code_verifier");

    // 2. The provider sends the payer back with a code.
    const back = await get(authorize.href);
    expect(back.status).to.equal(302);
    const callback = new URL(back.headers.get("location")!);
    expect(callback.searchParams.get("state")).to.equal(state);

    // 3. The callback exchanges the code (with the verifier) and hands the page the access token in the fragment.
    const landed = await get(callback.href);
    expect(landed.status).to.equal(303);
    const location = landed.headers.get("location")!;
    expect(location.startsWith(`/checkout/${payment.id}#`)).to.equal(true);
    const token = new URLSearchParams(location.split("#")[1]).get("access_token")!;
    expect(token.split(".")).to.have.length(3);
    // A callback is taken once.
    expect((await get(callback.href)).status).to.equal(400);

    // 4. The token is the payer's: the first request creates their account; funded, they pay.
    const me = await api.request("GET", "/v1/users/me", { token });
    expect(me.status, me.text).to.equal(200);
    await (await chain.contracts.usdc.mint(me.body.data.walletAddress, usdc(10))).wait();
    const paid = await api.request("POST", `/checkout/${payment.id}/pay`, { token, body: { method: "direct" } });
    expect(paid.status, paid.text).to.equal(200);
    expect(paid.body.data).to.deep.include({ status: "success", net: 9.9 });
    expect(paid.body.data.redirectUrl).to.equal(`https://shop.example/done?paymentId=${payment.id}`);
  });

  it("refuses a forged state, a provider's error, and a payer address other than the payer's wallet", async () => {
    const forged = await get(`${api.url}/checkout/callback?code=abc&state=${"x".repeat(43)}`);
    expect(forged.status).to.equal(400);
    expect(await forged.text()).to.include("did not complete");
    expect((await get(`${api.url}/checkout/callback?error=access_denied&state=abc`)).status).to.equal(400);
    expect((await get(`${api.url}/checkout/${randomUUID()}/signin`)).status).to.equal(404);

    subject = `merchant-${randomUUID()}`;
    const payment = (await api.request("POST", "/v1/payments", { token: await tokenFor(subject), body: { amount: 1 } })).body.data;
    const payer = await tokenFor(`payer-${randomUUID()}`);
    const other = await api.request("POST", `/checkout/${payment.id}/pay`, {
      token: payer,
      body: { method: "direct", payerAddress: "0x1111111111111111111111111111111111111111" },
    });
    expectErrorEnvelope(other, 400, "VALIDATION_ERROR");
    expect(other.body.error.details.field).to.equal("payerAddress");
  });

  it("treats the sandbox's test addresses as ordinary addresses in production: no decline, no payment.failed (D-88)", async () => {
    subject = `merchant-${randomUUID()}`;
    const merchantToken = await tokenFor(subject);
    const payment = (await api.request("POST", "/v1/payments", { token: merchantToken, body: { amount: 1 } })).body.data;
    const payer = await tokenFor(`payer-${randomUUID()}`);
    for (const payerAddress of ["0x000000000000000000000000000000000000dEc1", "0x00000000000000000000000000000000000f0001"]) {
      const attempt = await api.request("POST", `/checkout/${payment.id}/pay`, { token: payer, body: { method: "direct", payerAddress } });
      // Not the payer's wallet: refused as any other address, and the merchant hears nothing.
      expectErrorEnvelope(attempt, 400, "VALIDATION_ERROR");
      expect(attempt.body.error.details).to.deep.equal({ field: "payerAddress", reason: "not your wallet" });
    }
    expect(
      await db.prisma.domainEvent.count({ where: { type: "payment.failed", data: { path: ["paymentId"], equals: payment.id } } }),
    ).to.equal(0);
    const detail = (await api.request("GET", `/v1/payments/${payment.id}`, { token: merchantToken })).body.data;
    expect(detail).to.deep.include({ status: "pending", lastFailure: null });
  });

  it("refuses a merchant paying its own payment (D-88)", async () => {
    subject = `merchant-${randomUUID()}`;
    const merchantToken = await tokenFor(subject);
    const payment = (await api.request("POST", "/v1/payments", { token: merchantToken, body: { amount: 1 } })).body.data;
    const own = await api.request("POST", `/checkout/${payment.id}/pay`, { token: merchantToken, body: { method: "direct" } });
    expectErrorEnvelope(own, 403, "SELF_PAYMENT");
  });
});
