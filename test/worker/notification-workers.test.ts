import type http from "node:http";
import { expect } from "chai";
import { startTestApi, type TestApi } from "../helpers/api.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";
import { waitFor } from "../helpers/mirror.js";
import { answerTickets, startPushReceiver } from "../helpers/push-receiver.js";
import { startSmtpServer } from "../helpers/smtp.js";
import { type StackProcess, startStack } from "../helpers/stack.js";

// Real `npm run worker` processes on one PostgreSQL deliver the notifications' push and e-mail
// jobs: two of them never deliver one notification twice on a channel, and a worker killed in
// the middle of a delivery leaves it to the other, which delivers it once. PGlite lives in one
// process, so this runs on PostgreSQL only.

if (usingPostgres) {
  describe("notification deliveries by several worker processes (PostgreSQL)", function () {
    this.timeout(180_000);
    let db: TestDatabase;
    let api: TestApi;
    let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
    let expo: Awaited<ReturnType<typeof startPushReceiver>>;
    const children: StackProcess[] = [];
    /** Pushes the receiver answered, by notification id. */
    const answeredPushes: string[] = [];
    let mails: Awaited<ReturnType<typeof startSmtpServer>>["mails"] = [];
    /** While set, the receiver holds push requests without answering (a delivery in flight). */
    let hang = false;
    const held: http.ServerResponse[] = [];

    const workerEnv = () => ({
      DATABASE_URL: db.url!,
      CHAIN_RPC_URL: "",
      SMTP_URL: smtp.url,
      EXPO_PUSH_URL: expo.url,
    });

    before(async () => {
      smtp = await startSmtpServer();
      mails = smtp.mails;
      expo = await startPushReceiver((messages, res) => {
        if (hang) {
          held.push(res);
          return;
        }
        for (const message of messages) answeredPushes.push(message.data.notificationId as string);
        answerTickets(
          res,
          messages.map(() => ({ status: "ok" })),
        );
      });
      db = await createTestDatabase();
      // The API writes the notifications; only the worker processes run the delivery jobs.
      api = await startTestApi({ db });
    });
    after(async () => {
      for (const child of children) await child.stop("SIGKILL");
      for (const res of held) res.destroy();
      await api?.close();
      await db?.destroy();
      await smtp?.close();
      await expo?.close();
    });

    async function newUser(name: string) {
      const email = `${name}@example.com`;
      const token = await api.token(name, { email, expiresIn: 86_400 });
      const me = (await api.request("GET", "/v1/users/me", { token })).body.data;
      // 120 test notifications a minute: above the free plan's limit.
      await api.request("PUT", `/dev/users/${me.id}/plan`, { body: { plan: "enterprise" } });
      await api.request("POST", "/v1/notifications/push/register", {
        token,
        body: { token: `ExponentPushToken[${name}]`, platform: "android", deviceId: `${name}-phone` },
      });
      return { token, email };
    }
    const sendTest = async (token: string, type: "push" | "email") => {
      const response = await api.request("POST", "/v1/notifications/test", { token, body: { type } });
      expect(response.status, response.text).to.equal(200);
    };
    const idsOf = async (channel: "push" | "email") =>
      (await db.prisma.job.findMany({ where: { kind: `notification.${channel}` }, select: { payload: true } })).map(
        (job) => (job.payload as { notificationId: string }).notificationId,
      );

    it("two workers deliver 60 pushes and 60 e-mails, each exactly once", async () => {
      const user = await newUser("twice");
      const workers = [startStack(workerEnv(), "worker"), startStack(workerEnv(), "worker")];
      children.push(...workers);
      await Promise.all(workers.map((child) => child.ready()));
      await Promise.all(Array.from({ length: 60 }, (_, i) => sendTest(user.token, i % 2 === 0 ? "push" : "email")));
      await Promise.all(Array.from({ length: 60 }, (_, i) => sendTest(user.token, i % 2 === 0 ? "email" : "push")));
      const pushIds = await idsOf("push");
      const mailCount = (await idsOf("email")).length;
      expect(pushIds).to.have.length(60);
      expect(mailCount).to.equal(60);
      await waitFor(async () => answeredPushes.length >= 60 && mails.length >= 60, 60_000, "every delivery");
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(new Set(answeredPushes).size, "each notification pushed once").to.equal(answeredPushes.length);
      expect(answeredPushes.slice().sort()).to.deep.equal(pushIds.slice().sort());
      expect(mails).to.have.length(60);
      const attempts = await db.prisma.jobAttempt.groupBy({ by: ["processId"], _count: true });
      expect(attempts.length, "both workers took part").to.be.at.least(2);
      for (const child of workers) await child.stop();
    });

    it("a worker killed in the middle of a push: the other delivers it after the first stops beating, once", async () => {
      // Only this test's workers run (the first test's stopped, or are stopped here).
      for (const child of children.splice(0)) await child.stop("SIGKILL");
      const user = await newUser("killed");
      answeredPushes.length = 0;
      hang = true;
      const first = startStack(workerEnv(), "worker");
      children.push(first);
      await first.ready();
      const before = new Set(await idsOf("push"));
      await sendTest(user.token, "push");
      const [notificationId] = (await idsOf("push")).filter((id) => !before.has(id));
      // The push is in flight: claimed by the first worker, its request held by the receiver.
      await waitFor(async () => held.length >= 1, 20_000, "the push request in flight");
      const job = await db.prisma.job.findFirstOrThrow({ where: { kind: "notification.push", payload: { equals: { notificationId } } } });
      expect(job.status).to.equal("running");
      await first.stop("SIGKILL");
      for (const res of held.splice(0)) res.destroy();
      hang = false;

      const second = startStack(workerEnv(), "worker");
      children.push(second);
      await second.ready();
      // Taken over once the killed worker's heartbeat is 10 s old, then delivered.
      await waitFor(async () => answeredPushes.includes(notificationId!), 60_000, "the push after the takeover");
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(answeredPushes.filter((id) => id === notificationId)).to.have.length(1);
      const done = await db.prisma.job.findUniqueOrThrow({ where: { id: job.id } });
      expect(done).to.deep.include({ status: "succeeded", attempts: 2 });
      const attempts = await db.prisma.jobAttempt.findMany({ where: { jobId: job.id }, orderBy: { attempt: "asc" } });
      expect(attempts.map((attempt) => attempt.outcome)).to.deep.equal(["crashed", "succeeded"]);
      await second.stop();
    });
  });
}
