import { randomUUID } from "node:crypto";
import { createClient, toMicro } from "@trustmint/sdk";
import { expect } from "chai";
import { type ProxiedRequest, startProxy, type TestProxy } from "./proxy.js";
import { apiErrorOf, type SignedIn, sharedService, signIn } from "./support.js";

// Safe retries through a network that fails: every write carries one Idempotency-Key for all its
// attempts, so a write retried after a lost connection moves money once.

describe("@trustmint/sdk: retries move money once", function () {
  this.timeout(120_000);
  let baseUrl: string;
  let proxy: TestProxy;
  let saver: SignedIn;

  before(async () => {
    baseUrl = (await sharedService()).url;
    proxy = await startProxy(baseUrl);
  });
  after(async () => {
    await proxy?.close();
  });
  beforeEach(async () => {
    saver = await signIn(baseUrl, "sdk-retry", { funds: 100 });
  });

  /** The saver's client through the proxy, retrying quickly. */
  const proxied = () => {
    let token: string | undefined;
    return createClient({
      baseUrl: proxy.url,
      retry: { baseDelayMs: 20 },
      getToken: async () => (token ??= (await createClient({ baseUrl }).sandbox.token({ sub: saver.sub })).accessToken),
    });
  };
  const deposits = () => proxy.seen.filter((request) => request.method === "POST" && request.path === "/v1/vault/deposit");
  /** The saver's managed wallet balance, micro-USDC (a faucet of 1 USDC answers it). */
  const walletBalance = async () => toMicro((await saver.client.sandbox.faucet({ amount: 1 })).balance) - 1_000_000n;

  async function expectOneDeposit(attempts: ProxiedRequest[], amount: bigint, answer: { tmUSDCReceived: string }) {
    const keys = new Set(attempts.map((request) => request.headers["idempotency-key"]));
    expect(keys.size, "one key for every attempt").to.equal(1);
    expect([...keys][0]).to.be.a("string");
    const transactions = await saver.client.vault.transactions();
    expect(transactions.data.map((entry) => entry.type)).to.deep.equal(["deposit"]);
    // The position holds the shares of one deposit (their USDC value may round down at the vault's rate).
    expect((await saver.client.vault.position()).tmUSDCBalance).to.equal(answer.tmUSDCReceived);
    expect(await walletBalance()).to.equal(100_000_000n - amount);
  }

  it("a deposit whose answer is lost (the connection killed after the service answered) is retried and moves money once", async () => {
    const before = deposits().length;
    proxy.once((request) => request.path === "/v1/vault/deposit", "drop-after-answer");
    const answer = await proxied().vault.deposit({ amount: 30 });
    expect(answer.depositAmount).to.equal("30.00");
    const attempts = deposits().slice(before);
    expect(attempts).to.have.length(2);
    expect(attempts[0]!.answer?.status).to.equal(200);
    expect(attempts[1]!.answer?.headers["idempotent-replayed"]).to.equal("true");
    await expectOneDeposit(attempts, 30_000_000n, answer);
  });

  it("a deposit whose connection dies while the service still works on it is retried and moves money once", async () => {
    const before = deposits().length;
    proxy.once((request) => request.path === "/v1/vault/deposit", "drop-at-once");
    const answer = await proxied().vault.deposit({ amount: 25 });
    expect(answer.depositAmount).to.equal("25.00");
    const attempts = deposits().slice(before);
    expect(attempts.length).to.be.at.least(2);
    await expectOneDeposit(attempts, 25_000_000n, answer);
  });

  it("the caller's own Idempotency-Key: the same key twice is one deposit, answered twice", async () => {
    const key = randomUUID();
    const client = proxied();
    const first = await client.vault.deposit({ amount: 10 }, { idempotencyKey: key });
    const again = await client.vault.deposit({ amount: 10 }, { idempotencyKey: key });
    expect(again).to.deep.equal(first);
    expect(
      deposits()
        .slice(-2)
        .map((request) => request.headers["idempotency-key"]),
    ).to.deep.equal([key, key]);
    await expectOneDeposit(deposits().slice(-2), 10_000_000n, first);
    // Another body under the same key is the caller's mistake: 422, not a retry.
    const reused = await apiErrorOf(client.vault.deposit({ amount: 11 }, { idempotencyKey: key }));
    expect(reused).to.include({ status: 422, code: "IDEMPOTENCY_KEY_REUSED" });
  });

  it("a 503 and a 429 are retried after Retry-After; a read carries no key", async () => {
    const client = proxied();
    const started = Date.now();
    proxy.once((request) => request.path === "/v1/vault/position", { status: 503, headers: { "retry-after": "1" } });
    proxy.once((request) => request.path === "/v1/vault/position", {
      status: 429,
      headers: { "retry-after": "1" },
      body: { success: false, error: { code: "RATE_LIMITED", message: "slow down" } },
    });
    const before = proxy.seen.length;
    const position = await client.vault.position();
    expect(position.userId).to.equal(saver.id);
    const attempts = proxy.seen.slice(before).filter((request) => request.path === "/v1/vault/position");
    expect(attempts).to.have.length(3);
    expect(attempts.every((request) => request.headers["idempotency-key"] === undefined)).to.equal(true);
    // Each retry waited the second Retry-After asked for.
    expect(Date.now() - started).to.be.at.least(2_000);
  });

  it("retries are bounded: the last failure is the caller's ApiError", async () => {
    const client = createClient({ baseUrl: proxy.url, retry: { maxRetries: 2, baseDelayMs: 10 }, getToken: () => "unused" });
    for (let i = 0; i < 3; i++) {
      proxy.once((request) => request.path === "/v1/vault/status", {
        status: 503,
        body: { success: false, error: { code: "SERVICE_UNAVAILABLE", message: "down for a moment" }, meta: { requestId: `r${i}` } },
      });
    }
    const error = await apiErrorOf(client.vault.status());
    expect(error).to.include({ status: 503, code: "SERVICE_UNAVAILABLE", message: "down for a moment", requestId: "r2" });
  });
});
