// Webhooks (service-spec part 4 "Webhooks", #22): the routes with part 2's shapes and part 7's
// codes, the secret sealed at rest, and a test delivery to a real receiver on 127.0.0.1 whose
// signatures are checked by independent verifiers (@octokit/webhooks-methods for
// x-service-signature, svix for the Standard Webhooks headers).
import { randomUUID } from "node:crypto";
import { verify as verifyGithubStyle } from "@octokit/webhooks-methods";
import { expect } from "chai";
import { Webhook as StandardWebhook } from "svix";
import { standardSecretOf } from "../../domain/webhooks/signing.js";
import { startTestApi, type TestApi } from "../helpers/api.js";
import { usingPostgres } from "../helpers/database.js";
import { expectErrorEnvelope } from "../helpers/envelope.js";
import { startWebhookReceiver, type WebhookReceiver } from "../helpers/webhook-receiver.js";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SECRET = "a-shared-secret-of-32-characters";

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
    bob = await api.token("webhooks|bob", { name: "Bob" });
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

  it("refuses bad URLs, unknown events, a short secret, a URL registered twice and more than 10 webhooks, with part 7's codes", async () => {
    for (const url of [
      "ftp://example.com/hook",
      "not a url",
      "http://example.com/hook",
      "https://user:pass@example.com/hook",
      "https://10.0.0.1/hook",
      "https://169.254.169.254/latest/meta-data",
      `https://example.com/${"x".repeat(2_100)}`,
    ]) {
      const refused = await create(alice, { url });
      expectErrorEnvelope(refused, 400, url.length > 2_049 ? "VALIDATION_ERROR" : "INVALID_URL");
    }
    const unknown = await create(alice, { url: `${receiver.base}/events`, events: ["loan.funded", "loan.exploded"] });
    expectErrorEnvelope(unknown, 400, "INVALID_EVENTS");
    expect(unknown.body.error.message).to.include("loan.exploded");
    expectErrorEnvelope(await create(alice, { url: `${receiver.base}/events`, events: [] }), 400, "VALIDATION_ERROR");
    expectErrorEnvelope(await create(alice, { url: `${receiver.base}/short`, secret: "short" }), 400, "VALIDATION_ERROR");
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
    expect(payload).to.have.keys(["id", "event", "timestamp", "data"]);
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
});
