// Webhooks (service-spec part 4 "Webhooks", #22): the routes with part 2's shapes and part 7's
// codes, the secret sealed at rest, and a test delivery to a real receiver on 127.0.0.1 whose
// signatures are checked by independent verifiers (@octokit/webhooks-methods for
// x-service-signature, svix for the Standard Webhooks headers).
import { createHmac, randomBytes, randomUUID } from "node:crypto";
import { verify as verifyGithubStyle } from "@octokit/webhooks-methods";
import { expect } from "chai";
import fc from "fast-check";
import { Webhook as StandardWebhook } from "svix";
import { standardKeyOf, standardSecretOf } from "../../domain/webhooks/signing.js";
import { PRODUCTION_ENV, startTestApi, type TestApi } from "../helpers/api.js";
import { usingPostgres } from "../helpers/database.js";
import { expectErrorEnvelope } from "../helpers/envelope.js";
import { startIdentityProvider } from "../helpers/identity-provider.js";
import { type Received, startWebhookReceiver, type WebhookReceiver } from "../helpers/webhook-receiver.js";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SECRET = "a-shared-secret-of-32-characters";
const standardHeadersOf = (headers: Received["headers"]) => ({
  "webhook-id": headers["webhook-id"] as string,
  "webhook-timestamp": headers["webhook-timestamp"] as string,
  "webhook-signature": headers["webhook-signature"] as string,
});

describe(`webhooks (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(60_000);
  let api: TestApi;
  let receiver: WebhookReceiver;
  let alice: string;
  let bob: string;

  before(async () => {
    api = await startTestApi();
    receiver = await startWebhookReceiver();
    alice = await api.token("webhooks|alice", { name: "Alice" });
    // Alice's tests send more than the free plan's 60 requests a minute.
    const aliceId = (await api.request("GET", "/v1/users/me", { token: alice })).body.data.id;
    await api.request("PUT", `/dev/users/${aliceId}/plan`, { body: { plan: "enterprise" } });
    bob = await api.token("webhooks|bob", { name: "Bob" });
  });
  // Each test starts with no webhooks (an account holds at most 10).
  afterEach(async () => {
    await api.db.prisma.webhook.deleteMany({});
  });
  after(async () => {
    await receiver?.close();
    await api?.close();
  });

  const create = (token: string, body: Record<string, unknown>) =>
    api.request("POST", "/v1/webhooks", { token, body: { events: ["loan.funded"], secret: SECRET, ...body } });

  it("creates, lists, changes and deletes a webhook with part 2's fields, never showing the secret", async () => {
    const created = await create(alice, { url: `${receiver.base}/crud`, events: ["loan.funded", "vault.deposit", "loan.funded"] });
    expect(created.status, created.text).to.equal(201);
    const hook = created.body.data;
    expect(hook).to.have.keys(["id", "url", "events", "status", "createdAt"]);
    expect(hook).to.include({ url: `${receiver.base}/crud`, status: "active" });
    expect(hook.events).to.deep.equal(["loan.funded", "vault.deposit"]);
    expect(hook.createdAt).to.match(ISO);
    expect(created.text).to.not.include(SECRET);

    const list = await api.request("GET", "/v1/webhooks", { token: alice });
    expect(list.status).to.equal(200);
    expect(list.body.data).to.deep.equal([{ ...hook, lastDelivery: null }]);
    expect(list.text).to.not.include(SECRET);
    expect((await api.request("GET", "/v1/webhooks", { token: bob })).body.data).to.deep.equal([]);

    const patched = await api.request("PATCH", `/v1/webhooks/${hook.id}`, {
      token: alice,
      body: { events: ["loan.repaid"], status: "active" },
    });
    expect(patched.status, patched.text).to.equal(200);
    expect(patched.body.data).to.deep.equal({ id: hook.id, url: hook.url, events: ["loan.repaid"], status: "active" });

    // Another user's id, an unknown one and a malformed one are all WEBHOOK_NOT_FOUND.
    for (const [token, id] of [
      [bob, hook.id],
      [alice, randomUUID()],
      [alice, "not-an-id"],
    ] as const) {
      expectErrorEnvelope(
        await api.request("PATCH", `/v1/webhooks/${id}`, { token, body: { events: ["loan.repaid"] } }),
        404,
        "WEBHOOK_NOT_FOUND",
      );
      expectErrorEnvelope(await api.request("DELETE", `/v1/webhooks/${id}`, { token }), 404, "WEBHOOK_NOT_FOUND");
      expectErrorEnvelope(await api.request("GET", `/v1/webhooks/${id}/deliveries`, { token }), 404, "WEBHOOK_NOT_FOUND");
      expectErrorEnvelope(
        await api.request("POST", `/v1/webhooks/${id}/test`, { token, body: { event: "loan.funded" } }),
        404,
        "WEBHOOK_NOT_FOUND",
      );
    }

    const deleted = await api.request("DELETE", `/v1/webhooks/${hook.id}`, { token: alice });
    expect(deleted.status).to.equal(200);
    expect(deleted.body.message).to.equal("Webhook deleted");
    expect((await api.request("GET", "/v1/webhooks", { token: alice })).body.data).to.deep.equal([]);
  });

  it("stores the secret sealed (AES-256-GCM), not as given", async () => {
    const created = await create(alice, { url: `${receiver.base}/sealed` });
    const row = await api.db.prisma.webhook.findUniqueOrThrow({ where: { id: created.body.data.id } });
    expect(row.secret).to.match(/^v1:[A-Za-z0-9+/=]+$/);
    expect(row.secret).to.not.include(SECRET);
    expect(Buffer.from(row.secret.slice(3), "base64").toString("latin1")).to.not.include(SECRET);
    await api.request("DELETE", `/v1/webhooks/${row.id}`, { token: alice });
  });

  it("refuses bad URLs, unknown events, an empty secret, a URL registered twice and more than 10 webhooks, with part 7's codes", async () => {
    for (const url of [
      "ftp://example.com/hook",
      "not a url",
      "http://example.com/hook",
      "https://user:pass@example.com/hook",
      "https://10.0.0.1/hook",
      "https://169.254.169.254/latest/meta-data",
      `https://example.com/${"x".repeat(2_100)}`,
    ]) {
      expectErrorEnvelope(await create(alice, { url }), 400, "INVALID_URL");
    }
    const unknown = await create(alice, { url: `${receiver.base}/events`, events: ["loan.funded", "loan.exploded"] });
    expectErrorEnvelope(unknown, 400, "INVALID_EVENTS");
    expect(unknown.body.error.message).to.include("loan.exploded");
    expectErrorEnvelope(await create(alice, { url: `${receiver.base}/events`, events: [] }), 400, "VALIDATION_ERROR");
    expectErrorEnvelope(await create(alice, { url: `${receiver.base}/empty`, secret: "" }), 400, "VALIDATION_ERROR");
    expectErrorEnvelope(await create(alice, { url: `${receiver.base}/long`, secret: "s".repeat(257) }), 400, "VALIDATION_ERROR");
    expectErrorEnvelope(await create(alice, { url: `${receiver.base}/x`, extra: 1 }), 400, "VALIDATION_ERROR");
    expect(await api.db.prisma.webhook.count()).to.equal(0);

    // Ten at once: every one taken; the eleventh refused; the same URL twice refused.
    const ten = await Promise.all(Array.from({ length: 10 }, (_, i) => create(bob, { url: `${receiver.base}/bob/${i}` })));
    expect(ten.map((response) => response.status)).to.deep.equal(Array(10).fill(201));
    expectErrorEnvelope(await create(bob, { url: `${receiver.base}/bob/10` }), 409, "WEBHOOK_LIMIT_REACHED");
    await api.request("DELETE", `/v1/webhooks/${ten[0]!.body.data.id}`, { token: bob });
    expectErrorEnvelope(await create(bob, { url: `${receiver.base}/bob/1` }), 409, "URL_EXISTS");
    // Another account may register the same URL.
    expect((await create(alice, { url: `${receiver.base}/bob/1` })).status).to.equal(201);
    expect(await api.db.prisma.webhook.count({ where: { url: { startsWith: `${receiver.base}/bob/` } } })).to.equal(10);
  });

  it("judges the URL, the events and the URL's uniqueness before any other rule of the body (part 7's codes win)", async () => {
    const post = (body: Record<string, unknown>) => api.request("POST", "/v1/webhooks", { token: alice, body });
    const good = { url: `${receiver.base}/first`, events: ["loan.funded"], secret: SECRET };
    // A URL that is not valid HTTPS, whatever else is wrong: a 3-character secret, no secret, an unknown field.
    for (const url of ["http://example.com/hook", "ftp://example.com/hook", "not a url", `https://example.com/${"x".repeat(2_100)}`]) {
      for (const rest of [{ secret: "shh" }, {}, { secret: "shh", colour: "red" }, { secret: 42 }]) {
        const refused = await post({ url, events: ["loan.funded"], ...rest });
        expectErrorEnvelope(refused, 400, "INVALID_URL");
        expect(refused.body.error.details.field, url).to.equal("url");
      }
    }
    // Unknown event names, whatever else is wrong (a mistyped URL, a short or missing secret, names too long for the schema).
    for (const body of [
      { ...good, events: ["loan.exploded"], secret: "shh" },
      { url: good.url, events: ["loan.funded", "loan.exploded"] },
      { url: 42, events: ["loan.exploded"], secret: "shh" },
      { ...good, events: ["x".repeat(150)] },
    ]) {
      expectErrorEnvelope(await post(body), 400, "INVALID_EVENTS");
    }
    // A bad URL and bad events: the URL is judged first.
    expectErrorEnvelope(await post({ url: "ftp://x", events: ["loan.exploded"], secret: "shh" }), 400, "INVALID_URL");
    // Missing or mistyped fields with nothing part 7 names: VALIDATION_ERROR, naming the field.
    for (const [body, field] of [
      [{ events: ["loan.funded"], secret: SECRET }, "url"],
      [{ url: 42, events: ["loan.funded"], secret: SECRET }, "url"],
      [{ url: good.url, secret: SECRET }, "events"],
      [{ url: good.url, events: ["loan.funded"] }, "secret"],
    ] as const) {
      const refused = await post(body);
      expectErrorEnvelope(refused, 400, "VALIDATION_ERROR");
      expect(refused.body.error.details.field).to.equal(field);
    }
    expect(await api.db.prisma.webhook.count({ where: { url: { startsWith: `${receiver.base}/first` } } })).to.equal(0);

    // A URL already registered, whatever else is wrong with the body.
    const first = await post(good);
    expect(first.status, first.text).to.equal(201);
    for (const rest of [{ secret: "" }, {}, { secret: SECRET, colour: "red" }]) {
      expectErrorEnvelope(await post({ url: good.url, events: ["loan.funded"], ...rest }), 409, "URL_EXISTS");
    }
    // The same URL in another spelling is the same URL.
    expectErrorEnvelope(await post({ ...good, url: good.url.replace("http://", "HTTP://") }), 409, "URL_EXISTS");

    // PATCH and the webhook's other routes: WEBHOOK_NOT_FOUND, then INVALID_EVENTS, before the rest.
    const id = first.body.data.id as string;
    const patch = (hookId: string, body: unknown) => api.request("PATCH", `/v1/webhooks/${hookId}`, { token: alice, body });
    expectErrorEnvelope(await patch(randomUUID(), { events: ["loan.exploded"], status: "paused" }), 404, "WEBHOOK_NOT_FOUND");
    expectErrorEnvelope(await patch("x".repeat(150), { status: "paused" }), 404, "WEBHOOK_NOT_FOUND");
    expectErrorEnvelope(await patch(id, { events: ["loan.exploded"], status: "paused" }), 400, "INVALID_EVENTS");
    expectErrorEnvelope(await patch(id, { status: "paused" }), 400, "VALIDATION_ERROR");
    const test = (hookId: string, body: unknown) => api.request("POST", `/v1/webhooks/${hookId}/test`, { token: alice, body });
    expectErrorEnvelope(await test(id, { event: "x".repeat(150) }), 400, "INVALID_EVENTS");
    expectErrorEnvelope(await test(id, { event: "loan.exploded", extra: true }), 400, "INVALID_EVENTS");
    expectErrorEnvelope(await test(randomUUID(), { event: 5 }), 404, "WEBHOOK_NOT_FOUND");
    expectErrorEnvelope(
      await api.request("GET", `/v1/webhooks/${randomUUID()}/deliveries?limit=0`, { token: alice }),
      404,
      "WEBHOOK_NOT_FOUND",
    );
    expectErrorEnvelope(
      await api.request("POST", `/v1/webhooks/${randomUUID()}/rotate-secret`, { token: alice, body: { secret: "" } }),
      404,
      "WEBHOOK_NOT_FOUND",
    );
    const unchanged = (await api.request("GET", "/v1/webhooks", { token: alice })).body.data.find((hook: { id: string }) => hook.id === id);
    expect(unchanged).to.deep.include({ events: ["loan.funded"], status: "active" });
    await api.request("DELETE", `/v1/webhooks/${id}`, { token: alice });
  });

  it("takes any non-empty secret, advises on a short one, and signs with exactly it", async () => {
    const created = await create(alice, { url: `${receiver.base}/shh`, secret: "shh" });
    expect(created.status, created.text).to.equal(201);
    expect(created.body.message).to.match(/3 characters long.*24 or more random characters/);
    expect((await create(alice, { url: `${receiver.base}/long-enough` })).body).to.not.have.property("message");
    const before = receiver.received.length;
    const tested = await api.request("POST", `/v1/webhooks/${created.body.data.id}/test`, { token: alice, body: { event: "loan.funded" } });
    expect(tested.body.data).to.include({ delivered: true });
    const [{ headers, body }] = receiver.received.slice(before) as [Received];
    expect(await verifyGithubStyle("shh", body, headers["x-service-signature"] as string)).to.equal(true);
    expect(await verifyGithubStyle("shi", body, headers["x-service-signature"] as string)).to.equal(false);
    expect(() => new StandardWebhook(standardSecretOf("shh")).verify(body, standardHeadersOf(headers))).to.not.throw();
  });

  it("never turns a whsec_ secret into a weak key: one that is not base64 of 24 bytes or more signs with its own bytes", async () => {
    const weak = [`whsec_${"!".repeat(30)}`, `whsec_YWJj${"A".repeat(14)}`];
    const strong = `whsec_${randomBytes(24).toString("base64")}`;
    for (const secret of [...weak, strong]) {
      const created = await create(alice, { url: `${receiver.base}/whsec/${encodeURIComponent(secret)}`, secret });
      expect(created.status, created.text).to.equal(201);
      if (secret === strong) expect(created.body).to.not.have.property("message");
      else expect(created.body.message).to.match(/not a Standard Webhooks secret/);
      const before = receiver.received.length;
      await api.request("POST", `/v1/webhooks/${created.body.data.id}/test`, { token: alice, body: { event: "loan.funded" } });
      const [{ headers, body }] = receiver.received.slice(before) as [Received];
      const signatures = standardHeadersOf(headers);
      const signedContent = `${signatures["webhook-id"]}.${signatures["webhook-timestamp"]}.${body}`;
      const hmac = (key: Buffer) => `v1,${createHmac("sha256", key).update(signedContent).digest("base64")}`;
      if (secret === strong) {
        // A Standard Webhooks secret is what it encodes: svix verifies with it as given.
        expect(() => new StandardWebhook(secret).verify(body, signatures)).to.not.throw();
        expect(signatures["webhook-signature"]).to.equal(hmac(Buffer.from(secret.slice(6), "base64")));
      } else {
        // Keyed with the secret's own bytes, not the 0 or 13 a lenient base64 decoder makes of it.
        expect(signatures["webhook-signature"]).to.equal(hmac(Buffer.from(secret, "utf8")));
        expect(signatures["webhook-signature"]).to.not.equal(hmac(Buffer.from(secret.slice(6), "base64")));
        expect(() => new StandardWebhook(standardSecretOf(secret)).verify(body, signatures)).to.not.throw();
      }
      expect(await verifyGithubStyle(secret, body, headers["x-service-signature"] as string)).to.equal(true);
    }
    // Rotation takes the same rule: the weak whsec_ text becomes the signing secret with its own bytes.
    const hook = (await create(alice, { url: `${receiver.base}/whsec-rotated` })).body.data;
    const rotated = await api.request("POST", `/v1/webhooks/${hook.id}/rotate-secret`, { token: alice, body: { secret: weak[0] } });
    expect(rotated.status, rotated.text).to.equal(200);
    expect(rotated.body.message).to.match(/not a Standard Webhooks secret/);
    const before = receiver.received.length;
    await api.request("POST", `/v1/webhooks/${hook.id}/test`, { token: alice, body: { event: "loan.funded" } });
    const [{ headers, body }] = receiver.received.slice(before) as [Received];
    const [newest] = (headers["webhook-signature"] as string).split(" ");
    const signedContent = `${headers["webhook-id"]}.${headers["webhook-timestamp"]}.${body}`;
    expect(newest).to.equal(`v1,${createHmac("sha256", Buffer.from(weak[0]!, "utf8")).update(signedContent).digest("base64")}`);
  });

  it("derives no key shorter than the secret's own bytes, or than 24 bytes for a Standard Webhooks secret, from any secret it takes", () => {
    const secrets = fc.oneof(
      fc.string({ minLength: 1, maxLength: 256, unit: "grapheme" }),
      fc.string({ maxLength: 250 }).map((rest) => `whsec_${rest}`),
      fc.uint8Array({ maxLength: 64 }).map((bytes) => `whsec_${Buffer.from(bytes).toString("base64")}`),
      fc.uint8Array({ maxLength: 64 }).map((bytes) => `whsec_${Buffer.from(bytes).toString("base64").replace(/=+$/, "")}`),
    );
    fc.assert(
      fc.property(secrets, (secret) => {
        const key = standardKeyOf(secret);
        const own = Buffer.from(secret, "utf8");
        if (key.equals(own)) return true;
        // Otherwise it is a Standard Webhooks secret: the canonical base64 of its key, which is 24 bytes or more.
        return key.length >= 24 && secret === `whsec_${key.toString("base64")}` && standardSecretOf(secret) === secret;
      }),
      { numRuns: 2_000 },
    );
  });

  it("sends a signed test delivery that independent verifiers accept, and logs it", async () => {
    const hook = (await create(alice, { url: `${receiver.base}/signed`, events: ["vault.deposit"] })).body.data;
    const before = receiver.received.length;
    const tested = await api.request("POST", `/v1/webhooks/${hook.id}/test`, { token: alice, body: { event: "loan.repaid" } });
    expect(tested.status, tested.text).to.equal(200);
    expect(tested.body.data).to.include({ delivered: true, statusCode: 200 });
    expect(tested.body.data.duration).to.be.a("number").within(0, 5_000);

    const got = receiver.received.slice(before);
    expect(got).to.have.length(1);
    const { headers, body } = got[0]!;
    expect(headers["content-type"]).to.equal("application/json");
    const payload = JSON.parse(body);
    expect(payload).to.have.keys(["id", "event", "timestamp", "test", "data"]);
    expect(payload.test).to.equal(true);
    expect(payload).to.include({ event: "loan.repaid" });
    expect(payload.timestamp).to.match(ISO);
    expect(payload.data.test).to.equal(true);

    // x-service-signature: sha256=<hex HMAC-SHA256 of the exact body>, as GitHub-style verifiers check it.
    const signature = headers["x-service-signature"] as string;
    expect(signature).to.match(/^sha256=[0-9a-f]{64}$/);
    expect(await verifyGithubStyle(SECRET, body, signature)).to.equal(true);
    expect(await verifyGithubStyle(SECRET, body.replace("loan.repaid", "loan.funded"), signature)).to.equal(false);
    expect(await verifyGithubStyle("another-secret-of-enough-length", body, signature)).to.equal(false);

    // Standard Webhooks: svix's verifier with the secret turned into a whsec_ one; the id is the payload's.
    expect(headers["webhook-id"]).to.equal(payload.id);
    expect(Math.abs(Number(headers["webhook-timestamp"]) - Date.now() / 1000)).to.be.below(10);
    const standard = new StandardWebhook(standardSecretOf(SECRET));
    const standardHeaders = {
      "webhook-id": headers["webhook-id"] as string,
      "webhook-timestamp": headers["webhook-timestamp"] as string,
      "webhook-signature": headers["webhook-signature"] as string,
    };
    expect(() => standard.verify(body, standardHeaders)).to.not.throw();
    expect(() => standard.verify(`${body} `, standardHeaders)).to.throw();

    const log = await api.request("GET", `/v1/webhooks/${hook.id}/deliveries?limit=5`, { token: alice });
    expect(log.status).to.equal(200);
    expect(log.body.data).to.have.length(1);
    expect(log.body.data[0]).to.have.keys(["id", "event", "status", "statusCode", "timestamp", "duration"]);
    expect(log.body.data[0]).to.include({ event: "loan.repaid", status: "success", statusCode: 200 });
    const listed = (await api.request("GET", "/v1/webhooks", { token: alice })).body.data.find(
      (entry: { id: string }) => entry.id === hook.id,
    );
    expect(listed.lastDelivery).to.deep.equal({ timestamp: log.body.data[0].timestamp, status: "success" });
    expectErrorEnvelope(
      await api.request("POST", `/v1/webhooks/${hook.id}/test`, { token: alice, body: { event: "loan.exploded" } }),
      400,
      "INVALID_EVENTS",
    );
    expectErrorEnvelope(await api.request("GET", `/v1/webhooks/${hook.id}/deliveries?limit=0`, { token: alice }), 400, "VALIDATION_ERROR");
  });

  it("records a failed answer and never follows a redirect", async () => {
    const failing = (await create(alice, { url: `${receiver.base}/down` })).body.data;
    receiver.answers.set("/down", (res) => res.writeHead(503).end("down"));
    const down = await api.request("POST", `/v1/webhooks/${failing.id}/test`, { token: alice, body: { event: "loan.funded" } });
    expect(down.body.data).to.include({ delivered: false, statusCode: 503 });

    const moved = (await create(alice, { url: `${receiver.base}/moved` })).body.data;
    receiver.answers.set("/moved", (res) => res.writeHead(302, { location: `${receiver.base}/target` }).end());
    const redirected = await api.request("POST", `/v1/webhooks/${moved.id}/test`, { token: alice, body: { event: "loan.funded" } });
    expect(redirected.body.data).to.include({ delivered: false, statusCode: 302 });
    expect(receiver.received.filter((entry) => entry.path === "/target")).to.deep.equal([]);

    const [downLog] = (await api.request("GET", `/v1/webhooks/${failing.id}/deliveries`, { token: alice })).body.data;
    expect(downLog).to.include({ status: "failed", statusCode: 503, error: "HTTP 503" });
    const [movedLog] = (await api.request("GET", `/v1/webhooks/${moved.id}/deliveries`, { token: alice })).body.data;
    expect(movedLog).to.include({ status: "failed", statusCode: 302, error: "redirect not followed (HTTP 302)" });
  });

  it("keeps 30 days of the deliveries log: the prune job deletes older attempts", async () => {
    const hook = (await create(alice, { url: `${receiver.base}/retention` })).body.data;
    const now = api.clock.now();
    const logged = (daysAgo: number) => ({
      webhookId: hook.id,
      eventId: randomUUID(),
      event: "loan.funded",
      attempt: 1,
      status: "success",
      statusCode: 200,
      durationMs: 3,
      error: null,
      createdAt: new Date(now.getTime() - daysAgo * 86_400_000),
    });
    await api.db.prisma.webhookDelivery.createMany({ data: [logged(31), logged(29)].map((row) => ({ id: randomUUID(), ...row })) });
    expect(await api.services.webhooks.pruneLog(now)).to.equal(1);
    const left = (await api.request("GET", `/v1/webhooks/${hook.id}/deliveries`, { token: alice })).body.data;
    expect(left).to.have.length(1);
    expect(new Date(left[0].timestamp).getTime()).to.equal(now.getTime() - 29 * 86_400_000);
  });

  it("keeps showing a logged delivery whose event name a later release took off the list, and refuses to resend it", async () => {
    const hook = (await create(alice, { url: `${receiver.base}/retired` })).body.data;
    const id = randomUUID();
    const at = api.clock.now();
    await api.db.prisma.webhookDelivery.create({
      data: {
        id,
        webhookId: hook.id,
        eventId: randomUUID(),
        event: "loan.retired_name",
        attempt: 1,
        status: "success",
        statusCode: 200,
        durationMs: 4,
        error: null,
        createdAt: at,
      },
    });
    const log = await api.request("GET", `/v1/webhooks/${hook.id}/deliveries`, { token: alice });
    expect(log.status, log.text).to.equal(200);
    expect(log.body.data).to.deep.equal([
      { id, event: "loan.retired_name", status: "success", statusCode: 200, timestamp: at.toISOString(), duration: 4 },
    ]);
    const list = await api.request("GET", "/v1/webhooks", { token: alice });
    expect(list.status, list.text).to.equal(200);
    expect(list.body.data.find((entry: { id: string }) => entry.id === hook.id).lastDelivery).to.deep.include({ status: "success" });
    const resend = await api.request("POST", `/v1/webhooks/${hook.id}/deliveries/${id}/resend`, { token: alice });
    expectErrorEnvelope(resend, 400, "INVALID_EVENTS");
    expect(resend.body.error.message).to.include("loan.retired_name");
  });
});

describe(`webhooks in production (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(60_000);
  let api: TestApi;
  let idp: Awaited<ReturnType<typeof startIdentityProvider>>;

  before(async () => {
    idp = await startIdentityProvider();
    api = await startTestApi({ env: { ...PRODUCTION_ENV, ...idp.env } });
  });
  after(async () => {
    await api?.close();
    await idp?.close();
  });

  it("refuses URLs whose IPv6 address embeds a loopback, private or metadata IPv4 address (INVALID_URL), and takes public ones", async () => {
    const token = await idp.token("production|webhooks");
    const create = (url: string) =>
      api.request("POST", "/v1/webhooks", { token, body: { url, events: ["loan.funded"], secret: "a-production-secret-of-24+" } });
    for (const url of [
      "https://[::127.0.0.1]:8443/hook",
      "https://[::7f00:1]/hook",
      "https://[::ffff:127.0.0.1]/hook",
      "https://[::ffff:0:10.0.0.1]/hook",
      "https://[64:ff9b::169.254.169.254]/latest/meta-data",
      "https://[64:ff9b:1::a00:1]/hook",
      "https://[2002:a9fe:a9fe::1]/hook",
      "https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook",
      "http://127.0.0.1/hook",
    ]) {
      const refused = await create(url);
      expectErrorEnvelope(refused, 400, "INVALID_URL");
      expect(refused.body.error.details.field, url).to.equal("url");
    }
    expect(await api.db.prisma.webhook.count()).to.equal(0);
    const created = await create("https://[64:ff9b::808:808]/hook");
    expect(created.status, created.text).to.equal(201);
  });
});
