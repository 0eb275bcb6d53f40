import { randomUUID } from "node:crypto";
import type http from "node:http";
import { expect } from "chai";
import { domainEvent, recordEvents } from "../../domain/events/outbox.js";
import { startTestApi, type TestApi } from "../helpers/api.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";
import { waitFor } from "../helpers/mirror.js";
import { type StackProcess, startStack } from "../helpers/stack.js";
import { startWebhookReceiver, type WebhookReceiver } from "../helpers/webhook-receiver.js";

// Real `npm run worker` processes on one PostgreSQL deliver webhook events: two of them never
// make one attempt twice, and a worker killed in the middle of a delivery leaves it to the other,
// which delivers it after the first stops beating (the event's id unchanged, so the receiver
// drops the repeat). PGlite lives in one process, so this runs on PostgreSQL only.

if (usingPostgres) {
  describe("webhook deliveries by several worker processes (PostgreSQL)", function () {
    this.timeout(180_000);
    let db: TestDatabase;
    let api: TestApi;
    let receiver: WebhookReceiver;
    let base: string;
    const children: StackProcess[] = [];
    /** Deliveries answered 200: `<path> <event id>`. */
    const answered: string[] = [];
    /** While set, the receiver holds requests without answering (a delivery in flight). */
    let hang = false;
    let answerDelayMs = 0;
    const held: http.ServerResponse[] = [];
    const SECRET = "worker-test-secret-0123456789abcd";

    before(async () => {
      receiver = await startWebhookReceiver();
      receiver.fallback = (res, request) => {
        if (hang) {
          held.push(res);
          return;
        }
        // Each answer takes a while, so one worker's slots cannot hold every webhook's share.
        setTimeout(() => {
          answered.push(`${request.path} ${JSON.parse(request.body).id}`);
          res.writeHead(200).end();
        }, answerDelayMs);
      };
      base = receiver.base;
      db = await createTestDatabase();
      // The API registers the webhooks; only the worker processes fan out and deliver.
      api = await startTestApi({ db });
    });
    after(async () => {
      for (const child of children) await child.stop("SIGKILL");
      for (const res of held) res.destroy();
      await receiver?.close();
      await api?.close();
      await db?.destroy();
    });

    const workerEnv = () => ({ DATABASE_URL: db.url!, CHAIN_RPC_URL: "" });
    async function userWithWebhook(name: string, path: string) {
      const token = await api.token(name, { expiresIn: 86_400 });
      const id = (await api.request("GET", "/v1/users/me", { token })).body.data.id as string;
      const created = await api.request("POST", "/v1/webhooks", {
        token,
        body: { url: `${base}${path}`, events: ["user.level_up"], secret: SECRET },
      });
      expect(created.status, created.text).to.equal(201);
      return { id, webhookId: created.body.data.id as string };
    }
    async function levelUps(userId: string, count: number): Promise<string[]> {
      const keys = Array.from({ length: count }, () => `webhook-workers:${randomUUID()}`);
      await db.prisma.$transaction((tx) =>
        recordEvents(
          tx,
          keys.map((dedupeKey, i) =>
            domainEvent({
              type: "user.level_up",
              userId,
              data: { userId, level: `L${i}`, previousLevel: "L", xp: i, timestamp: new Date().toISOString() },
              dedupeKey,
              now: new Date(),
            }),
          ),
        ),
      );
      const rows = await db.prisma.domainEvent.findMany({ where: { dedupeKey: { in: keys } }, select: { id: true } });
      return rows.map((row) => row.id);
    }

    it("two workers deliver 40 webhooks' 240 events, each attempt made once", async () => {
      // A fan-out page gives one delivery job per webhook: 40 jobs, more than one worker's slots
      // (WEBHOOK_SLOTS), so both workers take some.
      const users = await Promise.all(Array.from({ length: 40 }, (_, i) => userWithWebhook(`hooks-twice-${i}`, `/twice/${i}`)));
      const workers = [startStack(workerEnv(), "worker"), startStack(workerEnv(), "worker")];
      children.push(...workers);
      await Promise.all(workers.map((child) => child.ready()));
      answerDelayMs = 100;
      const expected = (
        await Promise.all(users.map(async (user, i) => (await levelUps(user.id, 6)).map((eventId) => `/twice/${i} ${eventId}`)))
      ).flat();
      await waitFor(async () => answered.length >= 240, 90_000, "every delivery");
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(answered.slice().sort()).to.deep.equal(expected.sort());
      const logged = await db.prisma.webhookDelivery.findMany({ select: { webhookId: true, eventId: true, attempt: true, status: true } });
      expect(logged).to.have.length(240);
      expect(new Set(logged.map((row) => `${row.webhookId}:${row.eventId}:${row.attempt}`)).size, "no attempt made twice").to.equal(240);
      expect(logged.every((row) => row.status === "success" && row.attempt === 1)).to.equal(true);
      const jobs = await db.prisma.job.findMany({ where: { kind: "webhook.delivery" }, select: { id: true } });
      const attempts = await db.prisma.jobAttempt.findMany({ where: { jobId: { in: jobs.map((job) => job.id) } } });
      expect(new Set(attempts.map((attempt) => `${attempt.jobId}:${attempt.attempt}`)).size).to.equal(attempts.length);
      expect(
        attempts.every((attempt) => attempt.attempt === 1),
        "no job tried twice",
      ).to.equal(true);
      expect(new Set(attempts.map((attempt) => attempt.processId)).size, "both workers took part").to.equal(2);
      for (const child of workers) await child.stop();
      answerDelayMs = 0;
    });

    it("a worker killed in the middle of a delivery: the other delivers it after the first stops beating, with the same id", async () => {
      for (const child of children.splice(0)) await child.stop("SIGKILL");
      const user = await userWithWebhook("hooks-killed", "/killed");
      answered.length = 0;
      hang = true;
      const first = startStack(workerEnv(), "worker");
      children.push(first);
      await first.ready();
      const [eventId] = await levelUps(user.id, 1);
      await waitFor(async () => held.length >= 1, 20_000, "the delivery in flight");
      const job = await db.prisma.job.findFirstOrThrow({ where: { dedupeKey: `webhook:${user.webhookId}:${eventId}` } });
      expect(job.status).to.equal("running");
      await first.stop("SIGKILL");
      for (const res of held.splice(0)) res.destroy();
      hang = false;

      const second = startStack(workerEnv(), "worker");
      children.push(second);
      await second.ready();
      await waitFor(async () => answered.includes(`/killed ${eventId}`), 60_000, "the delivery after the takeover");
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(answered.filter((line) => line === `/killed ${eventId}`)).to.have.length(1);
      const done = await db.prisma.job.findUniqueOrThrow({ where: { id: job.id } });
      expect(done).to.deep.include({ status: "succeeded", attempts: 2 });
      const attempts = await db.prisma.jobAttempt.findMany({ where: { jobId: job.id }, orderBy: { attempt: "asc" } });
      expect(attempts.map((attempt) => attempt.outcome)).to.deep.equal(["crashed", "succeeded"]);
      // The log shows both: the attempt its worker died in (it may have reached the receiver), then the delivery.
      const logged = await db.prisma.webhookDelivery.findMany({ where: { webhookId: user.webhookId }, orderBy: { attempt: "asc" } });
      expect(logged.map((row) => [row.attempt, row.status, row.statusCode])).to.deep.equal([
        [1, "failed", 0],
        [2, "success", 200],
      ]);
      expect(logged[0]!.error).to.match(/worker stopped/);
      await second.stop();
    });
  });
}
