// Merchants' payments (#31, D-81) over real HTTP on a real chain with the indexer: creation and its
// validation, the hosted checkout page, paying directly through the payment router (the merchant
// paid in the payer's own transaction, the fee to the treasury), the test addresses, a payment paid
// once under 20 concurrent attempts, refunds that add up on chain, and the merchant's events.
import { randomUUID } from "node:crypto";
import { expect } from "chai";
import { createLogger } from "../../core/logger.js";
import { refFromUuid } from "../../core/refs.js";
import { startPlatformWorkers } from "../../worker/jobs.js";
import type { Workers } from "../../worker/scheduler.js";
import type { TestApi } from "../helpers/api.js";
import { type TestChain, usdc } from "../helpers/chain.js";
import { type TestDatabase, usingPostgres } from "../helpers/database.js";
import { expectErrorEnvelope } from "../helpers/envelope.js";
import { waitFor, waitForHead } from "../helpers/mirror.js";
import { type MoneyStack, newTestUser, postWithKey, startMoneyStack } from "../helpers/money-stack.js";
import { until } from "../helpers/waiting.js";
import { startWebhookReceiver, type WebhookReceiver } from "../helpers/webhook-receiver.js";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const DECLINE = "0x000000000000000000000000000000000000dEc1";
const INSUFFICIENT = "0x00000000000000000000000000000000000f0001";

describe(`payments (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(240_000);
  let stack: MoneyStack | undefined;
  let chain: TestChain;
  let db: TestDatabase;
  let api: TestApi;
  let workers: Workers;
  let receiver: WebhookReceiver;

  before(async () => {
    stack = await startMoneyStack();
    ({ chain, db, api } = stack);
    receiver = await startWebhookReceiver();
    workers = startPlatformWorkers({ services: api.services, clock: api.clock, logger: createLogger("silent"), tickMs: 100 });
  });
  after(async () => {
    await workers?.stop();
    await stack?.close();
    await receiver?.close();
  });

  /** A merchant (enterprise plan: no rate limit in the way) and a helper to create its payments. */
  async function newMerchant() {
    const merchant = await newTestUser(api, "merchant");
    await api.request("PATCH", "/v1/users/me", { token: merchant.token, body: { displayName: "Coffee & Co" } });
    await api.request("PUT", `/dev/users/${merchant.id}/plan`, { body: { plan: "enterprise" } });
    const create = (body: Record<string, unknown> = {}) =>
      api.request("POST", "/v1/payments", {
        token: merchant.token,
        body: {
          amount: 100,
          currency: "USDC",
          description: "Two espressos",
          paymentMethods: ["direct"],
          metadata: { orderId: "A-17" },
          ...body,
        },
      });
    return { ...merchant, create };
  }
  const pay = (token: string, id: string, body: Record<string, unknown> = { method: "direct" }, key?: string) =>
    api.request("POST", `/checkout/${id}/pay`, { token, body, headers: key ? { "idempotency-key": key } : {} });
  const balanceOf = async (address: string) => (await chain.contracts.usdc.balanceOf(address)) as bigint;

  it("creates a payment with part 2's request shape and answers its record, fees per method and checkout URL", async () => {
    const merchant = await newMerchant();
    const created = await merchant.create({
      amount: 25.5,
      paymentMethods: ["direct", "credit", "split"],
      redirectUrl: "https://shop.example/thanks",
      cancelUrl: "https://shop.example/cart",
    });
    expect(created.status, created.text).to.equal(201);
    const payment = created.body.data;
    expect(payment).to.deep.include({
      status: "pending",
      amount: 25.5,
      currency: "USDC",
      description: "Two espressos",
      paymentMethods: ["direct", "credit", "split"],
      metadata: { orderId: "A-17" },
      redirectUrl: "https://shop.example/thanks",
      cancelUrl: "https://shop.example/cart",
      method: null,
      txHash: null,
      fee: null,
      amountRefunded: 0,
    });
    expect(payment.fees).to.deep.equal({
      direct: { fee: 0.255, net: 25.245 },
      credit: { fee: 0.51, net: 24.99 },
      split: { fee: 0.3825, net: 25.1175 },
    });
    expect(payment.checkoutUrl).to.equal(`${api.url}/checkout/${payment.id}`);
    expect(payment.createdAt).to.match(ISO);
    // 24 hours unless the merchant says otherwise.
    expect(new Date(payment.expiresAt).getTime() - new Date(payment.createdAt).getTime()).to.equal(86_400_000);
    const shorter = await merchant.create({ expiresIn: 1_800 });
    expect(new Date(shorter.body.data.expiresAt).getTime() - new Date(shorter.body.data.createdAt).getTime()).to.equal(1_800_000);
    // The spec's minimal request: amount alone.
    const minimal = await api.request("POST", "/v1/payments", { token: merchant.token, body: { amount: 3 } });
    expect(minimal.status, minimal.text).to.equal(201);
    expect(minimal.body.data).to.deep.include({ currency: "USDC", description: "", paymentMethods: ["direct"], metadata: {} });
  });

  it("refuses bad requests with the error envelope naming the field, writing nothing", async () => {
    const merchant = await newMerchant();
    const before = await db.prisma.payment.count({ where: { merchantId: merchant.id } });
    for (const [body, field] of [
      [{ amount: 0 }, "amount"],
      [{ amount: -5 }, "amount"],
      [{ amount: 1.0000001 }, "amount"],
      [{ amount: "10" }, "amount"],
      [{ currency: "EUR" }, "currency"],
      [{ paymentMethods: [] }, "paymentMethods"],
      [{ paymentMethods: ["cash"] }, "paymentMethods.0"],
      [{ metadata: "order 17" }, "metadata"],
      [{ metadata: { blob: "x".repeat(5_000) } }, "metadata"],
      [{ redirectUrl: "http://shop.example/thanks" }, "redirectUrl"],
      [{ cancelUrl: "javascript:alert(1)" }, "cancelUrl"],
      [{ expiresIn: 60 }, "expiresIn"],
      [{ expiresIn: 90_000 }, "expiresIn"],
      [{ splitOptions: { installments: 1 } }, "splitOptions.installments"],
      [{ colour: "red" }, "colour"],
    ] as const) {
      const refused = await merchant.create(body);
      expectErrorEnvelope(refused, 400, "VALIDATION_ERROR");
      expect(refused.body.error.details.field, JSON.stringify(body)).to.equal(field);
    }
    expect(await db.prisma.payment.count({ where: { merchantId: merchant.id } })).to.equal(before);
    expectErrorEnvelope(await api.request("POST", "/v1/payments", { body: { amount: 1 } }), 401, "UNAUTHORIZED");
  });

  it("shows a payment only to its merchant, and lists them newest first with pagination and the status filter", async () => {
    const merchant = await newMerchant();
    const other = await newMerchant();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await merchant.create({ amount: i + 1 })).body.data.id);
    const got = await api.request("GET", `/v1/payments/${ids[0]}`, { token: merchant.token });
    expect(got.status).to.equal(200);
    expect(got.body.data).to.deep.include({ id: ids[0], amount: 1, refunds: [] });
    for (const id of [ids[0], randomUUID(), "not-an-id"]) {
      expectErrorEnvelope(await api.request("GET", `/v1/payments/${id}`, { token: other.token }), 404, "PAYMENT_NOT_FOUND");
    }
    const page = await api.request("GET", "/v1/payments?limit=2", { token: merchant.token });
    expect(page.body.data.map((p: { id: string }) => p.id)).to.deep.equal([ids[2], ids[1]]);
    expect(page.body.pagination).to.deep.equal({ total: 3, limit: 2, offset: 0, hasMore: true });
    expect((await api.request("GET", "/v1/payments?status=success", { token: merchant.token })).body.data).to.deep.equal([]);
    expect((await api.request("GET", "/v1/payments", { token: other.token })).body.data).to.deep.equal([]);
    expectErrorEnvelope(await api.request("GET", "/v1/payments?status=paid", { token: merchant.token }), 400, "VALIDATION_ERROR");
  });

  it("serves the hosted checkout page with the summary in its HTML, its own files only, in English or Spanish", async () => {
    const merchant = await newMerchant();
    const payment = (await merchant.create({ amount: 12.5, cancelUrl: "https://shop.example/cart" })).body.data;
    const page = await fetch(payment.checkoutUrl);
    expect(page.status).to.equal(200);
    expect(page.headers.get("content-type")).to.match(/^text\/html/);
    const csp = page.headers.get("content-security-policy")!;
    expect(csp).to.include("default-src 'none'").and.include("script-src 'self'").and.include("frame-ancestors 'none'");
    const html = await page.text();
    expect(html).to.include("Coffee &amp; Co").and.include("12.50 USDC").and.include("Two espressos");
    expect(html).to.include('href="https://shop.example/cart"').and.include('name="viewport"');
    expect(html).to.not.match(/<script>|<style>|https?:\/\/(?!shop\.example)[a-z]/i);
    const spanish = await (await fetch(payment.checkoutUrl, { headers: { "accept-language": "es-ES,es;q=0.9,en;q=0.5" } })).text();
    expect(spanish).to.include('lang="es"').and.include("Pagar a");
    for (const file of ["checkout.js", "checkout.css"]) {
      const asset = await fetch(`${api.url}/checkout/assets/${file}`);
      expect(asset.status, file).to.equal(200);
      expect(asset.headers.get("content-security-policy")).to.equal(csp);
    }
    const missing = await fetch(`${api.url}/checkout/${randomUUID()}`);
    expect(missing.status).to.equal(404);
    expect(await missing.text()).to.include("Payment not found");
  });

  it("pays directly: the merchant receives the amount less 1 % in the payer's own transaction, the treasury the fee", async () => {
    const merchant = await newMerchant();
    const hook = await api.request("POST", "/v1/webhooks", {
      token: merchant.token,
      body: { url: `${receiver.base}/payments`, events: ["payment.success"], secret: "merchant-webhook-secret-0001" },
    });
    expect(hook.status, hook.text).to.equal(201);
    const payer = await newTestUser(api, "payer", 150);
    const payment = (await merchant.create({ amount: 100, redirectUrl: "https://shop.example/thanks?order=A-17" })).body.data;
    const treasury = chain.deployment.deployer;
    const [merchantBefore, treasuryBefore] = [await balanceOf(merchant.wallet), await balanceOf(treasury)];

    const paid = await pay(payer.token, payment.id);
    expect(paid.status, paid.text).to.equal(200);
    expect(paid.body.data).to.deep.include({ paymentId: payment.id, status: "success", method: "direct", amount: 100, fee: 1, net: 99 });
    expect(paid.body.data.redirectUrl).to.equal(`https://shop.example/thanks?order=A-17&paymentId=${payment.id}`);
    expect(await balanceOf(payer.wallet)).to.equal(usdc(50));
    expect((await balanceOf(merchant.wallet)) - merchantBefore).to.equal(usdc(99));
    expect((await balanceOf(treasury)) - treasuryBefore).to.equal(usdc(1));
    // The payer's own transaction (the relay's), recorded before it was sent; the payer holds no ETH.
    const request = await db.prisma.relayedRequest.findFirstOrThrow({ where: { userId: payer.id, purpose: "payment.pay" } });
    expect(request.status).to.equal("executed");
    const tx = await db.prisma.chainTransaction.findUniqueOrThrow({ where: { id: request.transactionId } });
    expect(tx).to.deep.include({ txHash: paid.body.data.txHash, status: "mined" });
    expect(await chain.provider.getBalance(payer.wallet)).to.equal(0n);
    const onChain = await chain.contracts.router.paymentOf(refFromUuid(payment.id), merchant.wallet, usdc(100));
    expect(onChain.payer.toLowerCase()).to.equal(payer.wallet.toLowerCase());
    expect(onChain.amount).to.equal(usdc(100));

    const detail = (await api.request("GET", `/v1/payments/${payment.id}`, { token: merchant.token })).body.data;
    expect(detail).to.deep.include({
      status: "success",
      method: "direct",
      payerId: payer.id,
      fee: 1,
      net: 99,
      amountRefunded: 0,
      txHash: paid.body.data.txHash,
      refunds: [],
    });
    expect(detail.paidAt).to.match(ISO);
    expect(
      (await api.request("GET", "/v1/payments?status=success", { token: merchant.token })).body.data.map((p: { id: string }) => p.id),
    ).to.deep.equal([payment.id]);

    // payment.success exists when the pay answers, with the merchant's metadata, and reaches the merchant's webhook.
    const event = await db.prisma.domainEvent.findFirstOrThrow({ where: { type: "payment.success", userId: merchant.id } });
    expect(event.data).to.deep.include({ type: "payment.success", paymentId: payment.id, amount: 100, fee: 1, net: 99, payerId: payer.id });
    expect((event.data as { metadata: unknown }).metadata).to.deep.equal({ orderId: "A-17" });
    await until(() => receiver.of("/payments").length === 1, "the merchant's webhook delivery");
    const delivered = JSON.parse(receiver.of("/payments")[0]!.body);
    expect(delivered).to.deep.include({ id: event.id, event: "payment.success" });
    expect(delivered.data).to.deep.include({ type: "payment.success", paymentId: payment.id, metadata: { orderId: "A-17" } });

    // The payer's receipt, in the app (and by e-mail where the payer has an address), naming the merchant.
    const receipt = await waitFor(
      async () =>
        (await api.request("GET", "/v1/notifications", { token: payer.token })).body.data.find(
          (n: { type: string }) => n.type === "payment_receipt",
        ),
      20_000,
      "the payer's receipt",
    );
    expect(receipt.data).to.deep.equal({ paymentId: payment.id, txHash: paid.body.data.txHash });
    expect(receipt.body).to.include("100.00 USDC").and.include("Coffee & Co");

    // Paid once: a second attempt, by anyone, is refused with nothing moved.
    const second = await newTestUser(api, "second-payer", 150);
    expectErrorEnvelope(await pay(second.token, payment.id), 409, "ALREADY_PAID");
    expectErrorEnvelope(await pay(payer.token, payment.id), 409, "ALREADY_PAID");
    expect(await balanceOf(second.wallet)).to.equal(usdc(150));
    const page = await (await fetch(payment.checkoutUrl)).text();
    expect(page).to.include("This payment has been paid.");
  });

  it("is not made paid by a wallet paying its ref to itself or of another amount: the payment stays payable, its merchant told nothing", async () => {
    const merchant = await newMerchant();
    const payment = (await merchant.create({ amount: 20 })).body.data;
    const attacker = await chain.signer(7);
    const router = chain.contracts.router.connect(attacker) as typeof chain.contracts.router;
    await (await chain.contracts.usdc.mint(await attacker.getAddress(), usdc(30))).wait();
    await (await chain.contracts.usdc.connect(attacker).getFunction("approve")(await router.getAddress(), usdc(30))).wait();
    const ref = refFromUuid(payment.id);
    // The payment's ref, paid to the attacker's own wallet, and to the merchant for less.
    await (await router.getFunction("pay")(ref, await attacker.getAddress(), 1n)).wait();
    await (await router.getFunction("pay")(ref, merchant.wallet, usdc(1))).wait();
    await waitForHead(db, chain);
    expect(await db.prisma.paymentChainEvent.count({ where: { ref, kind: "paid" } })).to.equal(2);
    const seen = (await api.request("GET", `/v1/payments/${payment.id}`, { token: merchant.token })).body.data;
    expect(seen).to.deep.include({ status: "pending", txHash: null, fee: null });
    await api.services.paymentEvents.drain(api.clock.now());
    expect(await db.prisma.domainEvent.count({ where: { type: "payment.success", userId: merchant.id } })).to.equal(0);
    // The real payer still pays it.
    const payer = await newTestUser(api, "unblocked-payer", 20);
    const paid = await pay(payer.token, payment.id);
    expect(paid.status, paid.text).to.equal(200);
    const after = (await api.request("GET", `/v1/payments/${payment.id}`, { token: merchant.token })).body.data;
    expect(after).to.deep.include({ status: "success", txHash: paid.body.data.txHash, payerId: payer.id, net: 19.8 });
  });

  it("refuses a method the payment does not take, an unknown payment, a cancelled and an expired one", async () => {
    const merchant = await newMerchant();
    const payer = await newTestUser(api, "refused-payer", 20);
    const payment = (await merchant.create({ amount: 5 })).body.data;
    const wrong = await pay(payer.token, payment.id, { method: "credit" });
    expectErrorEnvelope(wrong, 400, "VALIDATION_ERROR");
    expect(wrong.body.error.details.field).to.equal("method");
    expectErrorEnvelope(await pay(payer.token, payment.id, { method: "cash" }), 400, "VALIDATION_ERROR");
    expectErrorEnvelope(await pay(payer.token, randomUUID()), 404, "PAYMENT_NOT_FOUND");
    expectErrorEnvelope(await api.request("POST", `/checkout/${payment.id}/pay`, { body: { method: "direct" } }), 401, "UNAUTHORIZED");

    const cancelled = await api.request("POST", `/v1/payments/${payment.id}/cancel`, { token: merchant.token });
    expect(cancelled.status, cancelled.text).to.equal(200);
    expect(cancelled.body.data).to.deep.include({ status: "cancelled" });
    expect(cancelled.body.data.cancelledAt).to.match(ISO);
    expectErrorEnvelope(await pay(payer.token, payment.id), 409, "PAYMENT_CANCELLED");
    expectErrorEnvelope(
      await api.request("POST", `/v1/payments/${payment.id}/cancel`, { token: merchant.token }),
      409,
      "PAYMENT_CANCELLED",
    );

    const soon = (await merchant.create({ amount: 5, expiresIn: 1_800 })).body.data;
    expect((await api.request("POST", "/dev/time/advance", { body: { seconds: 1_801 } })).status).to.equal(200);
    expectErrorEnvelope(await pay(payer.token, soon.id), 409, "PAYMENT_EXPIRED");
    expect((await api.request("GET", `/v1/payments/${soon.id}`, { token: merchant.token })).body.data.status).to.equal("expired");
    expect(await balanceOf(payer.wallet)).to.equal(usdc(20));
  });

  it("fails at the test addresses (payment.failed, declined or insufficient_funds) and at an empty wallet, leaving the payment open", async () => {
    const merchant = await newMerchant();
    const payer = await newTestUser(api, "test-address-payer", 0);
    const payment = (await merchant.create({ amount: 10, metadata: { orderId: "T-1" } })).body.data;
    const declined = await pay(payer.token, payment.id, { method: "direct", payerAddress: DECLINE });
    expectErrorEnvelope(declined, 402, "PAYMENT_DECLINED");
    const insufficient = await pay(payer.token, payment.id, { method: "direct", payerAddress: INSUFFICIENT });
    expectErrorEnvelope(insufficient, 400, "INSUFFICIENT_BALANCE");
    // A real wallet without USDC: refused before anything is sent, the hold given back.
    const empty = await pay(payer.token, payment.id);
    expectErrorEnvelope(empty, 400, "INSUFFICIENT_BALANCE");
    const failures = await db.prisma.domainEvent.findMany({
      where: { type: "payment.failed", userId: merchant.id },
      orderBy: { seq: "asc" },
    });
    expect(failures.map((event) => (event.data as { reason: string }).reason)).to.deep.equal([
      "declined",
      "insufficient_funds",
      "insufficient_funds",
    ]);
    expect(failures[0]!.data).to.deep.include({ type: "payment.failed", paymentId: payment.id, amount: 10, metadata: { orderId: "T-1" } });
    const detail = (await api.request("GET", `/v1/payments/${payment.id}`, { token: merchant.token })).body.data;
    // Its last attempt failed (payment.failed told the merchant); it can still be paid.
    expect(detail.status).to.equal("failed");
    expect(detail.lastFailure).to.deep.include({ reason: "insufficient_funds", method: "direct" });
    // Funded, the same payer pays it.
    await postWithKey(api, "/dev/faucet", payer.token, { amount: 10 });
    expect((await pay(payer.token, payment.id)).status).to.equal(200);
  });

  it("moves the payer's money once under 20 concurrent attempts at one payment", async () => {
    const merchant = await newMerchant();
    const payer = await newTestUser(api, "racing-payer", 100);
    await api.request("PUT", `/dev/users/${payer.id}/plan`, { body: { plan: "enterprise" } });
    const payment = (await merchant.create({ amount: 40 })).body.data;
    const merchantBefore = await balanceOf(merchant.wallet);
    const answers = await Promise.all(Array.from({ length: 20 }, () => pay(payer.token, payment.id)));
    const statuses = answers.map((answer) => answer.status);
    expect(
      statuses.filter((status) => status === 200),
      statuses.join(","),
    ).to.have.length(1);
    for (const answer of answers.filter((a) => a.status !== 200)) {
      expect(answer.status).to.equal(409);
      expect(["PAYMENT_IN_PROGRESS", "ALREADY_PAID"]).to.include(answer.body.error.code);
    }
    expect(await balanceOf(payer.wallet)).to.equal(usdc(60));
    expect((await balanceOf(merchant.wallet)) - merchantBefore).to.equal(usdc(40) - usdc(40) / 100n);
    const ref = refFromUuid(payment.id);
    expect(await db.prisma.paymentChainEvent.count({ where: { ref, kind: "paid" } })).to.equal(1);
    expect(await db.prisma.relayedRequest.count({ where: { userId: payer.id, purpose: "payment.pay" } })).to.equal(1);
  });

  it("refunds from the merchant's wallet, partly then fully, never above the amount; the sums hold on chain", async () => {
    const merchant = await newMerchant();
    const payer = await newTestUser(api, "refunded-payer", 100);
    const payment = (await merchant.create({ amount: 100, metadata: { orderId: "R-9" } })).body.data;
    const refunds = (body: Record<string, unknown>, key = randomUUID()) =>
      api.request("POST", `/v1/payments/${payment.id}/refunds`, { token: merchant.token, body, headers: { "idempotency-key": key } });
    expectErrorEnvelope(await refunds({ amount: 10 }), 409, "PAYMENT_NOT_PAID");
    expect((await pay(payer.token, payment.id)).status).to.equal(200);
    // The merchant holds the 99 it received.
    expect(await balanceOf(merchant.wallet)).to.equal(usdc(99));

    const key = randomUUID();
    const first = await refunds({ amount: 30, reason: "one espresso was cold" }, key);
    expect(first.status, first.text).to.equal(201);
    expect(first.body.data).to.deep.include({ paymentId: payment.id, amount: 30, reason: "one espresso was cold", status: "succeeded" });
    expect(first.body.data.txHash).to.match(/^0x[0-9a-f]{64}$/);
    // The same request again (its Idempotency-Key): the same refund, nothing more moved.
    const again = await refunds({ amount: 30, reason: "one espresso was cold" }, key);
    expect(again.body.data.id).to.equal(first.body.data.id);
    expect(await balanceOf(payer.wallet)).to.equal(usdc(30));

    const tooMuch = await refunds({ amount: 70.01 });
    expectErrorEnvelope(tooMuch, 400, "INVALID_AMOUNT");
    expect(tooMuch.body.error.details.field).to.equal("amount");
    // The merchant's wallet holds 69 of the 70 left: nothing moves, the refund says why.
    const short = await refunds({ amount: 70 });
    expectErrorEnvelope(short, 400, "INSUFFICIENT_BALANCE");
    await postWithKey(api, "/dev/faucet", merchant.token, { amount: 1 });
    const rest = await refunds({});
    expect(rest.status, rest.text).to.equal(201);
    expect(rest.body.data).to.deep.include({ amount: 70, status: "succeeded", reason: "requested_by_customer" });
    expectErrorEnvelope(await refunds({ amount: 0.01 }), 400, "INVALID_AMOUNT");

    // On chain: the payer has all of it back, the merchant its net less the refunds (plus the faucet's 1).
    expect(await balanceOf(payer.wallet)).to.equal(usdc(100));
    expect(await balanceOf(merchant.wallet)).to.equal(usdc(99) + usdc(1) - usdc(100));
    expect((await chain.contracts.router.paymentOf(refFromUuid(payment.id), merchant.wallet, usdc(100))).refunded).to.equal(usdc(100));
    const detail = (await api.request("GET", `/v1/payments/${payment.id}`, { token: merchant.token })).body.data;
    expect(detail.amountRefunded).to.equal(100);
    expect(detail.refunds.map((r: { amount: number; status: string }) => [r.amount, r.status])).to.deep.equal([
      [30, "succeeded"],
      [70, "failed"],
      [70, "succeeded"],
    ]);
    const listed = (await api.request("GET", `/v1/payments/${payment.id}/refunds`, { token: merchant.token })).body.data;
    expect(listed).to.deep.equal(detail.refunds);
    const events = await db.prisma.domainEvent.findMany({
      where: { type: "payment.refunded", userId: merchant.id },
      orderBy: { seq: "asc" },
    });
    expect(events.map((e) => (e.data as { refundedAmount: number; fullyRefunded: boolean }).refundedAmount)).to.deep.equal([30, 100]);
    expect(events[1]!.data).to.deep.include({ type: "payment.refunded", fullyRefunded: true, metadata: { orderId: "R-9" } });
    // Only the merchant refunds.
    expectErrorEnvelope(
      await api.request("POST", `/v1/payments/${payment.id}/refunds`, { token: payer.token, body: { amount: 1 } }),
      404,
      "PAYMENT_NOT_FOUND",
    );
  });
});
