import { expect } from "chai";
import { type Clock, createClock } from "../../core/clock.js";
import { openDatabase } from "../../core/db.js";
import type { Logger } from "../../core/logger.js";
import { createOutbox, type OutboxConsumer } from "../../domain/events/consumer.js";
import { domainEvent, recordEvents } from "../../domain/events/outbox.js";
import { type ClaimedJob, createJobQueue, type JobQueue, PermanentJobError, RetryableJobError } from "../../domain/jobs/queue.js";
import { type JobRunner, startJobRunner } from "../../domain/jobs/runner.js";
import { createProcessPresence, type ProcessPresence } from "../../domain/processes/presence.js";
import { type PeriodicJob, periodicKey, periodicKind, slotOf, startWorkers, type Workers } from "../../worker/scheduler.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";
import { capturingLogger, sleep, until } from "../helpers/waiting.js";

/** A service clock that stands still unless advanced (as /dev/time/advance does). */
const manualClock = (start = "2026-03-01T00:00:00.000Z"): Clock => {
  const base = Date.parse(start);
  return createClock(() => base);
};

describe(`job queue (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let clock: Clock;
  let presence: ProcessPresence;
  let queue: JobQueue;
  /** Stopped after each test, in reverse order. */
  let stoppers: (() => Promise<unknown>)[] = [];

  const attemptsOf = (jobId: string) =>
    db.prisma.jobAttempt.findMany({ where: { jobId }, orderBy: { attempt: "asc" }, select: { attempt: true, outcome: true, error: true } });
  const newPresence = () => {
    const made = createProcessPresence({ db, kind: "test" });
    stoppers.push(() => made.stop());
    return made;
  };
  const runner = (options: Omit<Parameters<typeof startJobRunner>[0], "logger"> & { logger?: Logger }): JobRunner => {
    const started = startJobRunner({ pollMs: 5, logger: capturingLogger().logger, ...options });
    stoppers.push(() => started.stop());
    return started;
  };
  /** Claims one due job of `kind`, as a runner does. */
  const claimOne = async (kind: string, on: JobQueue = queue) => {
    const [job, ...more] = await on.claim({ kinds: [kind], limit: 10 });
    expect(more).to.deep.equal([]);
    return job;
  };

  before(async () => {
    db = await createTestDatabase();
  });
  beforeEach(async () => {
    await db.prisma.$executeRaw`DELETE FROM "Job"`;
    await db.prisma.$executeRaw`DELETE FROM "JobAttempt"`;
    clock = manualClock();
    presence = newPresence();
    queue = createJobQueue({ db, clock, presence });
  });
  afterEach(async () => {
    for (const stop of stoppers.reverse()) await stop();
    stoppers = [];
  });
  after(async () => {
    await db?.destroy();
  });

  it("enqueues a job once per dedupe key, also inside a caller's transaction", async () => {
    const id = await queue.enqueue({ kind: "mail", payload: { to: "a@example.com" }, dedupeKey: "mail:1" });
    expect(id).to.be.a("string");
    expect(await queue.enqueue({ kind: "mail", payload: { to: "other" }, dedupeKey: "mail:1" })).to.equal(null);
    const row = await queue.get({ dedupeKey: "mail:1" });
    expect(row).to.deep.include({ id, kind: "mail", status: "queued", attempts: 0, maxAttempts: 10, payload: { to: "a@example.com" } });
    expect(row!.runAt.toISOString()).to.equal("2026-03-01T00:00:00.000Z");
    expect(row!.createdAt.toISOString()).to.equal("2026-03-01T00:00:00.000Z");

    // A batch: the key taken before and the key repeated inside the batch are skipped.
    const ids = await queue.enqueueMany([
      { kind: "mail", payload: 1, dedupeKey: "mail:1" },
      { kind: "mail", payload: 2, dedupeKey: "mail:2" },
      { kind: "mail", payload: 3, dedupeKey: "mail:2" },
      { kind: "mail", payload: 4 },
      { kind: "push", payload: 5, runAt: new Date("2026-03-02T00:00:00.000Z"), maxAttempts: 3 },
    ]);
    expect(ids).to.have.length(3);
    expect(await db.prisma.job.count()).to.equal(4);
    expect(await queue.enqueueMany([])).to.deep.equal([]);

    // Inside a transaction: gone with its rollback, kept with its commit.
    const rolledBack = db.prisma.$transaction(async (tx) => {
      await queue.enqueue({ kind: "mail", payload: {}, dedupeKey: "mail:tx" }, tx);
      throw new Error("the caller's change failed");
    });
    const thrown = await rolledBack.then(
      () => undefined,
      (error: Error) => error,
    );
    expect(thrown?.message).to.equal("the caller's change failed");
    expect(await queue.get({ dedupeKey: "mail:tx" })).to.equal(null);
    await db.prisma.$transaction(async (tx) => {
      expect(await queue.enqueue({ kind: "mail", payload: {}, dedupeKey: "mail:tx" }, tx)).to.be.a("string");
    });
    expect(await queue.get({ dedupeKey: "mail:tx" })).to.deep.include({ status: "queued" });

    expect(await queue.stats()).to.deep.equal({ mail: { queued: 4 }, push: { queued: 1 } });
  });

  it("claims due jobs in runAt order, on the service clock, and records each try", async () => {
    const later = await queue.enqueue({ kind: "k", payload: "later", runAt: new Date("2026-03-01T00:01:00.000Z") });
    const first = await queue.enqueue({ kind: "k", payload: "first", runAt: new Date("2026-02-28T00:00:00.000Z") });
    const second = await queue.enqueue({ kind: "k", payload: "second" });
    await queue.enqueue({ kind: "other", payload: "not this runner's kind" });

    const claimed = await queue.claim({ kinds: ["k"], limit: 10 });
    expect(claimed.map((job) => [job.id, job.payload, job.attempt])).to.deep.equal([
      [first, "first", 1],
      [second, "second", 1],
    ]);
    expect(await queue.claim({ kinds: ["k"], limit: 10 })).to.deep.equal([]);
    const row = await queue.get({ id: first! });
    expect(row).to.deep.include({ status: "running", attempts: 1, lockedBy: await presence.id() });
    expect(row!.lockedAt!.toISOString()).to.equal("2026-03-01T00:00:00.000Z");
    const attempt = await db.prisma.jobAttempt.findFirstOrThrow({ where: { jobId: first! } });
    expect(attempt).to.deep.include({ attempt: 1, processId: await presence.id(), outcome: null, finishedAt: null });

    expect(await queue.succeed(claimed[0]!, { durationMs: 12 })).to.equal(true);
    expect(await queue.get({ id: first! })).to.deep.include({ status: "succeeded", lockedBy: null, lockedAt: null });
    expect(await db.prisma.jobAttempt.findFirstOrThrow({ where: { jobId: first! } })).to.deep.include({
      outcome: "succeeded",
      durationMs: 12,
    });
    // A second outcome for the same try changes nothing.
    expect(await queue.succeed(claimed[0]!, { durationMs: 1 })).to.equal(false);

    // The delayed job is due once the service clock reaches its runAt.
    await clock.advance(59);
    expect(await queue.claim({ kinds: ["k"], limit: 10 })).to.deep.equal([]);
    await clock.advance(1);
    expect((await queue.claim({ kinds: ["k"], limit: 10 })).map((job) => job.id)).to.deep.equal([later]);
  });

  it("runs at most a concurrency key's limit at once, passing over its jobs for the others' while it is full", async () => {
    // A slow endpoint's ten deliveries are due first, another endpoint's two and a plain job after them.
    const slow = await queue.enqueueMany(
      Array.from({ length: 10 }, (_, i) => ({ kind: "k", payload: `slow-${i}`, concurrency: { key: "hook:slow", limit: 2 } })),
    );
    await clock.advance(1);
    await queue.enqueueMany([
      { kind: "k", payload: "fast-0", concurrency: { key: "hook:fast", limit: 2 } },
      { kind: "k", payload: "fast-1", concurrency: { key: "hook:fast", limit: 2 } },
      { kind: "k", payload: "plain" },
    ]);
    const first = await queue.claim({ kinds: ["k"], limit: 10 });
    const payloads = first.map((job) => job.payload as string);
    expect(payloads.filter((payload) => !payload.startsWith("slow-")).sort()).to.deep.equal(["fast-0", "fast-1", "plain"]);
    const slowRunning = first.filter((job) => (job.payload as string).startsWith("slow-"));
    expect(slowRunning).to.have.length(2);
    // Full: nothing more of the slow key until one of its two finishes.
    expect(await queue.claim({ kinds: ["k"], limit: 10 })).to.deep.equal([]);
    await queue.succeed(slowRunning[0]!, { durationMs: 1 });
    const next = await queue.claim({ kinds: ["k"], limit: 10 });
    expect(next).to.have.length(1);
    expect(next[0]!.payload).to.match(/^slow-/);
    expect(slowRunning.map((job) => job.id)).to.not.include(next[0]!.id);
    expect(slow).to.have.length(10);
  });

  it("adds items to a waiting batch of the same kind and key, with room, never to one claimed, tried, not a batch or not due", async () => {
    const batch = (items: number[]) => ({ batch: true, items });
    const key = (k: string) => ({ key: k, limit: 4 });
    const a = (await queue.enqueue({ kind: "deliver", payload: batch([1, 2]), concurrency: key("a") }))!;
    const claimed = (await queue.enqueue({ kind: "deliver", payload: batch([1]), concurrency: key("b") }))!;
    // b's job is being run (claimed): it takes nothing more.
    await db.prisma.job.update({ where: { id: claimed }, data: { status: "running", attempts: 1 } });
    await queue.enqueue({ kind: "deliver", payload: { items: [9] }, concurrency: key("c") });
    await queue.enqueue({ kind: "deliver", payload: batch([9]), concurrency: key("d"), runAt: new Date(clock.now().getTime() + 60_000) });
    // e's job was tried once already (its worker died): queued again, it takes nothing more.
    const tried = (await queue.enqueue({ kind: "deliver", payload: batch([9]), concurrency: key("e") }))!;
    await db.prisma.job.update({ where: { id: tried }, data: { attempts: 1 } });
    await queue.enqueue({ kind: "other", payload: batch([9]), concurrency: key("f") });

    const added = await queue.joinWaiting(
      ["a", "b", "c", "d", "e", "f", "g"].map((k) => ({ kind: "deliver", concurrencyKey: k, items: [3, 4, 5] })),
      4,
    );
    // a had room for two of three; b is running, c no batch, d not due, e tried, f another kind, g has no job.
    expect(added).to.deep.equal([2, 0, 0, 0, 0, 0, 0]);
    expect((await db.prisma.job.findUniqueOrThrow({ where: { id: a } })).payload).to.deep.equal(batch([1, 2, 3, 4]));
    expect(await queue.joinWaiting([{ kind: "deliver", concurrencyKey: "a", items: [6] }], 4), "full").to.deep.equal([0]);
  });

  it("gives every job to exactly one of two processes claiming at once (200 jobs)", async () => {
    // On PostgreSQL the second process has connections of its own.
    const otherDb = usingPostgres ? await openDatabase({ databaseUrl: db.url }) : db;
    if (otherDb !== db) stoppers.push(() => otherDb.close());
    const otherPresence = createProcessPresence({ db: otherDb, kind: "test" });
    stoppers.push(() => otherPresence.stop());
    const other = createJobQueue({ db: otherDb, clock, presence: otherPresence });
    const ids = await queue.enqueueMany(Array.from({ length: 200 }, (_, index) => ({ kind: "count", payload: { index } })));
    expect(ids).to.have.length(200);
    const calls = new Map<string, number>();
    const byQueue = [0, 0];
    const handlerOf = (which: number) => async (_payload: unknown, job: ClaimedJob) => {
      calls.set(job.id, (calls.get(job.id) ?? 0) + 1);
      byQueue[which]! += 1;
      await sleep(Math.random() * 3);
    };
    runner({ queue, handlers: { count: handlerOf(0) }, concurrency: 8 });
    runner({ queue: other, handlers: { count: handlerOf(1) }, concurrency: 8 });
    const done = async () => (await db.prisma.job.count({ where: { status: "succeeded" } })) === 200;
    await until(done, "every job to succeed", 30_000);

    expect(calls.size).to.equal(200);
    expect([...calls.values()].every((count) => count === 1)).to.equal(true);
    expect(byQueue[0]! + byQueue[1]!).to.equal(200);
    expect(await db.prisma.jobAttempt.count()).to.equal(200);
    if (usingPostgres)
      expect(
        byQueue.every((count) => count > 0),
        `shares ${byQueue}`,
      ).to.equal(true);
  });

  it("queues a failed try again after a backoff on the service clock, then succeeds", async () => {
    const id = await queue.enqueue({ kind: "flaky", payload: {} });
    const job = await claimOne("flaky");
    expect(await queue.fail(job!, new RetryableJobError("smtp timeout"), { durationMs: 5 })).to.equal("retry");
    const row = await queue.get({ id: id! });
    expect(row).to.deep.include({ status: "queued", attempts: 1, lastError: "RetryableJobError: smtp timeout", lockedBy: null });
    // 10 s ± 20 % for the first retry.
    const delayMs = row!.runAt.getTime() - clock.now().getTime();
    expect(delayMs).to.be.within(8_000, 12_000);

    await clock.advance(delayMs / 1000 - 1);
    expect(await queue.claim({ kinds: ["flaky"], limit: 1 })).to.deep.equal([]);
    await clock.advance(1);
    const retry = await claimOne("flaky");
    expect(retry).to.deep.include({ id, attempt: 2 });
    expect(await queue.succeed(retry!, { durationMs: 1 })).to.equal(true);
    expect(await attemptsOf(id!)).to.deep.equal([
      { attempt: 1, outcome: "retry", error: "RetryableJobError: smtp timeout" },
      { attempt: 2, outcome: "succeeded", error: null },
    ]);
  });

  it("the runner retries on the kind's own schedule, or after a handler's Retry-After", async () => {
    const { logger, lines } = capturingLogger();
    let calls = 0;
    runner({
      queue,
      logger,
      handlers: {
        webhook: {
          retryDelaysMs: [60_000, 300_000],
          handle: async () => {
            calls += 1;
            if (calls === 3) throw new RetryableJobError("429", { retryAfterMs: 7_000 });
            if (calls < 5) throw new RetryableJobError(`HTTP 503 (call ${calls})`);
          },
        },
      },
    });
    const id = (await queue.enqueue({ kind: "webhook", payload: {}, maxAttempts: 6 }))!;
    const runAtAfter = async (attempts: number) => {
      await until(
        async () => (await queue.get({ id }))?.attempts === attempts && (await queue.get({ id }))?.status !== "running",
        `try ${attempts}`,
      );
      return (await queue.get({ id }))!.runAt.getTime() - clock.now().getTime();
    };
    expect(await runAtAfter(1)).to.equal(60_000);
    await clock.advance(60);
    expect(await runAtAfter(2)).to.equal(300_000);
    await clock.advance(300);
    expect(await runAtAfter(3)).to.equal(7_000); // the handler's own delay
    await clock.advance(7);
    expect(await runAtAfter(4)).to.equal(300_000); // the schedule's last delay repeats
    await clock.advance(300);
    await until(async () => (await queue.get({ id }))?.status === "succeeded", "the fifth try");
    expect(calls).to.equal(5);

    const warnings = lines.filter((line) => line.level === 40);
    expect(warnings.map((line) => [line.msg, line.kind, line.jobId, line.retryInMs])).to.deep.equal([
      ["job failed; retrying", "webhook", id, 60_000],
      ["job failed; retrying", "webhook", id, 300_000],
      ["job failed; retrying", "webhook", id, 7_000],
      ["job failed; retrying", "webhook", id, 300_000],
    ]);
    // A retryable error is one line with its message, no stack.
    expect(warnings[0]).to.deep.include({ error: "HTTP 503 (call 1)" });
    expect(warnings[0]).to.not.have.property("err");
  });

  it("a permanent error makes the job dead at once; the last allowed try too", async () => {
    const { logger, lines } = capturingLogger();
    runner({
      queue,
      logger,
      handlers: {
        refused: async () => {
          throw new PermanentJobError("HTTP 410 Gone");
        },
        broken: async () => {
          throw new TypeError("cannot read properties of undefined");
        },
      },
    });
    const refused = (await queue.enqueue({ kind: "refused", payload: {} }))!;
    const broken = (await queue.enqueue({ kind: "broken", payload: {}, maxAttempts: 2 }))!;
    await until(async () => (await queue.get({ id: refused }))?.status === "dead", "the refused job's death");
    expect(await queue.get({ id: refused })).to.deep.include({ attempts: 1, lastError: "PermanentJobError: HTTP 410 Gone" });
    expect(await attemptsOf(refused)).to.deep.equal([{ attempt: 1, outcome: "failed", error: "PermanentJobError: HTTP 410 Gone" }]);

    // An unknown error is retried (with its stack in the warning: a bug), until maxAttempts.
    await until(
      async () => (await queue.get({ id: broken }))?.attempts === 1 && (await queue.get({ id: broken }))?.status === "queued",
      "first try",
    );
    const warning = lines.find((line) => line.jobId === broken && line.level === 40)!;
    expect((warning.err as { stack: string }).stack).to.include("TypeError: cannot read properties of undefined");
    await clock.advance(13);
    await until(async () => (await queue.get({ id: broken }))?.status === "dead", "the broken job's death");
    expect((await attemptsOf(broken)).map((attempt) => attempt.outcome)).to.deep.equal(["retry", "failed"]);
    expect(lines.filter((line) => line.level === 50).map((line) => [line.msg, line.kind])).to.deep.equal([
      ["job failed for good (dead)", "refused"],
      ["job failed for good (dead)", "broken"],
    ]);
  });

  it("lists dead jobs and queues one again by hand", async () => {
    const ids: string[] = [];
    for (const kind of ["a", "b", "a"]) {
      const id = (await queue.enqueue({ kind, payload: { kind } }))!;
      ids.push(id);
      await queue.fail((await claimOne(kind))!, new PermanentJobError("no"), { durationMs: 1 });
      await clock.advance(1);
    }
    await queue.enqueue({ kind: "a", payload: "alive" });
    expect((await queue.listDead()).map((job) => job.id)).to.deep.equal([ids[2], ids[1], ids[0]]);
    expect((await queue.listDead({ kind: "a" })).map((job) => job.id)).to.deep.equal([ids[2], ids[0]]);
    expect((await queue.listDead({ limit: 1, offset: 1 })).map((job) => job.id)).to.deep.equal([ids[1]]);

    expect(await queue.retryDead(ids[0]!)).to.equal(true);
    expect(await queue.retryDead(ids[0]!)).to.equal(false); // not dead any more
    expect(await queue.retryDead("not-a-uuid")).to.equal(false);
    expect(await queue.get({ id: ids[0]! })).to.deep.include({ status: "queued", maxAttempts: 10, finishedAt: null });
    const again = (await queue.claim({ kinds: ["a"], limit: 10 })).find((job) => job.id === ids[0]);
    expect(again).to.deep.include({ attempt: 2 });
    expect(await queue.succeed(again!, { durationMs: 1 })).to.equal(true);
    expect((await queue.listDead()).map((job) => job.id)).to.deep.equal([ids[2], ids[1]]);

    // A job that used all its tries gets one more.
    const spent = (await queue.enqueue({ kind: "c", payload: {}, maxAttempts: 1 }))!;
    await queue.fail((await claimOne("c"))!, new Error("boom"), { durationMs: 1 });
    expect(await queue.get({ id: spent })).to.deep.include({ status: "dead" });
    expect(await queue.retryDead(spent)).to.equal(true);
    expect(await queue.get({ id: spent })).to.deep.include({ status: "queued", maxAttempts: 2 });
  });

  it("queues again the job of a process that died mid-job, its attempt marked crashed", async () => {
    // Process A claims, then dies: its heartbeat stops and its row is left behind, old.
    const a = createProcessPresence({ db, kind: "test" });
    const queueA = createJobQueue({ db, clock, presence: a });
    const aId = await a.id();
    const id = (await queue.enqueue({ kind: "deliver", payload: {} }))!;
    const claimedByA = await claimOne("deliver", queueA);
    // A live process's job is left alone.
    expect(await queue.recoverCrashed()).to.deep.equal([]);
    await a.stop();
    await db.prisma.$executeRaw`
      INSERT INTO "ServiceProcess" ("id", "kind", "pid", "host", "startedAt", "heartbeatAt")
      VALUES (${aId}, 'test', 1, 'gone', now() - interval '1 hour', now() - interval '11 seconds')`;

    expect(await queue.recoverCrashed()).to.deep.equal([{ id, kind: "deliver", attempt: 1, processId: aId, status: "queued" }]);
    expect(await queue.get({ id })).to.deep.include({ status: "queued", lockedBy: null, attempts: 1 });
    expect(await attemptsOf(id)).to.deep.equal([{ attempt: 1, outcome: "crashed", error: "its process died while running it" }]);

    // Process B runs it; A's late outcome (a process that froze, not died) is refused.
    const retried = await claimOne("deliver");
    expect(retried).to.deep.include({ id, attempt: 2 });
    expect(await queueA.succeed(claimedByA!, { durationMs: 1 })).to.equal(false);
    expect(await queue.succeed(retried!, { durationMs: 1 })).to.equal(true);
    expect((await attemptsOf(id)).map((attempt) => attempt.outcome)).to.deep.equal(["crashed", "succeeded"]);

    // A process whose row is gone (a clean stop mid-job) is dead at once; out of tries, its job is dead.
    const c = createProcessPresence({ db, kind: "test" });
    const last = (await queue.enqueue({ kind: "deliver", payload: {}, maxAttempts: 1 }))!;
    await claimOne("deliver", createJobQueue({ db, clock, presence: c }));
    await c.stop();
    expect(await queue.recoverCrashed()).to.deep.include.members([
      { id: last, kind: "deliver", attempt: 1, processId: await c.id(), status: "dead" },
    ]);
    expect(await queue.listDead()).to.have.length(1);
  });

  it("a runner recovers a dead process's jobs by itself", async () => {
    const a = createProcessPresence({ db, kind: "test" });
    const id = (await queue.enqueue({ kind: "deliver", payload: {} }))!;
    await claimOne("deliver", createJobQueue({ db, clock, presence: a }));
    await a.stop();
    const ran: number[] = [];
    runner({ queue, handlers: { deliver: async (_payload, job) => void ran.push(job.attempt) }, recoverEveryMs: 10 });
    await until(async () => (await queue.get({ id }))?.status === "succeeded", "the retry");
    expect(ran).to.deep.equal([2]);
  });

  it("wake() cuts the runner's poll short; stop() waits for the running jobs", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const started: string[] = [];
    const finished: string[] = [];
    const current = startJobRunner({
      queue,
      pollMs: 60_000,
      logger: capturingLogger().logger,
      handlers: {
        slow: async (payload: { name: string }) => {
          started.push(payload.name);
          await held;
          finished.push(payload.name);
        },
      },
    });
    stoppers.push(() => current.stop());
    await sleep(50); // the runner is waiting its minute
    await queue.enqueue({ kind: "slow", payload: { name: "one" } }); // wakes the runners of this process
    await until(() => started.length === 1, "the woken runner");
    let stopped = false;
    const stopping = current.stop().then(() => {
      stopped = true;
    });
    await sleep(50);
    expect(stopped).to.equal(false);
    release();
    await stopping;
    expect(finished).to.deep.equal(["one"]);
    expect((await db.prisma.job.findFirstOrThrow()).status).to.equal("succeeded");
  });

  it("prunes old succeeded jobs and dead periodic runs with their attempts, keeping the rest", async () => {
    const finish = async (kind: string, dedupeKey: string | undefined, how: "succeed" | "dead") => {
      const id = (await queue.enqueue({ kind, payload: {}, dedupeKey }))!;
      const job = (await claimOne(kind))!;
      if (how === "succeed") await queue.succeed(job, { durationMs: 1 });
      else await queue.fail(job, new PermanentJobError("no"), { durationMs: 1 });
      return id;
    };
    await finish("old", undefined, "succeed");
    await finish("old-periodic", "periodic:x:1", "dead");
    const oldDead = await finish("old-dead", undefined, "dead");
    await clock.advance(3_600);
    const recent = await finish("recent", undefined, "succeed");
    const queued = (await queue.enqueue({ kind: "queued", payload: {}, runAt: new Date(0) }))!;

    expect(await queue.prune(new Date(clock.now().getTime() - 60_000))).to.equal(2);
    const left = await db.prisma.job.findMany({ select: { id: true } });
    expect(left.map((job) => job.id).sort()).to.deep.equal([oldDead, recent, queued].sort());
    expect(await db.prisma.jobAttempt.count()).to.equal(2);
  });

  it("runs each slot of a periodic job once, though two processes enqueue and run it", async () => {
    const runs: { slot: number; process: number }[] = [];
    const jobOf = (process: number): PeriodicJob => ({
      name: "tick",
      intervalMs: 60_000,
      run: async (now) => {
        runs.push({ slot: slotOf(60_000, now), process });
        await sleep(2);
        return { changed: 0 };
      },
    });
    const workersOf = (process: number, on: JobQueue): Workers => {
      const started = startWorkers({ queue: on, clock, logger: capturingLogger().logger, jobs: [jobOf(process)], tickMs: 2 });
      stoppers.push(() => started.stop());
      return started;
    };
    workersOf(0, queue);
    workersOf(1, createJobQueue({ db, clock, presence: newPresence() }));
    const first = slotOf(60_000, clock.now());
    for (let slot = first; slot < first + 5; slot += 1) {
      await until(() => runs.some((run) => run.slot === slot), `the run of slot ${slot}`);
      await sleep(30); // both processes look many times within the slot
      await clock.advance(60);
    }
    await until(() => runs.length >= 6, "the sixth slot");
    await sleep(30);
    expect(runs.map((run) => run.slot)).to.deep.equal([0, 1, 2, 3, 4, 5].map((n) => first + n));
    const jobs = await db.prisma.job.findMany({ where: { kind: periodicKind("tick") }, orderBy: { runAt: "asc" } });
    expect(jobs.map((job) => [job.dedupeKey, job.status, job.attempts])).to.deep.equal(
      [0, 1, 2, 3, 4, 5].map((n) => [periodicKey("tick", first + n), "succeeded", 1]),
    );
  });

  it("an outbox consumer enqueues in its event's transaction; an event whose apply throws blocks none after it", async () => {
    const user = await db.prisma.user.create({
      data: {
        id: "jobs-user",
        subject: "jobs|user",
        displayName: "Jobs",
        walletAddress: `0x${"1".repeat(40)}`,
        createdAt: clock.now(),
        updatedAt: clock.now(),
      },
    });
    const events = ["a", "b", "c"].map((name, index) =>
      domainEvent({
        type: "user.level_up",
        userId: user.id,
        data: { userId: user.id, level: name, previousLevel: "x", xp: index, timestamp: clock.now().toISOString() },
        dedupeKey: `jobs-test:${name}`,
        now: new Date(clock.now().getTime() + index),
      }),
    );
    await db.prisma.$transaction((tx) => recordEvents(tx, events));
    const { logger, lines } = capturingLogger();
    const outbox = createOutbox({ db, jobs: queue, logger });
    let failB = true;
    const consumer: OutboxConsumer<"user.level_up"> = {
      name: "notifications",
      types: ["user.level_up"],
      async apply(tx, page) {
        for (const event of page) {
          await queue.enqueue({ kind: "notification.push", payload: { eventId: event.id }, dedupeKey: `push:${event.id}` }, tx);
          if (event.data.level === "b" && failB) throw new Error("template missing");
        }
      },
    };
    const [ids] = await outbox.produce(consumer, clock.now());
    expect(await outbox.take(consumer, ids!, clock.now())).to.deep.include({ applied: 2 });
    const failed = await db.prisma.domainEvent.findUniqueOrThrow({ where: { dedupeKey: "jobs-test:b" } });
    expect(lines.filter((line) => line.level >= 40).map((line) => [line.msg, line.failed])).to.deep.equal([
      ["events not applied; left untaken", [{ id: failed.id, type: "user.level_up", error: "template missing" }]],
    ]);
    // Its job went with its rolled-back transaction; the others' jobs are queued.
    expect((await db.prisma.job.findMany({ select: { dedupeKey: true } })).map((job) => job.dedupeKey)).to.not.include(`push:${failed.id}`);
    expect(await db.prisma.job.count({ where: { kind: "notification.push" } })).to.equal(2);

    failB = false;
    expect(await outbox.take(consumer, ids!, clock.now())).to.deep.equal({ applied: 1, failed: [] });
    expect(await db.prisma.job.count({ where: { kind: "notification.push" } })).to.equal(3);
    expect(await outbox.take(consumer, ids!, clock.now())).to.deep.equal({ applied: 0, failed: [] });
  });
});
