// Sign-In with Ethereum (D-118): a wallet the user holds signs in and gets the service's own
// access token; every refusal has its code; a contract wallet signs by EIP-1271; the service can
// sign nothing for such an account.
import { randomUUID } from "node:crypto";
import { expect } from "chai";
import { ContractFactory, Wallet } from "ethers";
import { createLocalJWKSet, generateKeyPair, jwtVerify, SignJWT } from "jose";
import { createSiweMessage } from "viem/siwe";
import { loadArtifact } from "../../core/deployments.js";
import { startTestApi, type TestApi } from "../helpers/api.js";
import { expectErrorEnvelope } from "../helpers/envelope.js";
import { type MoneyStack, startMoneyStack } from "../helpers/money-stack.js";

describe("Sign-In with Ethereum", () => {
  let stack: MoneyStack;
  let api: TestApi;
  let chainId: number;
  before(async () => {
    stack = await startMoneyStack();
    api = stack.api;
    chainId = stack.chain.deployment.chainId;
  });
  after(async () => {
    await stack?.close();
  });

  const nonce = async (on = api) => {
    const answer = await on.request("POST", "/v1/auth/siwe/nonce");
    expect(answer.status).to.equal(201);
    return answer.body.data.nonce as string;
  };
  /** An EIP-4361 message of an app at http://127.0.0.1:5173, as viem writes it; `fields` change it. */
  const message = (address: string, nonceValue: string, fields: Partial<Parameters<typeof createSiweMessage>[0]> = {}) =>
    createSiweMessage({
      address: address as `0x${string}`,
      chainId,
      domain: "127.0.0.1:5173",
      uri: "http://127.0.0.1:5173/",
      nonce: nonceValue,
      version: "1",
      statement: "Sign in to the savings app",
      issuedAt: api.clock.now(),
      ...fields,
    });
  const verify = (body: { message: string; signature: string }, on = api) => on.request("POST", "/v1/auth/siwe/verify", { body });
  const signIn = async (wallet: Pick<Wallet, "address" | "signMessage">, fields: Partial<Parameters<typeof createSiweMessage>[0]> = {}) => {
    const text = message(wallet.address, await nonce(), fields);
    return verify({ message: text, signature: await wallet.signMessage(text) });
  };

  it("signs a wallet with no ETH in: the service's own token, an account whose wallet is the signer's (custody self), the same account again", async () => {
    const wallet = Wallet.createRandom();
    const first = await signIn(wallet);
    expect(first.status).to.equal(200);
    const { accessToken, tokenType, expiresIn, user } = first.body.data;
    expect({ tokenType, expiresIn }).to.deep.equal({ tokenType: "Bearer", expiresIn: 3600 });
    expect(user).to.include({ walletAddress: wallet.address, custody: "self" });

    const me = await api.request("GET", "/v1/users/me", { token: accessToken });
    expect(me.status).to.equal(200);
    expect(me.body.data).to.include({ id: user.id, walletAddress: wallet.address, custody: "self" });
    const again = await signIn(wallet);
    expect(again.body.data.user.id).to.equal(user.id);

    // An outside verifier checks the token with the published keys alone.
    const jwks = await api.request("GET", "/v1/auth/jwks.json");
    const { payload } = await jwtVerify(accessToken, createLocalJWKSet(jwks.body), { issuer: `${api.url}/v1/auth` });
    expect(payload.sub).to.equal(`siwe:${wallet.address.toLowerCase()}`);
  });

  it("writes the message for a client that gives its wallet, domain and URI: signed as it is, it signs in; half of them is a 400", async () => {
    const wallet = Wallet.createRandom();
    const app = {
      address: wallet.address.toLowerCase(),
      domain: "127.0.0.1:5173",
      uri: "http://127.0.0.1:5173/",
      statement: "Welcome back",
    };
    const written = await api.request("POST", "/v1/auth/siwe/nonce", { body: app });
    expect(written.status).to.equal(201);
    const { nonce: value, chainId: chain, message: text } = written.body.data;
    expect(chain).to.equal(chainId);
    expect(text).to.include(`127.0.0.1:5173 wants you to sign in with your Ethereum account:\n${wallet.address}\n\nWelcome back\n`);
    expect(text).to.include(`Nonce: ${value}`).and.include(`Chain ID: ${chainId}`).and.include("Expiration Time: ");
    const answer = await verify({ message: text, signature: await wallet.signMessage(text) });
    expect(answer.body.data.user).to.include({ walletAddress: wallet.address });
    const half = await api.request("POST", "/v1/auth/siwe/nonce", { body: { address: wallet.address } });
    expectErrorEnvelope(half, 400, "VALIDATION_ERROR");
  });

  it("takes a nonce once: a replayed message, an unknown nonce and one past its 10 minutes are NONCE_INVALID", async () => {
    const wallet = Wallet.createRandom();
    const text = message(wallet.address, await nonce());
    const signed = { message: text, signature: await wallet.signMessage(text) };
    expect((await verify(signed)).status).to.equal(200);
    expectErrorEnvelope(await verify(signed), 401, "NONCE_INVALID");

    const unknown = message(wallet.address, "a1b2c3d4e5f6a7b8");
    expectErrorEnvelope(await verify({ message: unknown, signature: await wallet.signMessage(unknown) }), 401, "NONCE_INVALID");

    const old = message(wallet.address, await nonce());
    await api.request("POST", "/dev/time/advance", { body: { seconds: 11 * 60 } });
    const late = await verify({ message: old, signature: await wallet.signMessage(old) });
    expectErrorEnvelope(late, 401, "NONCE_INVALID");
  });

  it("lets one of two concurrent sign-ins with one message through", async () => {
    const wallet = Wallet.createRandom();
    const text = message(wallet.address, await nonce());
    const signed = { message: text, signature: await wallet.signMessage(text) };
    const answers = await Promise.all([verify(signed), verify(signed), verify(signed)]);
    expect(answers.map((answer) => answer.status).sort()).to.deep.equal([200, 401, 401]);
  });

  it("refuses a message of another chain, of a domain that is not its URI's, out of its time, or not EIP-4361's", async () => {
    const wallet = Wallet.createRandom();
    expectErrorEnvelope(await signIn(wallet, { chainId: 1 }), 400, "CHAIN_MISMATCH");
    expectErrorEnvelope(await signIn(wallet, { domain: "evil.example" }), 400, "DOMAIN_MISMATCH");
    const now = api.clock.now().getTime();
    expectErrorEnvelope(await signIn(wallet, { expirationTime: new Date(now - 1_000) }), 401, "MESSAGE_EXPIRED");
    expectErrorEnvelope(await signIn(wallet, { notBefore: new Date(now + 600_000) }), 401, "MESSAGE_EXPIRED");
    expectErrorEnvelope(await signIn(wallet, { issuedAt: new Date(now + 600_000) }), 401, "MESSAGE_EXPIRED");
    const plain = "Please sign in";
    expectErrorEnvelope(await verify({ message: plain, signature: await wallet.signMessage(plain) }), 400, "VALIDATION_ERROR");
    expectErrorEnvelope(await verify({ message: message(wallet.address, await nonce()), signature: "0xzz" }), 400, "VALIDATION_ERROR");
  });

  it("refuses an app origin the service does not list (CORS_ORIGINS) with DOMAIN_MISMATCH, and signs in its own", async () => {
    const listed = await startTestApi({
      chain: stack.chain,
      db: stack.db,
      env: { CORS_ORIGINS: "https://app.example", PUBLIC_BASE_URL: "http://127.0.0.1:9" },
    });
    try {
      const wallet = Wallet.createRandom();
      const from = async (domain: string, uri: string) => {
        const text = message(wallet.address, await nonce(listed), { domain, uri, issuedAt: listed.clock.now() });
        return verify({ message: text, signature: await wallet.signMessage(text) }, listed);
      };
      expectErrorEnvelope(await from("127.0.0.1:5173", "http://127.0.0.1:5173/"), 400, "DOMAIN_MISMATCH");
      const own = await from("app.example", "https://app.example/login");
      expect(own.status, own.text).to.equal(200);
    } finally {
      await listed.close();
    }
  });

  it("refuses a signature that is not the address's: another key's, or over a changed message (INVALID_SIGNATURE)", async () => {
    const wallet = Wallet.createRandom();
    const text = message(wallet.address, await nonce());
    const stranger = await Wallet.createRandom().signMessage(text);
    expectErrorEnvelope(await verify({ message: text, signature: stranger }), 401, "INVALID_SIGNATURE");
    const signed = message(wallet.address, await nonce());
    const changed = signed.replace("Sign in to the savings app", "Sign in to the savings app, and more");
    expectErrorEnvelope(await verify({ message: changed, signature: await wallet.signMessage(signed) }), 401, "INVALID_SIGNATURE");
  });

  it("signs in a contract wallet by EIP-1271: its owner's key signs, the contract answers", async () => {
    const owner = Wallet.createRandom();
    const { abi, bytecode } = loadArtifact("mocks/MockContractWallet.sol", "MockContractWallet");
    const factory = new ContractFactory(abi as never, bytecode, await stack.chain.signer(0));
    const contractWallet = await (await factory.deploy(owner.address)).waitForDeployment();
    const address = await contractWallet.getAddress();

    const text = message(address, await nonce());
    const answer = await verify({ message: text, signature: await owner.signMessage(text) });
    expect(answer.status).to.equal(200);
    expect(answer.body.data.user).to.include({ walletAddress: address, custody: "self" });
    const other = message(address, await nonce());
    expectErrorEnvelope(
      await verify({ message: other, signature: await Wallet.createRandom().signMessage(other) }),
      401,
      "INVALID_SIGNATURE",
    );
  });

  it("trusts no other issuer's claim to a wallet's account: a provider's token naming one, or a token signed with another key", async () => {
    const wallet = Wallet.createRandom();
    await signIn(wallet);
    const fromProvider = await api.token(`siwe:${wallet.address.toLowerCase()}`);
    expectErrorEnvelope(await api.request("GET", "/v1/users/me", { token: fromProvider }), 401, "UNAUTHORIZED");

    const { privateKey } = await generateKeyPair("ES256");
    const forged = await new SignJWT({})
      .setProtectedHeader({ alg: "ES256", kid: "forged" })
      .setIssuer(`${api.url}/v1/auth`)
      .setAudience("trustmint-api")
      .setSubject(`siwe:${wallet.address.toLowerCase()}`)
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(privateKey);
    expectErrorEnvelope(await api.request("GET", "/v1/users/me", { token: forged }), 401, "UNAUTHORIZED");
  });

  it("moves nothing for a self-custody account: a deposit is SIGNATURE_REQUIRED, no transaction is recorded", async () => {
    const wallet = Wallet.createRandom();
    const { accessToken } = (await signIn(wallet)).body.data;
    const before = await stack.db.prisma.relayedRequest.count();
    const deposit = await api.request("POST", "/v1/vault/deposit", {
      token: accessToken,
      body: { amount: 10 },
      headers: { "idempotency-key": randomUUID() },
    });
    expectErrorEnvelope(deposit, 403, "SIGNATURE_REQUIRED");
    expect(await stack.db.prisma.relayedRequest.count()).to.equal(before);
  });

  it("an identity provider's account links a wallet it proves, chooses it and back; a linked wallet signs in to no other account", async () => {
    const token = await api.token(`idp-${randomUUID()}`);
    const wallets = async (as = token) => (await api.request("GET", "/v1/users/me/wallets", { token: as })).body.data;
    const managed = (await api.request("GET", "/v1/users/me", { token })).body.data.walletAddress as string;
    expect(await wallets()).to.deep.equal([{ address: managed, custody: "managed", linkedAt: null, chosen: true }]);

    const key = Wallet.createRandom();
    const proof = async (wallet: Pick<Wallet, "address" | "signMessage"> = key) => {
      const text = message(wallet.address, await nonce());
      return { message: text, signature: await wallet.signMessage(text) };
    };
    const linked = await api.request("POST", "/v1/users/me/wallets", { token, body: await proof() });
    expect(linked.status, linked.text).to.equal(201);
    expect(linked.body.data).to.include({ address: key.address, custody: "self", chosen: false });
    // Proved by another key's signature: refused, as a sign-in is.
    const forged = await proof();
    expectErrorEnvelope(
      await api.request("POST", "/v1/users/me/wallets", {
        token,
        body: { ...forged, signature: await Wallet.createRandom().signMessage(forged.message) },
      }),
      401,
      "INVALID_SIGNATURE",
    );
    // Linked, the wallet signs in to no account of its own, and no other account links it.
    expectErrorEnvelope(await signIn(key), 409, "CONFLICT");
    const other = await api.token(`idp-${randomUUID()}`);
    expectErrorEnvelope(await api.request("POST", "/v1/users/me/wallets", { token: other, body: await proof() }), 409, "CONFLICT");
    // Nor is a wallet's own account's wallet linked elsewhere.
    const owned = Wallet.createRandom();
    await signIn(owned);
    expectErrorEnvelope(await api.request("POST", "/v1/users/me/wallets", { token, body: await proof(owned) }), 409, "CONFLICT");

    // Chosen: the account's wallet is the user's own, its writes need its signature.
    const chosen = await api.request("POST", "/v1/users/me/wallet", { token, body: { address: key.address } });
    expect(chosen.status, chosen.text).to.equal(200);
    expect(chosen.body.data).to.include({ walletAddress: key.address, custody: "self" });
    expectErrorEnvelope(await api.request("POST", "/v1/vault/deposit", { token, body: { amount: 1 } }), 403, "SIGNATURE_REQUIRED");
    expect((await wallets()).map((wallet: { chosen: boolean }) => wallet.chosen)).to.deep.equal([false, true]);
    // And back to the managed one; a wallet that is not the account's is a 400.
    const back = await api.request("POST", "/v1/users/me/wallet", { token, body: { address: managed } });
    expect(back.body.data).to.include({ walletAddress: managed, custody: "managed" });
    expectErrorEnvelope(
      await api.request("POST", "/v1/users/me/wallet", { token, body: { address: owned.address } }),
      400,
      "VALIDATION_ERROR",
    );

    // Not while the wallet it leaves has a loan open: the loan is that wallet's.
    expect((await api.request("POST", "/v1/loans", { token, body: { amount: 10, duration: 7 } })).status).to.equal(200);
    expectErrorEnvelope(await api.request("POST", "/v1/users/me/wallet", { token, body: { address: key.address } }), 409, "CONFLICT");
    // A wallet's own account has no other wallet to link.
    const ownToken = (await signIn(Wallet.createRandom())).body.data.accessToken;
    expectErrorEnvelope(
      await api.request("POST", "/v1/users/me/wallets", { token: ownToken, body: await proof(Wallet.createRandom()) }),
      409,
      "CONFLICT",
    );
  });
});
