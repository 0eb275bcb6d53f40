import { randomBytes } from "node:crypto";
import { checkoutRedirect, createPayments, toMicro, verifyWebhook } from "@trustmint/sdk/payments";
import { expect } from "chai";
import { until } from "../../../test/helpers/waiting.js";
import { startWebhookReceiver, type WebhookReceiver } from "../../../test/helpers/webhook-receiver.js";
import { apiErrorOf, type SignedIn, sharedService, signIn } from "./support.js";

// The payments library (@trustmint/sdk/payments) as a merchant's server uses it, with an API
// key: a payment with the credit and split options, the redirect to the hosted checkout, a
// payer who pays, the spec's refund call, the merchant's webhook verified.

describe("@trustmint/sdk/payments: a merchant takes and refunds a payment", function () {
  this.timeout(90_000);
  let baseUrl: string;
  let merchant: SignedIn;
  let payer: SignedIn;
  let payments: ReturnType<typeof createPayments>;
  let receiver: WebhookReceiver;
  const secret = randomBytes(24).toString("base64url");

  before(async () => {
    baseUrl = (await sharedService()).url;
    receiver = await startWebhookReceiver();
    merchant = await signIn(baseUrl, "sdk-merchant");
    payer = await signIn(baseUrl, "sdk-payer", { funds: 40 });
    // The lending pool's liquidity, which the payer's credit terms need.
    const depositor = await signIn(baseUrl, "sdk-depositor", { funds: 100 });
    await depositor.client.vault.deposit({ amount: 100 });
    await merchant.client.sandbox.setPlan(merchant.id, { plan: "pro" });
    const { key } = await merchant.client.apiKeys.create({ name: "shop server" });
    payments = createPayments({ baseUrl, apiKey: key });
    await merchant.client.webhooks.create({ url: `${receiver.base}/shop`, events: ["payment.success", "payment.refunded"], secret });
  });
  after(async () => {
    await receiver?.close();
  });

  it("creates a payment with credit and split options, redirects to the checkout, is paid, refunds part of it", async () => {
    const payment = await payments.createPayment({
      amount: 15,
      currency: "USDC",
      description: "Order 42",
      paymentMethods: ["direct", "credit", "split"],
      metadata: { orderId: "42" },
      redirectUrl: "https://shop.example/thanks",
      creditOptions: { maxDuration: 14, maxInterest: 0.2 },
      splitOptions: { installments: 2, frequency: "weekly" },
    });
    expect(payment).to.include({ status: "pending", amount: 15, method: null });
    expect(payment.fees.direct).to.deep.equal({ fee: 0.15, net: 14.85 });

    const redirect = checkoutRedirect(payment);
    expect(redirect.status).to.equal(303);
    expect(redirect.headers.get("location")).to.equal(payment.checkoutUrl);
    const page = await fetch(payment.checkoutUrl);
    expect(page.status).to.equal(200);
    expect(page.headers.get("content-type")).to.match(/^text\/html/);

    // The payer's side: their own terms. A new payer (tier New: one loan of 7 days at most) may take the credit
    // option within a week, not two installments, which are two loans; then a direct payment.
    const terms = await payer.client.payments.terms(payment.id);
    expect(terms.direct).to.deep.equal({ total: 15 });
    expect(terms.credit).to.deep.include({ eligible: true, interestRate: 0.05 });
    expect(terms.split).to.deep.equal({ eligible: false, reason: "INSTALLMENTS_ABOVE_TIER", installments: [] });
    const paid = await payer.client.payments.pay(payment.id, { method: "direct" });
    expect(paid).to.include({ status: "success", method: "direct", fee: 0.15, net: 14.85 });
    expect((await payments.getPayment(payment.id)).txHash).to.equal(paid.txHash);
    const successful = await payments.listPayments({ status: "success" });
    expect(successful.data.map((entry) => entry.id)).to.include(payment.id);

    const refund = await payments.refund({ paymentId: payment.id, amount: 5, reason: "one item out of stock" });
    expect(refund).to.include({ amount: 5, reason: "one item out of stock" });
    expect((await payments.refunds(payment.id)).map((entry) => entry.id)).to.deep.equal([refund.id]);
    expect((await payments.getPayment(payment.id)).amountRefunded).to.equal(5);
    // The payer got the 5 USDC back: 40 - 15 + 5.
    const balance = toMicro((await payer.client.sandbox.faucet({ amount: 1 })).balance) - 1_000_000n;
    expect(balance).to.equal(30_000_000n);
    const tooMuch = await apiErrorOf(payments.refund({ paymentId: payment.id, amount: 11, reason: "more than is left" }));
    expect(tooMuch).to.include({ status: 400, code: "INVALID_AMOUNT" });

    // The merchant's webhook: payment.success then payment.refunded, each verified, with the metadata.
    await until(() => receiver.of("/shop").length >= 2, "the payment's two events", 20_000, 20);
    const events = await Promise.all(receiver.of("/shop").map((delivery) => verifyWebhook(delivery.body, delivery.headers, secret)));
    expect(events.map((event) => event.event).sort()).to.deep.equal(["payment.refunded", "payment.success"]);
    for (const event of events) expect(event.data).to.deep.include({ paymentId: payment.id, metadata: { orderId: "42" } });
  });

  it("cancels a payment nobody paid; its checkout then refuses the payer", async () => {
    const payment = await payments.createPayment({ amount: 3 });
    expect((await payments.cancelPayment(payment.id)).status).to.equal("cancelled");
    const refused = await apiErrorOf(payer.client.payments.pay(payment.id, { method: "direct" }));
    expect(refused).to.include({ code: "PAYMENT_CANCELLED" });
  });
});
