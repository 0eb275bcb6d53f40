// Domain events delivered to webhooks (#22) by the platform workers: who receives which event,
// the signed payload with the event's id, the six attempts at 0, 1 min, 5 min, 30 min, 2 h and
// 24 h on the service clock, then `failing` (no new event queued), revived by PATCH status
// active; a 503's Retry-After honoured where it asks for longer than the schedule.
import { randomUUID } from "node:crypto";
import type http from "node:http";
import { verify as verifyGithubStyle } from "@octokit/webhooks-methods";
import { expect } from "chai";
import { Webhook as StandardWebhook } from "svix";
import { createLogger } from "../../core/logger.js";
import type { Tx } from "../../domain/db.js";
import type { EventType } from "../../domain/events/catalogue.js";
import { domainEvent, recordEvents } from "../../domain/events/outbox.js";
import { standardSecretOf } from "../../domain/webhooks/signing.js";
import { startPlatformWorkers } from "../../worker/jobs.js";
import type { Workers } from "../../worker/scheduler.js";
import { startTestApi, type TestApi } from "../helpers/api.js";
import { usingPostgres } from "../helpers/database.js";
import { expectErrorEnvelope } from "../helpers/envelope.js";
import { sleep, until } from "../helpers/waiting.js";
import { type Received, startWebhookReceiver, type WebhookReceiver } from "../helpers/webhook-receiver.js";

const SECRET = "delivery-test-secret-0123456789";
const ADDRESS = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;

describe(`webhook deliveries from domain events (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(120_000);
  let api: TestApi;
  let workers: Workers;
  let receiver: WebhookReceiver;
  let base: string;
  let alice: string;
  let bob: string;
  let aliceId: string;
  let bobId: string;

  before(async () => {
    receiver = await startWebhookReceiver({ now: () => api.clock.now().getTime() });
    base = receiver.base;
    api = await startTestApi();
    workers = startPlatformWorkers({ services: api.services, clock: api.clock, logger: createLogger("silent"), tickMs: 100 });
    alice = await api.token("deliveries|alice", { name: "Alice" });
    bob = await api.token("deliveries|bob", { name: "Bob" });
    aliceId = (await api.request("GET", "/v1/users/me", { token: alice })).body.data.id;
    bobId = (await api.request("GET", "/v1/users/me", { token: bob })).body.data.id;
  });
  after(async () => {
    await workers?.stop();
    await api?.close();
    await receiver?.close();
  });

  const subscribe = async (token: string, path: string, events: string[]) => {
    const created = await api.request("POST", "/v1/webhooks", { token, body: { url: `${base}${path}`, events, secret: SECRET } });
    expect(created.status, created.text).to.equal(201);
    return created.body.data.id as string;
  };
  /** Records one event through the outbox writer; answers its id. */
  async function record(type: EventType, userId: string | null, data: Record<string, unknown>): Promise<string> {
    const dedupeKey = `webhook-test:${randomUUID()}`;
    await api.db.prisma.$transaction((tx) =>
      recordEvents(tx, [domainEvent({ type, userId, data: data as never, dedupeKey, now: api.clock.now() } as never)]),
    );
    return (await api.db.prisma.domainEvent.findUniqueOrThrow({ where: { dedupeKey } })).id;
  }
  /**
   * Alice's level-ups named `<prefix><i>` for each of `names`, in one transaction (one fan-out page:
   * one batch job), with `alsoInside` run in it; answers their ids, in order.
   */
  async function levelUpsAtOnce(prefix: string, names: string[], alsoInside?: (tx: Tx, keys: string[]) => Promise<unknown>) {
    const keys = names.map((name) => `webhook-test:${prefix}:${name}:${randomUUID()}`);
    await api.db.prisma.$transaction(async (tx) => {
      await recordEvents(
        tx,
        keys.map((dedupeKey, i) =>
          domainEvent({
            type: "user.level_up",
            userId: aliceId,
            data: { userId: aliceId, level: `${prefix}${i}`, previousLevel: "Newcomer", xp: i, timestamp: new Date().toISOString() },
            dedupeKey,
            now: api.clock.now(),
          }),
        ),
      );
      await alsoInside?.(tx, keys);
    });
    return Promise.all(keys.map(async (dedupeKey) => (await api.db.prisma.domainEvent.findUniqueOrThrow({ where: { dedupeKey } })).id));
  }
  const levelUp = (userId: string, level: string) =>
    record("user.level_up", userId, { userId, level, previousLevel: "Newcomer", xp: 120, timestamp: new Date().toISOString() });
  const hitsOf = (path: string) => receiver.of(path);
  /** The webhook's delivery job has recorded its n-th attempt's outcome (the receiver saw it a moment before). */
  const recorded = (webhookId: string, attempts: number) =>
    until(async () => {
      const job = await api.db.prisma.job.findFirst({
        where: { dedupeKey: { startsWith: `webhook:${webhookId}:` } },
        orderBy: { createdAt: "desc" },
      });
      return job !== null && job.attempts === attempts && job.status !== "running";
    }, `attempt ${attempts} recorded`);

  it("delivers an event to its user's subscribed webhooks only, signed, with the event's id", async () => {
    await subscribe(alice, "/alice/levels", ["user.level_up"]);
    await subscribe(alice, "/alice/loans", ["loan.funded"]);
    await subscribe(bob, "/bob/levels", ["user.level_up"]);
    const eventId = await levelUp(aliceId, "Saver");
    await until(() => hitsOf("/alice/levels").length === 1, "alice's delivery");
    await sleep(300);
    expect(hitsOf("/alice/loans")).to.deep.equal([]);
    expect(hitsOf("/bob/levels")).to.deep.equal([]);
    const [hit] = hitsOf("/alice/levels");
    const payload = JSON.parse(hit!.body);
    expect(payload).to.deep.include({ id: eventId, event: "user.level_up" });
    expect(payload.data).to.include({ userId: aliceId, level: "Saver", previousLevel: "Newcomer", xp: 120 });
    expect(payload.data).to.not.have.property("raw");
    expect(hit!.headers["webhook-id"]).to.equal(eventId);
    expect(await verifyGithubStyle(SECRET, hit!.body, hit!.headers["x-service-signature"] as string)).to.equal(true);
  });

  it("still delivers a job queued before batches (a flat payload of one event)", async () => {
    const webhookId = await subscribe(alice, "/flat", ["user.level_up"]);
    const eventId = await levelUp(aliceId, "Flat");
    await until(() => hitsOf("/flat").length === 1, "the event's delivery");
    // The same event queued again the way a version before batches queued it.
    await api.services.jobs.enqueue({
      kind: "webhook.delivery",
      payload: { webhookId, eventId, event: "user.level_up" },
      maxAttempts: 6,
      dedupeKey: `webhook-test:flat:${eventId}`,
    });
    await until(() => hitsOf("/flat").length === 2, "the flat job's delivery");
    expect(JSON.parse(hitsOf("/flat")[1]!.body)).to.deep.include({ id: eventId, event: "user.level_up" });
    expect((await api.request("DELETE", `/v1/webhooks/${webhookId}`, { token: alice })).status).to.equal(200);
  });

  it("skips an event whose stored data no longer matches the catalogue, and delivers the rest of its batch", async () => {
    const webhookId = await subscribe(alice, "/stale", ["user.level_up"]);
    const ids = await levelUpsAtOnce(
      "Stale",
      ["first", "stale", "last"],
      (tx, keys) =>
        // As an older version might have written it.
        tx.$executeRaw`UPDATE "DomainEvent" SET "data" = '{"stale": true}'::jsonb WHERE "dedupeKey" = ${keys[1]}`,
    );
    await until(() => hitsOf("/stale").length === 2, "the two sendable events");
    await recorded(webhookId, 1);
    await sleep(300);
    expect(hitsOf("/stale").map((hit) => JSON.parse(hit.body).id)).to.deep.equal([ids[0], ids[2]]);
    const job = await api.db.prisma.job.findFirstOrThrow({ where: { dedupeKey: { startsWith: `webhook:${webhookId}:` } } });
    expect(job.status).to.equal("succeeded");
    expect((await api.request("DELETE", `/v1/webhooks/${webhookId}`, { token: alice })).status).to.equal(200);
  });

  it("retries a batch's failed item alone on the schedule, with its attempt number, and sends the items after it at once", async () => {
    const webhookId = await subscribe(alice, "/split", ["user.level_up"]);
    let ids: string[] = [];
    let failing = true;
    receiver.fallback = (res, request) => {
      const refused = request.path === "/split" && failing && JSON.parse(request.body).id === ids[1];
      res.writeHead(refused ? 503 : 200).end();
    };
    try {
      ids = await levelUpsAtOnce("Split", ["first", "failing", "last"]);
      await until(() => hitsOf("/split").length === 3, "the three first attempts");
      expect(hitsOf("/split").map((hit) => JSON.parse(hit.body).id)).to.deep.equal(ids);
      failing = false;
      // The failed one waits its minute on the service clock; the others are not sent again.
      await api.clock.advance(59);
      await sleep(400);
      expect(hitsOf("/split")).to.have.length(3);
      await api.clock.advance(1);
      await until(() => hitsOf("/split").length === 4, "the failed one's second attempt");
      expect(JSON.parse(hitsOf("/split")[3]!.body).id).to.equal(ids[1]);
      await sleep(300);
      const attempts = await api.db.prisma.webhookDelivery.findMany({
        where: { webhookId },
        orderBy: [{ eventId: "asc" }, { attempt: "asc" }],
      });
      const byEvent = (id: string) => attempts.filter((row) => row.eventId === id).map((row) => [row.attempt, row.status, row.statusCode]);
      expect(byEvent(ids[0]!)).to.deep.equal([[1, "success", 200]]);
      expect(byEvent(ids[1]!)).to.deep.equal([
        [1, "failed", 503],
        [2, "success", 200],
      ]);
      expect(byEvent(ids[2]!)).to.deep.equal([[1, "success", 200]]);
    } finally {
      receiver.fallback = undefined;
    }
    expect((await api.request("DELETE", `/v1/webhooks/${webhookId}`, { token: alice })).status).to.equal(200);
  });

  it("delivers to a webhook only the events recorded after it was created", async () => {
    // No webhook hears trust_score.updated yet: the consumer leaves this event alone...
    const change = (previousScore: number) =>
      record("trust_score.updated", aliceId, {
        userId: aliceId,
        previousScore,
        newScore: previousScore + 5,
        change: 5,
        reason: "repayment",
        timestamp: new Date().toISOString(),
      });
    await change(40);
    await sleep(300);
    // ...and the webhook subscribed after it never receives it, only what comes after.
    await subscribe(alice, "/late", ["trust_score.updated"]);
    const after = await change(45);
    await until(() => hitsOf("/late").length === 1, "the later event's delivery");
    await sleep(500);
    expect(hitsOf("/late").map((hit) => JSON.parse(hit.body).id)).to.deep.equal([after]);
  });

  it("tells every subscriber of vault.yield_distributed, and a lock to the owner's webhooks and, from their alert, the guardians'", async () => {
    await subscribe(alice, "/alice/yield", ["vault.yield_distributed"]);
    await subscribe(bob, "/bob/yield", ["vault.yield_distributed", "social_vault.locked"]);
    await subscribe(alice, "/alice/locks", ["social_vault.locked"]);
    await record("vault.yield_distributed", null, {
      amount: "5.00",
      totalYield: "5.00",
      newExchangeRate: 1.05,
      txHash: `0x${"ab".repeat(32)}`,
      raw: { amount: 5_000_000n, totalYield: 5_000_000n, exchangeRate: 1_050_000n },
    });
    await until(() => hitsOf("/alice/yield").length === 1 && hitsOf("/bob/yield").length === 1, "both yield deliveries");
    // Alice's vault is locked: the chain fact goes to her own webhooks; Bob, her guardian, gets his alert.
    const lockedAt = new Date().toISOString();
    const lockId = await record("social_vault.locked", aliceId, { vaultOwner: aliceId, vaultAddress: ADDRESS(7), lockedAt });
    const alertId = await record("social_vault.guardian_alert", bobId, {
      vaultAddress: ADDRESS(7),
      vaultOwner: aliceId,
      guardianAddress: ADDRESS(8),
      reason: "locked",
      lockedAt,
    });
    await until(() => hitsOf("/bob/yield").length === 2 && hitsOf("/alice/locks").length === 1, "both lock deliveries");
    await sleep(300);
    expect(hitsOf("/alice/locks")).to.have.length(1);
    const ownLock = JSON.parse(hitsOf("/alice/locks")[0]!.body);
    expect(ownLock).to.deep.include({ id: lockId, event: "social_vault.locked" });
    expect(ownLock.data).to.deep.equal({ vaultOwner: aliceId, vaultAddress: ADDRESS(7), lockedAt });
    const lock = JSON.parse(hitsOf("/bob/yield")[1]!.body);
    expect(lock).to.deep.include({ id: alertId, event: "social_vault.locked" });
    expect(lock.data).to.deep.equal({ vaultOwner: aliceId, vaultAddress: ADDRESS(7), lockedAt });
  });

  it("attempts six times on the schedule of the service clock, then turns failing; PATCH status active revives it", async () => {
    const id = await subscribe(alice, "/flaky", ["user.level_up"]);
    receiver.answers.set("/flaky", (res) => res.writeHead(500).end());
    const started = api.clock.now().getTime();
    await levelUp(aliceId, "Builder");
    await until(() => hitsOf("/flaky").length === 1, "the first attempt");
    await recorded(id, 1);
    // Each delay, a second short and then reached: the attempt comes only once it is due.
    for (const [n, delaySeconds] of [60, 300, 1_800, 7_200, 86_400].entries()) {
      await api.clock.advance(delaySeconds - 1);
      await sleep(400);
      expect(hitsOf("/flaky"), `attempt ${n + 2} early`).to.have.length(n + 1);
      await api.clock.advance(1);
      await until(() => hitsOf("/flaky").length === n + 2, `attempt ${n + 2}`);
      await recorded(id, n + 2);
    }
    // Each gap is its delay (plus the real time the attempt and this test's waits took).
    const at = hitsOf("/flaky").map((hit) => hit.at);
    const gaps = at.slice(1).map((time, i) => (time - at[i]!) / 1000);
    for (const [i, delay] of [60, 300, 1_800, 7_200, 86_400].entries()) expect(gaps[i], `gap ${i + 1}`).to.be.within(delay, delay + 3);
    expect(at[0]! - started).to.be.below(5_000);
    // A day has passed on the service clock: the morning's token has expired.
    alice = await api.token("deliveries|alice", { name: "Alice" });
    await until(async () => (await api.db.prisma.webhook.findUniqueOrThrow({ where: { id } })).status === "failing", "failing");
    const listed = (await api.request("GET", "/v1/webhooks", { token: alice })).body.data.find((hook: { id: string }) => hook.id === id);
    expect(listed).to.include({ status: "failing" });
    expect(listed.lastDelivery.status).to.equal("failed");
    const log = (await api.request("GET", `/v1/webhooks/${id}/deliveries?limit=10`, { token: alice })).body.data;
    expect(log).to.have.length(6);
    expect(log.every((entry: { status: string; statusCode: number }) => entry.status === "failed" && entry.statusCode === 500)).to.equal(
      true,
    );

    // Its owner hears about it: in the app, and by e-mail (a delivery job for the row).
    await until(
      async () => (await api.request("GET", "/v1/notifications?type=webhook_failing", { token: alice })).body.data.length === 1,
      "the owner's notification",
    );
    const [notice] = (await api.request("GET", "/v1/notifications?type=webhook_failing", { token: alice })).body.data;
    expect(notice).to.include({ type: "webhook_failing", title: "Webhook failing" });
    expect(notice.body).to.include(`${base}/flaky`);
    expect(notice.data).to.deep.equal({ webhookId: id });
    expect(
      await api.db.prisma.job.count({ where: { kind: "notification.email", payload: { equals: { notificationId: notice.id } } } }),
    ).to.equal(1);

    // Failing: a new event is not queued for it.
    receiver.answers.delete("/flaky");
    await levelUp(aliceId, "Investor");
    await sleep(600);
    expect(hitsOf("/flaky")).to.have.length(6);
    const revived = await api.request("PATCH", `/v1/webhooks/${id}`, { token: alice, body: { status: "active" } });
    expect(revived.body.data).to.include({ status: "active" });
    await levelUp(aliceId, "Patron");
    await until(() => hitsOf("/flaky").length === 7, "the delivery after the revival");
    expect(JSON.parse(hitsOf("/flaky")[6]!.body).data.level).to.equal("Patron");
  });

  it("waits as long as a 503's Retry-After asks when that is longer than the schedule", async () => {
    bob = await api.token("deliveries|bob", { name: "Bob" });
    const id = await subscribe(bob, "/busy", ["user.level_up"]);
    let calls = 0;
    receiver.answers.set("/busy", (res) => {
      calls += 1;
      if (calls === 1) res.writeHead(503, { "retry-after": "600" }).end();
      else res.writeHead(200).end();
    });
    await levelUp(bobId, "Saver");
    await until(() => hitsOf("/busy").length === 1, "the first attempt");
    await recorded(id, 1);
    await api.clock.advance(60);
    await sleep(400);
    expect(hitsOf("/busy")).to.have.length(1);
    await api.clock.advance(540);
    await until(() => hitsOf("/busy").length === 2, "the attempt after Retry-After");
  });

  it("lets a receiver that hangs hold at most 4 deliveries, so another webhook's goes at once", async () => {
    bob = await api.token("deliveries|bob", { name: "Bob" });
    alice = await api.token("deliveries|alice", { name: "Alice" });
    const hangId = await subscribe(bob, "/hang", ["user.level_up"]);
    await subscribe(alice, "/quick", ["user.level_up"]);
    const hanging: http.ServerResponse[] = [];
    receiver.answers.set("/hang", (res) => hanging.push(res));
    // One event at a time, each its own delivery job: four are held, the others wait for a slot.
    for (let i = 0; i < 8; i += 1) {
      await levelUp(bobId, `Hang ${i}`);
      if (i < 4) await until(() => hitsOf("/hang").length === i + 1, `delivery ${i + 1} to the hanging receiver`);
    }
    await sleep(300);
    expect(hitsOf("/hang"), "a fifth delivery while four hang").to.have.length(4);
    // The four that wait for a slot gathered in one job: each event joined the batch already waiting.
    const waiting = await api.db.prisma.job.findMany({
      where: { kind: "webhook.delivery", status: "queued", concurrencyKey: `webhook:${hangId}` },
    });
    expect(waiting.map((job) => (job.payload as { items: unknown[] }).items.length)).to.deep.equal([4]);
    const quickEvent = await levelUp(aliceId, "Quick");
    const started = performance.now();
    await until(() => hitsOf("/quick").some((hit) => JSON.parse(hit.body).id === quickEvent), "the other webhook's delivery", 3_000);
    // It did not wait for the hanging ones (5 s each): they are still held, and no fifth was sent.
    expect(performance.now() - started).to.be.below(3_000);
    expect(hitsOf("/hang")).to.have.length(4);
    for (const res of hanging) res.writeHead(200).end();
    receiver.answers.delete("/hang");
  });

  describe("what users reach for when a receiver was down", () => {
    beforeEach(async () => {
      // Earlier tests moved the service clock by days: tokens are minted again.
      alice = await api.token("deliveries|alice", { name: "Alice" });
    });

    it("resends one logged delivery now, with the same id, as its next attempt", async () => {
      const id = await subscribe(alice, "/resend", ["user.level_up"]);
      receiver.answers.set("/resend", (res) => res.writeHead(500).end());
      const eventId = await levelUp(aliceId, "Resent");
      await until(() => hitsOf("/resend").length === 1, "the first attempt");
      await recorded(id, 1);
      receiver.answers.delete("/resend");
      const [failed] = (await api.request("GET", `/v1/webhooks/${id}/deliveries`, { token: alice })).body.data;
      expect(failed).to.include({ status: "failed", statusCode: 500 });
      const resent = await api.request("POST", `/v1/webhooks/${id}/deliveries/${failed.id}/resend`, { token: alice });
      expect(resent.status, resent.text).to.equal(200);
      expect(resent.body.data).to.include({ delivered: true, statusCode: 200 });
      expect(JSON.parse(hitsOf("/resend")[1]!.body).id).to.equal(eventId);
      const log = await api.db.prisma.webhookDelivery.findMany({ where: { webhookId: id }, orderBy: { attempt: "asc" } });
      expect(log.map((row) => [row.attempt, row.status])).to.deep.equal([
        [1, "failed"],
        [2, "success"],
      ]);
      expectErrorEnvelope(
        await api.request("POST", `/v1/webhooks/${id}/deliveries/${randomUUID()}/resend`, { token: alice }),
        404,
        "NOT_FOUND",
      );
      expectErrorEnvelope(
        await api.request("POST", `/v1/webhooks/${id}/deliveries/${failed.id}/resend`, { token: bob }),
        404,
        "WEBHOOK_NOT_FOUND",
      );
    });

    it("replays every subscribed event since a time to an active webhook", async () => {
      const since = api.clock.now().toISOString();
      const id = await subscribe(alice, "/replay", ["user.level_up"]);
      const first = await levelUp(aliceId, "One");
      const second = await levelUp(aliceId, "Two");
      await until(() => hitsOf("/replay").length === 2, "the two deliveries");
      const replayed = await api.request("POST", `/v1/webhooks/${id}/replay`, { token: alice, body: { since } });
      expect(replayed.status, replayed.text).to.equal(202);
      expect(replayed.body.data).to.deep.equal({ queued: 2 });
      await until(() => hitsOf("/replay").length === 4, "the replayed deliveries");
      // Replayed with their own ids (deliveries run side by side: their order is not kept).
      expect(
        hitsOf("/replay")
          .slice(2)
          .map((hit) => JSON.parse(hit.body).id)
          .sort(),
      ).to.deep.equal([first, second].sort());
      const future = new Date(api.clock.now().getTime() + 60_000).toISOString();
      expectErrorEnvelope(
        await api.request("POST", `/v1/webhooks/${id}/replay`, { token: alice, body: { since: future } }),
        400,
        "VALIDATION_ERROR",
      );
      expectErrorEnvelope(
        await api.request("POST", `/v1/webhooks/${id}/replay`, { token: alice, body: { since: "yesterday" } }),
        400,
        "VALIDATION_ERROR",
      );
      await api.db.prisma.webhook.update({ where: { id }, data: { status: "failing" } });
      expectErrorEnvelope(await api.request("POST", `/v1/webhooks/${id}/replay`, { token: alice, body: { since } }), 409, "CONFLICT");
    });

    it("rotates the secret: both sign for 24 hours, the new one alone after", async () => {
      const NEW = "the-rotated-secret-0123456789abc";
      const id = await subscribe(alice, "/rotating", ["user.level_up"]);
      const rotated = await api.request("POST", `/v1/webhooks/${id}/rotate-secret`, { token: alice, body: { secret: NEW } });
      expect(rotated.status, rotated.text).to.equal(200);
      expect(new Date(rotated.body.data.previousSecretExpiresAt).getTime() - api.clock.now().getTime()).to.be.within(
        86_390_000,
        86_400_000,
      );
      expect(rotated.text).to.not.include(NEW);
      await levelUp(aliceId, "Rotated");
      await until(() => hitsOf("/rotating").length === 1, "the delivery during the overlap");
      const during = hitsOf("/rotating")[0]!;
      const values = (during.headers["x-service-signature"] as string).split(" ");
      expect(values).to.have.length(2);
      expect(await verifyGithubStyle(NEW, during.body, values[0]!)).to.equal(true);
      expect(await verifyGithubStyle(SECRET, during.body, values[1]!)).to.equal(true);
      expect((during.headers["webhook-signature"] as string).split(" ")).to.have.length(2);
      const standardHeaders = (hit: Received) => ({
        "webhook-id": hit.headers["webhook-id"] as string,
        "webhook-timestamp": hit.headers["webhook-timestamp"] as string,
        "webhook-signature": hit.headers["webhook-signature"] as string,
      });
      for (const secret of [NEW, SECRET]) {
        expect(() => new StandardWebhook(standardSecretOf(secret)).verify(during.body, standardHeaders(during))).to.not.throw();
      }

      await api.clock.advance(86_401);
      alice = await api.token("deliveries|alice", { name: "Alice" });
      await levelUp(aliceId, "After");
      await until(() => hitsOf("/rotating").length === 2, "the delivery after the overlap");
      const after = hitsOf("/rotating")[1]!;
      expect(await verifyGithubStyle(NEW, after.body, after.headers["x-service-signature"] as string)).to.equal(true);
      expect(() => new StandardWebhook(standardSecretOf(NEW)).verify(after.body, standardHeaders(after))).to.not.throw();
      expect(() => new StandardWebhook(standardSecretOf(SECRET)).verify(after.body, standardHeaders(after))).to.throw();
    });
  });
});
