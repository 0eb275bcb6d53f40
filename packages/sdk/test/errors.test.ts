import { readFileSync } from "node:fs";
import path from "node:path";
import { ApiConnectionError, ApiError, ApiTimeoutError, createClient, SDK_VERSION, TrustMintError } from "@trustmint/sdk";
import { expect } from "chai";
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
