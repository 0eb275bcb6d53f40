import { readFileSync } from "node:fs";
import path from "node:path";
import { ApiConnectionError, ApiError, ApiTimeoutError, createClient, SDK_VERSION, TrustMintError } from "@trustmint/sdk";
import { expect } from "chai";
import { until } from "../../../test/helpers/waiting.js";
import { startProxy, type TestProxy } from "./proxy.js";
import { type SignedIn, sharedService, signIn } from "./support.js";

// What a caller gets when the network or what stands in front of the API misbehaves (#44 item 3):
// a timeout, a failed connection, a gateway's page instead of the API's envelope, a success that
// is not JSON, a Retry-After longer than the client waits; and who is calling, in every request.

/** The error a call ends with (it must end with one). */
async function failureOf(call: Promise<unknown>): Promise<Error> {
  try {
    await call;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected the call to fail");
}

describe("@trustmint/sdk: errors and timeouts", function () {
  this.timeout(120_000);
  let baseUrl: string;
  let proxy: TestProxy;
  let saver: SignedIn;

  before(async () => {
    baseUrl = (await sharedService()).url;
    proxy = await startProxy(baseUrl);
    saver = await signIn(baseUrl, "sdk-errors", { funds: 50 });
  });
  after(async () => {
    await proxy?.close();
  });

  let token: string | undefined;
  const client = (options: { timeoutMs?: number; maxRetries?: number; maxRetryAfterMs?: number } = {}) =>
    createClient({
      baseUrl: proxy.url,
      timeoutMs: options.timeoutMs,
      retry: { baseDelayMs: 10, maxRetries: options.maxRetries, maxRetryAfterMs: options.maxRetryAfterMs },
      getToken: async () => (token ??= (await createClient({ baseUrl }).sandbox.token({ sub: saver.sub })).accessToken),
    });
  const path_ = (suffix: string) => (request: { path: string }) => request.path === suffix;

  it("a server that never answers ends in ApiTimeoutError, not a promise pending for ever", async () => {
    proxy.once(path_("/v1/vault/status"), "hang");
    proxy.once(path_("/v1/vault/status"), "hang");
    const started = Date.now();
    const error = await failureOf(client({ timeoutMs: 300, maxRetries: 1 }).vault.status());
    expect(error).to.be.instanceOf(ApiTimeoutError);
    expect(error).to.be.instanceOf(ApiConnectionError);
    expect(error).to.be.instanceOf(TrustMintError);
    expect(error.message).to.match(/No answer within 300 ms \(2 attempts\)/);
    expect(Date.now() - started).to.be.below(5_000);
  });

  it("a call's own signal aborts it at once, however long the timeout: every attempt and the wait between them", async () => {
    // Each abort comes once the proxy holds the request (its one-shot rule taken), so no rule is left for a later test.
    const arrived = async (route: string, since: number) =>
      until(() => proxy.seen.slice(since).some(path_(route)), `${route} at the proxy`, 10_000, 10);
    proxy.once(path_("/v1/vault/position"), "hang");
    const controller = new AbortController();
    const started = Date.now();
    const readAt = proxy.seen.length;
    const reading = failureOf(client({ timeoutMs: 0 }).vault.position({ signal: controller.signal }));
    await arrived("/v1/vault/position", readAt);
    controller.abort(new Error("the user left the page"));
    expect((await reading).message).to.equal("the user left the page");
    expect(Date.now() - started).to.be.below(10_000);
    // Aborted before it starts: nothing is sent.
    const before = proxy.seen.length;
    const aborted = await failureOf(client().users.me({ signal: AbortSignal.abort(new Error("never mind")) }));
    expect(aborted.message).to.equal("never mind");
    expect(proxy.seen.length).to.equal(before);
    // A write too, in the wait before its retry (a long one here): a 503, then the abort. Nothing reached the service.
    const other = await signIn(baseUrl, "sdk-abort", { funds: 5 });
    const otherToken = (await createClient({ baseUrl }).sandbox.token({ sub: other.sub })).accessToken;
    const otherClient = createClient({ baseUrl: proxy.url, retry: { baseDelayMs: 30_000 }, getToken: () => otherToken });
    proxy.once(path_("/v1/vault/deposit"), { status: 503, body: "{}" });
    const writeController = new AbortController();
    const sentAt = proxy.seen.length;
    const write = failureOf(otherClient.vault.deposit({ amount: 1 }, { signal: writeController.signal }));
    await arrived("/v1/vault/deposit", sentAt);
    writeController.abort(new Error("cancelled"));
    expect((await write).message).to.equal("cancelled");
    expect(proxy.seen.slice(sentAt).filter(path_("/v1/vault/deposit"))).to.have.length(1);
    expect((await other.client.vault.transactions()).data).to.deep.equal([]);
  });

  it("a success carries its response: the request id, and whether a write was replayed for its key", async () => {
    const { client: own } = await signIn(baseUrl, "sdk-response", { funds: 10 });
    const me = await own.users.me();
    expect(me.lastResponse.status).to.equal(200);
    expect(me.lastResponse.requestId).to.match(/^[0-9a-f-]{36}$/);
    expect(me.lastResponse.headers.get("x-request-id")).to.equal(me.lastResponse.requestId);
    // Not a field of the data: JSON, spreads and keys leave it out.
    expect(Object.keys(me)).to.not.include("lastResponse");
    expect(JSON.parse(JSON.stringify(me))).to.not.have.property("lastResponse");
    const idempotencyKey = crypto.randomUUID();
    const first = await own.vault.deposit({ amount: 1 }, { idempotencyKey });
    const replay = await own.vault.deposit({ amount: 1 }, { idempotencyKey });
    expect(first.lastResponse.idempotentReplayed).to.equal(false);
    expect(replay.lastResponse.idempotentReplayed).to.equal(true);
    expect(replay.txHash).to.equal(first.txHash);
    await own.vault.deposit({ amount: 2 });
    const page = await own.vault.transactions({ limit: 1 });
    expect(page.lastResponse?.requestId).to.be.a("string");
    expect((await page.next())?.lastResponse?.requestId)
      .to.be.a("string")
      .and.not.equal(page.lastResponse?.requestId);
  });

  it("a write whose first attempt times out is retried with its key and moves money once", async () => {
    proxy.once(path_("/v1/vault/deposit"), "hang");
    const before = proxy.seen.length;
    const answer = await client({ timeoutMs: 2_000 }).vault.deposit({ amount: 5 });
    expect(answer.depositAmount).to.equal("5.00");
    const attempts = proxy.seen.slice(before).filter(path_("/v1/vault/deposit"));
    expect(attempts).to.have.length(2);
    expect(new Set(attempts.map((request) => request.headers["idempotency-key"])).size).to.equal(1);
    expect((await saver.client.vault.transactions()).data.filter((entry) => entry.type === "deposit")).to.have.length(1);
  });

  it("a failed connection ends in ApiConnectionError with its cause", async () => {
    for (let i = 0; i < 2; i++) proxy.once(path_("/v1/vault/status"), "reset");
    const error = await failureOf(client({ maxRetries: 1 }).vault.status());
    expect(error).to.be.instanceOf(ApiConnectionError);
    expect(error).to.not.be.instanceOf(ApiTimeoutError);
    expect(error.cause).to.be.instanceOf(TypeError);
  });

  it("a gateway's page instead of the API's envelope is an ApiError by its status, not NOT_FOUND", async () => {
    const page = "<html><body>Forbidden by the corporate proxy</body></html>";
    proxy.once(path_("/v1/vault/status"), { status: 403, headers: { "content-type": "text/html" }, raw: page });
    const error = await failureOf(client().vault.status());
    expect(error).to.be.instanceOf(ApiError);
    expect(error).to.include({ status: 403, code: "FORBIDDEN" });
    proxy.once(path_("/v1/vault/status"), { status: 413, headers: { "content-type": "text/html" }, raw: page });
    expect(await failureOf(client().vault.status())).to.include({ status: 413, code: "PAYLOAD_TOO_LARGE" });
  });

  it("a success that is not JSON is an ApiError, not a raw SyntaxError", async () => {
    proxy.once(path_("/v1/vault/status"), { status: 200, headers: { "content-type": "text/html" }, raw: "<html>captive portal</html>" });
    const error = await failureOf(client().vault.status());
    expect(error).to.be.instanceOf(ApiError);
    expect(error).to.include({ status: 200, code: "INTERNAL_ERROR" });
    expect(error.message).to.include("text/html");
  });

  it("a Retry-After longer than the client waits comes back at once, with how long the API asked", async () => {
    const before = proxy.seen.length;
    proxy.once(path_("/v1/vault/status"), {
      status: 429,
      headers: { "retry-after": "60" },
      body: { success: false, error: { code: "RATE_LIMITED", message: "slow down" } },
    });
    const started = Date.now();
    const error = await failureOf(client({ maxRetryAfterMs: 5_000 }).vault.status());
    expect(error).to.include({ status: 429, code: "RATE_LIMITED", retryAfter: 60 });
    expect(proxy.seen.slice(before).filter(path_("/v1/vault/status"))).to.have.length(1);
    expect(Date.now() - started).to.be.below(2_000);
  });

  it("says who is calling in every request: the client header and, on Node, a User-Agent, with the package's version", async () => {
    const manifest = JSON.parse(readFileSync(path.resolve(import.meta.dirname, "..", "package.json"), "utf8")) as { version: string };
    expect(SDK_VERSION).to.equal(manifest.version);
    const before = proxy.seen.length;
    await client().vault.status();
    const request = proxy.seen.slice(before).find(path_("/v1/vault/status"))!;
    expect(request.headers["x-trustmint-client"]).to.equal(`sdk-js/${manifest.version}`);
    expect(request.headers["user-agent"]).to.match(new RegExp(`^trustmint-sdk-js/${manifest.version.replaceAll(".", "\\.")} node/`));
  });
});
