// The hosted checkout in a real browser (#31, D-81): Chromium from the npm package
// @sparticuz/chromium driven by playwright-core, on a phone's viewport (375 px). The payer opens
// the checkout URL, signs in with the sandbox form, pays, and lands on the merchant's redirect URL
// with the payment id; each state of the page passes an axe-core check with no serious or critical
// violation, fits the screen without horizontal scroll, and is saved as a screenshot in
// test-artifacts/checkout/ (a CI artifact, not committed).
import { mkdirSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { AxeBuilder } from "@axe-core/playwright";
import chromium from "@sparticuz/chromium";
import { expect } from "chai";
import { Wallet } from "ethers";
import { type Browser, type Page, chromium as playwright } from "playwright-core";
import { type TestChain, usdc } from "../helpers/chain.js";
import { usingPostgres } from "../helpers/database.js";
import { type MoneyStack, newTestUser, postWithKey, startMoneyStack } from "../helpers/money-stack.js";
import { injectWallet } from "../helpers/test-wallet.js";

const ARTIFACTS = path.resolve(import.meta.dirname, "..", "..", "test-artifacts", "checkout");
const PHONE = { width: 375, height: 812 };
const DESKTOP = { width: 1280, height: 800 };

describe(`checkout page in a browser (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(180_000);
  let stack: MoneyStack | undefined;
  let chain: TestChain;
  let browser: Browser;
  let shop: http.Server;
  let shopBase: string;
  const shopVisits: string[] = [];

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    stack = await startMoneyStack();
    chain = stack.chain;
    // The lending pool's liquidity for payments on credit and in installments.
    const depositor = await newTestUser(stack.api, "browser-depositor", 500);
    expect((await postWithKey(stack.api, "/v1/vault/deposit", depositor.token, { amount: 500 })).status).to.equal(200);
    // The merchant's site: where the payer lands after paying.
    shop = http.createServer((req, res) => {
      shopVisits.push(req.url ?? "");
      res
        .writeHead(200, { "content-type": "text/html" })
        .end('<!doctype html><html lang="en"><title>Thanks</title><h1>Thank you</h1></html>');
    });
    await new Promise<void>((resolve) => shop.listen(0, "127.0.0.1", resolve));
    shopBase = `http://127.0.0.1:${(shop.address() as AddressInfo).port}`;
    // The package's flags are for one-shot serverless runs: in one process, closing a context closes the browser.
    const args = chromium.args.filter((flag) => flag !== "--single-process");
    browser = await playwright.launch({ executablePath: await chromium.executablePath(), args, headless: true });
  });
  after(async () => {
    await browser?.close();
    shop?.closeAllConnections();
    await new Promise<void>((resolve) => (shop ? shop.close(() => resolve()) : resolve()));
    await stack?.close();
  });

  /** A fresh phone-sized page (axe needs a page of a context, not of the browser). */
  async function phonePage(locale = "en-US", viewport = PHONE): Promise<Page> {
    const context = await browser.newContext({ viewport, locale });
    return context.newPage();
  }

  /** The page as it is now: no serious or critical axe violation, no horizontal scroll, and a screenshot. */
  async function checkState(page: Page, name: string) {
    const results = await new AxeBuilder({ page }).analyze();
    const serious = results.violations.filter((violation) => violation.impact === "serious" || violation.impact === "critical");
    expect(
      serious.map((violation) => `${violation.id}: ${violation.help} (${violation.nodes.map((node) => node.target.join(" ")).join(", ")})`),
      name,
    ).to.deep.equal([]);
    const width = await page.evaluate("document.documentElement.scrollWidth");
    const viewport = page.viewportSize()?.width ?? PHONE.width;
    expect(width, `${name}: no horizontal scroll at ${viewport} px`).to.be.at.most(viewport);
    await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
  }

  it("signs in, pays directly and lands on the merchant's page, every state accessible and phone-sized", async () => {
    const { api } = stack!;
    const merchant = await newTestUser(api, "browser-merchant");
    await api.request("PATCH", "/v1/users/me", { token: merchant.token, body: { displayName: "Corner Bookshop" } });
    const created = await api.request("POST", "/v1/payments", {
      token: merchant.token,
      body: {
        amount: 18.5,
        description: "The Name of the Rose, paperback",
        paymentMethods: ["direct", "credit", "split"],
        redirectUrl: `${shopBase}/thanks?order=B-42`,
        cancelUrl: `${shopBase}/cart`,
      },
    });
    expect(created.status, created.text).to.equal(201);
    const payment = created.body.data;
    // The payer the sandbox form signs in as ("checkout|<account>"), with test USDC from the faucet.
    const payerToken = await api.token("checkout|ana", { name: "ana" });
    expect((await postWithKey(api, "/dev/faucet", payerToken, { amount: 25 })).status).to.equal(200);
    const payerWallet = (await api.request("GET", "/v1/users/me", { token: payerToken })).body.data.walletAddress as string;

    const page = await phonePage();
    await page.goto(payment.checkoutUrl);
    expect(await page.textContent("h1")).to.include("18.50 USDC");
    expect(await page.textContent(".merchant")).to.include("Corner Bookshop");
    expect(await page.isDisabled("button[data-method=direct]")).to.equal(true);
    await checkState(page, "1-open");

    await page.fill("#account", "ana");
    await page.click("#sandbox-signin button[type=submit]");
    await page.waitForSelector("#signed-in:not([hidden])");
    expect(await page.isEnabled("button[data-method=direct]")).to.equal(true);
    await checkState(page, "2-signed-in");

    await Promise.all([page.waitForURL(`${shopBase}/thanks**`), page.click("button[data-method=direct]")]);
    const landed = new URL(page.url());
    expect(landed.searchParams.get("order")).to.equal("B-42");
    expect(landed.searchParams.get("paymentId")).to.equal(payment.id);
    expect((await chain.contracts.usdc.balanceOf(payerWallet)) as bigint).to.equal(usdc(25) - 18_500_000n);

    // The same link afterwards says it was paid.
    await page.goto(payment.checkoutUrl);
    expect(await page.textContent(".closed")).to.include("has been paid");
    await checkState(page, "3-paid");
    await page.context().close();
  });

  it("a payer's own browser wallet (EIP-6963): signs in with Ethereum, then signs the payment once (D-120); no ETH, the service pays the gas", async () => {
    const { api } = stack!;
    const merchant = await newTestUser(api, "browser-wallet-merchant");
    const created = await api.request("POST", "/v1/payments", {
      token: merchant.token,
      body: { amount: 9.5, description: "A notebook", paymentMethods: ["direct"], redirectUrl: `${shopBase}/thanks?order=W-7` },
    });
    const payment = created.body.data;
    const key = Wallet.createRandom();
    await (await chain.contracts.usdc.mint(key.address, usdc(20))).wait();

    const page = await phonePage();
    const asked = await injectWallet(page, key);
    await page.goto(payment.checkoutUrl);
    await page.waitForSelector("#wallet-signin:not([hidden])");
    await checkState(page, "9-wallet-found");
    await page.click("#wallet-signin");
    await page.waitForSelector("#signed-in:not([hidden])");
    expect(await page.textContent("#who")).to.equal(`${key.address.toLowerCase().slice(0, 6)}…${key.address.toLowerCase().slice(-4)}`);
    await checkState(page, "10-wallet-signed-in");

    await Promise.all([page.waitForURL(`${shopBase}/thanks**`), page.click("button[data-method=direct]")]);
    expect(new URL(page.url()).searchParams.get("paymentId")).to.equal(payment.id);
    // SIWE, then one signature: USDC's authorization of exactly the amount, bound to this payment.
    expect(asked).to.deep.equal(["eth_requestAccounts", "personal_sign", "eth_signTypedData_v4"]);
    expect((await chain.contracts.usdc.balanceOf(key.address)) as bigint).to.equal(usdc(20) - 9_500_000n);
    expect(await chain.provider.getBalance(key.address)).to.equal(0n);
    const detail = (await api.request("GET", `/v1/payments/${payment.id}`, { token: merchant.token })).body.data;
    expect(detail).to.deep.include({ status: "success", method: "direct" });
    await page.context().close();

    // A wallet that only sets window.ethereum is offered too.
    const legacy = await phonePage();
    await injectWallet(legacy, Wallet.createRandom(), { legacy: true });
    await legacy.goto(
      payment.checkoutUrl.replace(
        payment.id,
        (await api.request("POST", "/v1/payments", { token: merchant.token, body: { amount: 1, paymentMethods: ["direct"] } })).body.data
          .id,
      ),
    );
    await legacy.waitForSelector("#wallet-signin:not([hidden])");
    await legacy.context().close();
  });

  for (const method of ["credit", "split"] as const) {
    it(`pays ${method === "credit" ? "on credit" : "in installments"}: the payer's terms shown once signed in, the payer owes loans`, async () => {
      const { api } = stack!;
      const merchant = await newTestUser(api, `browser-${method}-merchant`);
      const created = await api.request("POST", "/v1/payments", {
        token: merchant.token,
        body: { amount: 12, description: "A lamp", paymentMethods: ["direct", "credit", "split"], redirectUrl: `${shopBase}/thanks` },
      });
      const payment = created.body.data;
      if (method === "split") {
        // Three weekly installments need a tier that lends for 21 days or more: the payer has tier
        // Established's score (set directly; tier New is refused, tested over HTTP).
        const me = (await api.request("GET", "/v1/users/me", { token: await api.token(`checkout|${method}-payer`) })).body.data;
        await stack!.db.prisma.user.update({ where: { id: me.id }, data: { trustScore: 55 } });
        api.services.invalidateUser(me.id);
      }
      const page = await phonePage();
      await page.goto(payment.checkoutUrl);
      if (method === "split") expect(await page.textContent("ol.schedule")).to.include("4.00 USDC in 7 days");
      await page.fill("#account", `${method}-payer`);
      await page.click("#sandbox-signin button[type=submit]");
      await page.waitForSelector("#signed-in:not([hidden])");
      if (method === "credit") {
        // A locator, not a string predicate: Playwright polls a string with eval in the page, which the
        // checkout's CSP (script-src 'self') refuses whenever the terms are not there at the first look.
        // A 13.066666 loan (the merchant's 11.76 grossed up by the insurance fee, D-127) at 5 %: 13.72.
        await page.locator('[data-terms="credit"]', { hasText: "13.72" }).waitFor();
      } else {
        // The payer's own installments, within their tier's longest term: 4.596666 each (D-127), shown in cents.
        await page.locator('[data-terms="split"]', { hasText: "4.59 USDC" }).waitFor();
      }
      await checkState(page, `7-${method}-terms`);
      await Promise.all([page.waitForURL(`${shopBase}/thanks**`), page.click(`button[data-method=${method}]`)]);
      const payerToken = await api.token(`checkout|${method}-payer`);
      const loans = (await api.request("GET", "/v1/loans", { token: payerToken })).body.data;
      expect(loans).to.have.length(method === "credit" ? 1 : 3);
      const detail = (await api.request("GET", `/v1/payments/${payment.id}`, { token: merchant.token })).body.data;
      expect(detail).to.deep.include({ status: "success", method });
      await page.context().close();
    });
  }

  it("shows the cancel link, Spanish, an expired payment and an unknown one accessibly", async () => {
    const { api } = stack!;
    const merchant = await newTestUser(api, "browser-merchant-2");
    const open = (
      await api.request("POST", "/v1/payments", {
        token: merchant.token,
        body: { amount: 7, description: "Café con leche", cancelUrl: `${shopBase}/cart` },
      })
    ).body.data;
    const spanish = await phonePage("es-ES");
    await spanish.goto(open.checkoutUrl);
    expect(await spanish.getAttribute("html", "lang")).to.equal("es");
    expect(await spanish.textContent("#methods-title")).to.include("¿Cómo quieres pagar?");
    await checkState(spanish, "4-open-es");
    await Promise.all([spanish.waitForURL(`${shopBase}/cart`), spanish.click("#cancel")]);
    await spanish.context().close();

    const soon = (await api.request("POST", "/v1/payments", { token: merchant.token, body: { amount: 3, expiresIn: 1_800 } })).body.data;
    expect((await api.request("POST", "/dev/time/advance", { body: { seconds: 1_801 } })).status).to.equal(200);
    const page = await phonePage();
    await page.goto(soon.checkoutUrl);
    expect(await page.textContent(".closed")).to.include("expired");
    await checkState(page, "5-expired");
    const missing = await page.goto(`${api.url}/checkout/00000000-0000-4000-8000-000000000000`);
    expect(missing?.status()).to.equal(404);
    await checkState(page, "6-not-found");
    await page.context().close();
  });

  it("reads at a glance: cents that add up, sentences for codes, a merchant's text as written, no sign-in hint once signed in", async () => {
    const { api } = stack!;
    const merchant = await newTestUser(api, "browser-glance-merchant");
    // A name that, rendered as written, would read "google" (U+202E reverses what follows).
    await api.request("PATCH", "/v1/users/me", { token: merchant.token, body: { displayName: "\u202Eelgoog" } });
    const created = await api.request("POST", "/v1/payments", {
      token: merchant.token,
      body: { amount: 18.5, description: "Three \u2067volumes\u2069 of poems", paymentMethods: ["direct", "credit", "split"] },
    });
    expect(created.status, created.text).to.equal(201);
    const payment = created.body.data;
    for (const [language, viewport] of [
      ["en-US", PHONE],
      ["es-ES", DESKTOP],
    ] as const) {
      const page = await phonePage(language, viewport);
      await page.goto(payment.checkoutUrl);
      const merchantName = (await page.textContent(".merchant bdi")) ?? "";
      expect(merchantName).to.equal("elgoog");
      expect(await page.title()).to.not.match(/[\u202A-\u202E\u2066-\u2069]/);
      expect(await page.textContent(".description bdi")).to.equal("Three volumes of poems");
      // 18.50 in three installments: cents, adding up to the total (before: 6.166668 USDC).
      const schedule = await page.locator("ol.schedule li").allTextContents();
      const amounts = schedule.map((line) => /^(\d+\.\d+) USDC/.exec(line)?.[1] ?? "");
      expect(
        amounts.every((amount) => /^\d+\.\d{2}$/.test(amount)),
        schedule.join(" | "),
      ).to.equal(true);
      expect(amounts.reduce((sum, amount) => sum + Math.round(Number(amount) * 100), 0)).to.equal(1850);
      expect(await page.isVisible(".terms-hint >> nth=0")).to.equal(true);
      await checkState(page, `8-glance-${language}-${viewport.width}`);

      // A payer of tier New holds one loan at a time: three installments are three loans; a sentence says why.
      await page.fill("#account", `glance-${language}`);
      await page.click("#sandbox-signin button[type=submit]");
      await page.waitForSelector("#signed-in:not([hidden])");
      await page.locator('[data-terms="split"]', { hasText: language === "en-US" ? "Not available" : "No disponible" }).waitFor();
      const refusal = (await page.textContent('[data-terms="split"]')) ?? "";
      expect(refusal).to.not.match(/[A-Z]{3,}_[A-Z_]+/);
      expect(refusal).to.include(language === "en-US" ? "more loans than your Trust Score tier" : "más préstamos de los que");
      expect(await page.isVisible(".terms-hint >> nth=0")).to.equal(false);
      expect(await page.textContent("#signin-title")).to.equal(language === "en-US" ? "Signed in" : "Sesión iniciada");
      await checkState(page, `9-glance-signed-in-${language}-${viewport.width}`);
      await page.context().close();
    }

    // An unknown asset: a plain 404, not a 500.
    const asset = await fetch(`${api.url}/checkout/assets/nope.js`);
    expect(asset.status).to.equal(404);
    expect(await asset.text()).to.equal("Not found");
  });
});
