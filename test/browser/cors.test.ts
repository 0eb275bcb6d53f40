// A browser app on another origin calling /v1 with the built SDK (#44 item 1, D-108), in Chromium
// from the npm package @sparticuz/chromium driven by playwright-core. The app's page is served from
// http://localhost:<port> and the API listens on http://127.0.0.1:<port>: two origins, so every
// call is cross-origin and preflighted (Authorization, Idempotency-Key). The page loads the SDK's
// compiled files as the browser sees them (ES modules, its two dependencies by an import map) and
// reads, writes with an Idempotency-Key, and streams notifications. Before D-108 the API sent no
// CORS headers and every one of these calls failed with a TypeError in the browser.
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import chromium from "@sparticuz/chromium";
import { expect } from "chai";
import { Wallet } from "ethers";
import { type Browser, chromium as playwright } from "playwright-core";
import { usingPostgres } from "../helpers/database.js";
import { type MoneyStack, newTestUser, startMoneyStack } from "../helpers/money-stack.js";
import { injectWallet } from "../helpers/test-wallet.js";

const ROOT = path.resolve(import.meta.dirname, "..", "..");
const ARTIFACTS = path.join(ROOT, "test-artifacts", "wallet-app");
/** What the app's origin serves: its page, the SDK's compiled files and the SDK's two dependencies. */
const FILES: Record<string, string> = {
  "/nm/openapi-fetch.js": "node_modules/openapi-fetch/dist/index.mjs",
  "/nm/eventsource-parser.js": "node_modules/eventsource-parser/dist/index.js",
};
const PAGE = `<!doctype html><html lang="en"><title>An app</title>
<script type="importmap">{"imports": {"openapi-fetch": "/nm/openapi-fetch.js", "eventsource-parser": "/nm/eventsource-parser.js"}}</script>
<script type="module">
import { createClient } from "/sdk/index.js";
// What an app does: read, write with an Idempotency-Key, read headers of a raw call, stream notifications.
window.scenario = async (baseUrl, token) => {
  const client = createClient({ baseUrl, getToken: async () => token });
  const me = await client.users.me();
  const deposit = await client.vault.deposit({ amount: 5 }, { idempotencyKey: crypto.randomUUID() });
  const raw = await fetch(baseUrl + "/v1/vault/position", { headers: { authorization: "Bearer " + token } });
  const exposed = { requestId: raw.headers.get("x-request-id"), rateLimit: raw.headers.get("x-ratelimit-limit") };
  // The live feed: the unread count at once, then the notification a test call writes.
  const stop = new AbortController();
  const events = [];
  for await (const event of client.notifications.stream({ signal: stop.signal })) {
    events.push(event.type);
    if (event.type === "unread" && events.length === 1) await client.notifications.test({ type: "in_app" });
    if (event.type === "notification") break;
  }
  stop.abort();
  return { wallet: me.walletAddress, deposited: deposit.depositAmount, txHash: deposit.txHash, exposed, events };
};
window.ready = true;
</script>
<h1>An app on another origin</h1></html>`;

/** A wallet app's page: the user's browser wallet (window.ethereum) signs in and signs every write; results shown on the page. */
const WALLET_PAGE = `<!doctype html><html lang="en"><title>A wallet app</title>
<script type="importmap">{"imports": {"openapi-fetch": "/nm/openapi-fetch.js", "eventsource-parser": "/nm/eventsource-parser.js"}}</script>
<script type="module">
import { createClient } from "/sdk/index.js";
const show = (label, value) => {
  const row = document.createElement("p");
  row.textContent = label + ": " + value;
  document.querySelector("main").append(row);
};
window.walletScenario = async (baseUrl, paymentId) => {
  const { accessToken, user } = await createClient({ baseUrl }).auth.signIn(window.ethereum);
  show("Signed in", user.walletAddress + " (" + user.custody + ")");
  const client = createClient({ baseUrl, getToken: async () => accessToken, wallet: window.ethereum });
  const deposit = await client.vault.deposit({ amount: 10 });
  show("Deposited", deposit.depositAmount + " USDC");
  const loan = await client.loans.create({ amount: 20, duration: 7 });
  await window.testFundLoan(loan.id, accessToken); // the sandbox's /dev routes take no cross-origin calls

  const owed = (await client.loans.get(loan.id)).remainingBalance;
  const repaid = await client.loans.repay(loan.id, { amount: owed });
  show("Repaid", owed + " USDC, left " + repaid.remainingBalance);
  const position = await client.vault.position();
  show("Position", position.usdcValue + " USDC");
  const activity = await client.users.activity();
  show("Activity", activity.data.map((entry) => entry.type).join(", "));
  const paid = await client.payments.pay(paymentId, { method: "direct" });
  show("Paid", paid.amount + " USDC");
  return { user, deposited: deposit.depositAmount, left: repaid.remainingBalance, position: position.usdcValue, activity: activity.data.map((entry) => entry.type), paid: paid.status };
};
window.ready = true;
</script>
<main><h1>A wallet app on another origin</h1></main></html>`;

describe(`the API from a browser app on another origin (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(180_000);
  let stack: MoneyStack | undefined;
  let browser: Browser;
  let app: http.Server;
  let appOrigin: string;

  before(async () => {
    // The SDK as `npm run build:packages` compiles it (npm run test:ts builds it first).
    expect(existsSync(path.join(ROOT, "packages/sdk/dist/index.js")), "packages/sdk/dist: run npm run build:packages").to.equal(true);
    stack = await startMoneyStack();
    app = http.createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://localhost");
      if (url.pathname === "/") return void res.writeHead(200, { "content-type": "text/html" }).end(PAGE);
      if (url.pathname === "/wallet") return void res.writeHead(200, { "content-type": "text/html" }).end(WALLET_PAGE);
      const file = url.pathname.startsWith("/sdk/")
        ? path.join("packages/sdk/dist", path.normalize(url.pathname.slice("/sdk/".length)))
        : FILES[url.pathname];
      if (!file || file.includes("..") || !file.endsWith("js") || !existsSync(path.join(ROOT, file))) return void res.writeHead(404).end();
      res.writeHead(200, { "content-type": "text/javascript" }).end(readFileSync(path.join(ROOT, file)));
    });
    await new Promise<void>((resolve) => app.listen(0, "127.0.0.1", resolve));
    appOrigin = `http://localhost:${(app.address() as AddressInfo).port}`;
    // The package's serverless flags turn the same-origin policy off (--disable-web-security): CORS is
    // what this test is about, so the browser keeps its web security.
    const unsafe = new Set(["--single-process", "--disable-web-security", "--allow-running-insecure-content"]);
    const args = chromium.args.filter((flag) => !unsafe.has(flag));
    browser = await playwright.launch({ executablePath: await chromium.executablePath(), args, headless: true });
  });
  after(async () => {
    await browser?.close();
    app?.closeAllConnections();
    await new Promise<void>((resolve) => (app ? app.close(() => resolve()) : resolve()));
    await stack?.close();
  });

  it("reads, writes with an Idempotency-Key and streams notifications through the built SDK", async () => {
    const { api } = stack!;
    const user = await newTestUser(api, "browser-app", 20);
    expect(new URL(api.url).origin).to.not.equal(appOrigin);
    const page = await (await browser.newContext()).newPage();
    const seen: string[] = [];
    page.on("request", (request) => {
      if (request.url().startsWith(api.url)) seen.push(`${request.method()} ${new URL(request.url()).pathname}`);
    });
    await page.goto(appOrigin);
    await page.waitForFunction("window.ready === true");

    const result = (await page.evaluate(`window.scenario(${JSON.stringify(api.url)}, ${JSON.stringify(user.token)})`)) as {
      wallet: string;
      deposited: unknown;
      txHash: string;
      exposed: { requestId: string | null; rateLimit: string | null };
      events: string[];
    };

    expect(result.wallet).to.equal(user.wallet);
    expect(result.deposited).to.equal("5.00");
    expect(result.txHash).to.match(/^0x[0-9a-f]{64}$/);
    expect(result.exposed.requestId).to.match(/.+/);
    expect(result.exposed.rateLimit).to.match(/^\d+$|^unlimited$/);
    expect(result.events[0]).to.equal("unread");
    expect(result.events).to.include("notification");
    // Every call went from the page to the API's origin (Chromium answers the preflights itself, unseen here).
    expect(seen).to.include("POST /v1/vault/deposit");
    expect(seen).to.include("GET /v1/notifications/stream");
  });

  it("a wallet app: the user's browser wallet signs in (SIWE), deposits 10 USDC, repays a loan and pays a checkout, holding no ETH", async () => {
    const { api, chain } = stack!;
    // The pool's liquidity for the loan, and a merchant's payment to pay.
    const saver = await newTestUser(api, "browser-saver", 100);
    expect((await api.request("POST", "/v1/vault/deposit", { token: saver.token, body: { amount: 100 } })).status).to.equal(200);
    const merchant = await newTestUser(api, "browser-wallet-shop");
    const payment = (await api.request("POST", "/v1/payments", { token: merchant.token, body: { amount: 4, paymentMethods: ["direct"] } }))
      .body.data;

    const key = Wallet.createRandom();
    const page = await (await browser.newContext()).newPage();
    const asked = await injectWallet(page, key, { legacy: true });
    // The wallet's test USDC (the sandbox's faucet is for same-origin callers), and the pool funding the loan.
    await (await chain.contracts.usdc.mint(key.address, 60_000_000n)).wait();
    await page.exposeFunction("testFundLoan", async (loanId: string, token: string) => {
      const funded = await api.request("POST", `/dev/loans/${loanId}/fund`, { token });
      expect(funded.status, funded.text).to.equal(200);
    });
    await page.goto(`${appOrigin}/wallet`);
    await page.waitForFunction("window.ready === true");
    const result = (await page.evaluate(`window.walletScenario(${JSON.stringify(api.url)}, ${JSON.stringify(payment.id)})`)) as {
      user: { walletAddress: string; custody: string };
      deposited: string;
      left: number;
      position: string;
      activity: string[];
      paid: string;
    };
    expect(result.user).to.include({ walletAddress: key.address, custody: "self" });
    expect(result.deposited).to.equal("10.00");
    expect(result.left).to.equal(0);
    expect(result.position).to.equal("10.00");
    expect(result.activity).to.include.members(["vault_deposit", "loan_repaid"]);
    expect(result.paid).to.equal("success");
    // One sign-in, then the wallet signed each write: deposit (permit + request), repayment (permit + request), payment (one authorization).
    expect(asked.filter((method) => method === "personal_sign")).to.have.length(1);
    expect(asked.filter((method) => method === "eth_signTypedData_v4")).to.have.length(5);
    expect(await chain.provider.getBalance(key.address)).to.equal(0n);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, "wallet-app.png"), fullPage: true });
    await page.context().close();
  });
});
