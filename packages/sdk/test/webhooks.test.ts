import { randomBytes } from "node:crypto";
import { isTestEvent, signWebhook, verifyWebhook, type WebhookEventOf, WebhookVerificationError } from "@trustmint/sdk";
import { expect } from "chai";
import { Webhook as StandardWebhook } from "svix";
import { until } from "../../../test/helpers/waiting.js";
import { type Received, startWebhookReceiver, type WebhookReceiver } from "../../../test/helpers/webhook-receiver.js";
import { type SignedIn, sharedService, signIn } from "./support.js";

// The webhooks resource, and verifyWebhook on real deliveries of the service: both signatures
// checked, a tampered body, a wrong secret, a stale timestamp and missing headers refused, the
// event typed by its name.

async function refusal(call: Promise<unknown>): Promise<WebhookVerificationError> {
  try {
    await call;
  } catch (error) {
    if (error instanceof WebhookVerificationError) return error;
    throw error;
  }
  throw new Error("expected a WebhookVerificationError");
}

describe("@trustmint/sdk: webhooks and verifyWebhook", function () {
  this.timeout(60_000);
  let baseUrl: string;
  let receiver: WebhookReceiver;
  let owner: SignedIn;

  before(async () => {
    baseUrl = (await sharedService()).url;
    receiver = await startWebhookReceiver();
    owner = await signIn(baseUrl, "sdk-hooks", { funds: 50 });
  });
  after(async () => {
    await receiver?.close();
  });

  const arrivals = async (path: string, count: number) => {
    await until(() => receiver.of(path).length >= count, `${count} deliveries to ${path}`, 20_000, 20);
    return receiver.of(path);
  };

  it("verifies a real delivery of a deposit and returns it typed by its event name", async () => {
    const secret = randomBytes(24).toString("base64url");
    const hook = await owner.client.webhooks.create({ url: `${receiver.base}/deposit`, events: ["vault.deposit"], secret });
    expect(hook).to.include({ status: "active", url: `${receiver.base}/deposit` });
    const deposit = await owner.client.vault.deposit({ amount: 12.5 });
    const [delivery] = await arrivals("/deposit", 1);
    const event = await verifyWebhook(delivery!.body, delivery!.headers, secret);
    expect(event.event).to.equal("vault.deposit");
    expect(isTestEvent(event)).to.equal(false);
    if (isTestEvent(event) || event.event !== "vault.deposit") throw new Error("not a deposit");
    // Narrowed once, by the name: the catalogue's fields of a deposit, typed (this line compiles only so).
    const data: WebhookEventOf<"vault.deposit">["data"] = event.data;
    const amount: string = event.data.usdcAmount;
    expect(amount).to.equal("12.50");
    expect(data).to.include({ txHash: deposit.txHash, userId: owner.id });
    // The same bytes as a Uint8Array, and the headers as a Fetch Headers.
    const headers = new Headers(delivery!.headers as Record<string, string>);
    expect((await verifyWebhook(new TextEncoder().encode(delivery!.body), headers, secret)).id).to.equal(event.id);
  });

  it("refuses a tampered body, a wrong secret, a stale or future timestamp and missing headers", async () => {
    const secret = randomBytes(24).toString("hex");
    const hook = await owner.client.webhooks.create({ url: `${receiver.base}/refusals`, events: ["loan.funded"], secret });
    const tested = await owner.client.webhooks.test(hook.id, { event: "loan.funded" });
    expect(tested.delivered).to.equal(true);
    const [delivery] = await arrivals("/refusals", 1);
    const { body, headers } = delivery as Received;
    const event = await verifyWebhook(body, headers, secret);
    expect(event).to.deep.include({ event: "loan.funded", test: true });
    expect(isTestEvent(event)).to.equal(true);
    expect(event.data).to.deep.include({ test: true });

    expect((await refusal(verifyWebhook(body.replace('"test":true', '"test":false'), headers, secret))).reason).to.equal("bad_signature");
    expect((await refusal(verifyWebhook(`${body} `, headers, secret))).reason).to.equal("bad_signature");
    expect((await refusal(verifyWebhook(body, headers, `${secret}x`))).reason).to.equal("bad_signature");
    // One of the two signatures forged is enough to refuse it.
    const forgedService = { ...headers, "x-service-signature": `sha256=${"0".repeat(64)}` };
    expect((await refusal(verifyWebhook(body, forgedService, secret))).reason).to.equal("bad_signature");
    const forgedStandard = { ...headers, "webhook-signature": `v1,${Buffer.alloc(32).toString("base64")}` };
    expect((await refusal(verifyWebhook(body, forgedStandard, secret))).reason).to.equal("bad_signature");
    // A timestamp moved to look fresh no longer matches its signature.
    const moved = { ...headers, "webhook-timestamp": String(Number(headers["webhook-timestamp"]) + 1) };
    expect((await refusal(verifyWebhook(body, moved, secret))).reason).to.equal("bad_signature");

    const signedAt = Number(headers["webhook-timestamp"]) * 1_000;
    expect((await refusal(verifyWebhook(body, headers, secret, { now: () => signedAt + 301_000 }))).reason).to.equal("stale_timestamp");
    expect((await refusal(verifyWebhook(body, headers, secret, { now: () => signedAt - 301_000 }))).reason).to.equal("stale_timestamp");
    expect((await verifyWebhook(body, headers, secret, { now: () => signedAt + 3_600_000, toleranceSeconds: 3_601 })).id).to.equal(
      event.id,
    );

    for (const name of ["x-service-signature", "webhook-id", "webhook-timestamp", "webhook-signature"]) {
      const { [name]: _dropped, ...rest } = headers;
      expect((await refusal(verifyWebhook(body, rest, secret))).reason, name).to.equal("missing_headers");
    }
  });

  it("agrees with an independent verifier (svix) on a Standard Webhooks secret, and accepts either secret during a rotation", async () => {
    const standardSecret = `whsec_${randomBytes(32).toString("base64")}`;
    const hook = await owner.client.webhooks.create({ url: `${receiver.base}/rotation`, events: ["loan.repaid"], secret: standardSecret });
    await owner.client.webhooks.test(hook.id, { event: "loan.repaid" });
    const [first] = await arrivals("/rotation", 1);
    expect((await verifyWebhook(first!.body, first!.headers, standardSecret)).event).to.equal("loan.repaid");
    const independent = new StandardWebhook(standardSecret);
    expect(() => independent.verify(first!.body, first!.headers as Record<string, string>)).to.not.throw();
    expect(() => independent.verify(`${first!.body} `, first!.headers as Record<string, string>)).to.throw();

    const newSecret = randomBytes(24).toString("base64url");
    const rotated = await owner.client.webhooks.rotateSecret(hook.id, { secret: newSecret });
    expect(rotated.previousSecretExpiresAt).to.be.a("string");
    await owner.client.webhooks.test(hook.id, { event: "loan.repaid" });
    const [, second] = await arrivals("/rotation", 2);
    expect(String(second!.headers["x-service-signature"]).split(" ")).to.have.length(2);
    for (const secret of [newSecret, standardSecret]) {
      expect((await verifyWebhook(second!.body, second!.headers, secret)).event).to.equal("loan.repaid");
    }
    expect((await refusal(verifyWebhook(second!.body, second!.headers, "some-other-secret"))).reason).to.equal("bad_signature");
  });

  it("signWebhook signs a body as the service does: the same headers for the same id and time, verified by svix too", async () => {
    for (const secret of [randomBytes(24).toString("hex"), `whsec_${randomBytes(32).toString("base64")}`]) {
      const path = `/sign-${secret.slice(0, 4)}`;
      const hook = await owner.client.webhooks.create({ url: `${receiver.base}${path}`, events: ["payment.success"], secret });
      await owner.client.webhooks.test(hook.id, { event: "payment.success" });
      const [delivery] = await arrivals(path, 1);
      const { body, headers } = delivery as Received;
      const signed = await signWebhook(body, secret, {
        id: String(headers["webhook-id"]),
        timestamp: Number(headers["webhook-timestamp"]),
      });
      for (const name of ["x-service-signature", "webhook-id", "webhook-timestamp", "webhook-signature"]) {
        expect(signed[name], name).to.equal(headers[name]);
      }
      // A merchant's own fixture: any body, signed now, passes verifyWebhook and an independent verifier.
      const fixture = JSON.stringify({ id: "evt_fixture", event: "payment.success", timestamp: new Date().toISOString(), data: {} });
      const fixtureHeaders = await signWebhook(fixture, secret);
      expect((await verifyWebhook(fixture, fixtureHeaders, secret)).id).to.equal("evt_fixture");
      if (secret.startsWith("whsec_")) expect(() => new StandardWebhook(secret).verify(fixture, fixtureHeaders)).to.not.throw();
      expect((await refusal(verifyWebhook(fixture, await signWebhook(fixture, `${secret}x`), secret))).reason).to.equal("bad_signature");
      await owner.client.webhooks.delete(hook.id);
    }
  });

  it("list, update, deliveries, resend, replay and delete", async () => {
    const secret = randomBytes(24).toString("hex");
    const hook = await owner.client.webhooks.create({ url: `${receiver.base}/manage`, events: ["vault.withdraw"], secret });
    expect((await owner.client.webhooks.list()).map((entry) => entry.id)).to.include(hook.id);
    const updated = await owner.client.webhooks.update(hook.id, { events: ["vault.withdraw", "vault.deposit"] });
    expect(updated.events).to.deep.equal(["vault.withdraw", "vault.deposit"]);
    await owner.client.webhooks.test(hook.id, { event: "vault.withdraw" });
    const [logged] = await owner.client.webhooks.deliveries(hook.id, { limit: 5 });
    expect(logged).to.include({ event: "vault.withdraw", status: "success", statusCode: 200 });
    const resent = await owner.client.webhooks.resend(hook.id, logged!.id);
    expect(resent.delivered).to.equal(true);
    const [original, again] = await arrivals("/manage", 2);
    // A resend is the same event: the same payload id, signed anew.
    expect((await verifyWebhook(again!.body, again!.headers, secret)).id).to.equal(
      (await verifyWebhook(original!.body, original!.headers, secret)).id,
    );
    const replay = await owner.client.webhooks.replay(hook.id, { since: new Date(Date.now() - 3_600_000).toISOString() });
    expect(replay.queued).to.be.a("number");
    await owner.client.webhooks.delete(hook.id);
    expect((await owner.client.webhooks.list()).map((entry) => entry.id)).to.not.include(hook.id);
  });
});
