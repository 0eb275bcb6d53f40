import { expect } from "chai";
import { type Clock, createClock, createSharedClock, HOUR_MS } from "../../core/clock.js";
import { loadConfig } from "../../core/config.js";
import type { Logger } from "../../core/logger.js";
import { createJobQueue, type JobQueue } from "../../domain/jobs/queue.js";
import { CONSUMERS } from "../../domain/modules.js";
import { createProcessPresence, type ProcessPresence } from "../../domain/processes/presence.js";
import { servicesFromConfig } from "../../domain/services.js";
import { createUsersRepo, type UsersRepo } from "../../domain/users/repo.js";
import { startPlatformWorkers } from "../../worker/jobs.js";
import { type PeriodicJob, periodicKind, startWorkers, type Workers } from "../../worker/scheduler.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";
import { type StackProcess, startStack } from "../helpers/stack.js";
import { capturingLogger, sleep, until } from "../helpers/waiting.js";

/** Real milliseconds between two looks for due jobs: the tests move the service clock, not time. */
const TICK_MS = 2;
const DAY_S = 86_400;

type LogLine = { level: number; msg: string; job?: string; kind?: string; err?: { message: string }; [field: string]: unknown };

/** A pino logger at debug level whose lines are kept, parsed, in `lines`. */

/** A service clock that stands still unless advanced (as /dev/time/advance does). */
const manualClock = (start: string): Clock => {
  const base = Date.parse(start);
  return createClock(() => base);
};

/** Long enough for the scheduler to look many times. */
const severalTicks = () => sleep(TICK_MS * 20);

/** A promise the test opens by hand, to hold a job run in the middle. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe(`worker scheduler on the job queue (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(30_000);
  let db: TestDatabase;
  let presences: ProcessPresence[] = [];
  let workers: Workers[] = [];
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);

  /** The job queue of one process (its own presence) on the suite's database. */
  const processQueue = (clock: Clock): JobQueue => {
    const presence = createProcessPresence({ db, kind: "worker" });
    presences.push(presence);
    return createJobQueue({ db, clock, presence });
  };
  const start = (clock: Clock, logger: Logger, jobs: PeriodicJob[], queue = processQueue(clock)) => {
    const started = startWorkers({ queue, clock, logger, jobs, tickMs: TICK_MS });
    workers.push(started);
    return started;
  };

  before(async () => {
    process.on("unhandledRejection", onUnhandled);
    db = await createTestDatabase();
  });
  after(async () => {
    process.off("unhandledRejection", onUnhandled);
    await db?.destroy();
  });
  beforeEach(async () => {
    await db.prisma.$executeRaw`DELETE FROM "Job"`;
    await db.prisma.$executeRaw`DELETE FROM "JobAttempt"`;
  });
  afterEach(async () => {
    for (const current of workers) await current.stop();
    for (const presence of presences) await presence.stop();
    workers = [];
    presences = [];
    expect(unhandled).to.deep.equal([]);
  });

  it("runs a job at start, then again once its interval has passed on the service clock", async () => {
    const clock = manualClock("2026-03-01T00:00:00.000Z");
    const { logger, lines } = capturingLogger<LogLine>();
    const seen: Date[] = [];
    const job: PeriodicJob = {
      name: "count",
      intervalMs: 60_000,
      run: async (now) => {
        seen.push(now);
        return { changed: seen.length === 2 ? 1 : 0 };
      },
    };
    const current = start(clock, logger, [job]);
    expect(current.jobs).to.deep.equal(["count"]);
    expect(current.kinds).to.deep.equal([periodicKind("count")]);

    await until(() => seen.length === 1, "the run at start");
    expect(seen[0]!.toISOString()).to.equal("2026-03-01T00:00:00.000Z");
    await severalTicks();
    clock.advance(59);
    await severalTicks();
    expect(seen).to.have.length(1);

    clock.advance(1);
    await until(() => seen.length === 2, "the run after the interval");
    expect(seen[1]!.toISOString()).to.equal("2026-03-01T00:01:00.000Z");
    // A jump of many intervals gives one run (jobs catch up by themselves), not one per interval.
    clock.advance(10 * 60);
    await until(() => seen.length === 3, "the run after the jump");
    await severalTicks();
    expect(seen).to.have.length(3);
    await current.stop();

    const runs = lines.filter((line) => line.job === "count");
    expect(runs.map((line) => [line.level, line.msg, line.changed])).to.deep.equal([
      [20, "job run", 0],
      [30, "job run changed data", 1],
      [20, "job run", 0],
    ]);
    expect(runs[0]!.durationMs).to.be.a("number");
    // Each run is a job of the queue, keyed by its slot.
    const rows = await db.prisma.job.findMany({ orderBy: { runAt: "asc" }, select: { dedupeKey: true, status: true } });
    const slot = Date.parse("2026-03-01T00:00:00.000Z") / 60_000;
    expect(rows).to.deep.equal([
      { dedupeKey: `periodic:count:${slot}`, status: "succeeded" },
      { dedupeKey: `periodic:count:${slot + 1}`, status: "succeeded" },
      { dedupeKey: `periodic:count:${slot + 11}`, status: "succeeded" },
    ]);
  });

  it("logs a failing run and retries it, without crashing the process or the other jobs", async () => {
    const clock = manualClock("2026-03-01T00:00:00.000Z");
    const { logger, lines } = capturingLogger<LogLine>();
    let attempts = 0;
    let others = 0;
    const flaky: PeriodicJob = {
      name: "flaky",
      intervalMs: HOUR_MS,
      retryMs: 1_000,
      run: async () => {
        attempts += 1;
        if (attempts === 1) throw new Error("database went away");
        return { changed: 1 };
      },
    };
    const throwsAtOnce: PeriodicJob = {
      name: "throws-at-once",
      intervalMs: HOUR_MS,
      run: () => {
        throw new Error("synchronous failure");
      },
    };
    const healthy: PeriodicJob = {
      name: "healthy",
      intervalMs: HOUR_MS,
      run: async () => {
        others += 1;
        return undefined;
      },
    };
    const current = start(clock, logger, [flaky, throwsAtOnce, healthy]);

    const failureOf = (name: string) => lines.find((line) => line.kind === periodicKind(name) && line.level === 40);
    await until(() => attempts === 1 && others === 1, "the first runs");
    await until(() => failureOf("flaky") !== undefined, "the warning");
    expect(failureOf("flaky")).to.deep.include({ msg: "job failed; retrying", retryInMs: 1_000, attempt: 1 });
    expect(failureOf("flaky")!.err?.message).to.equal("database went away");
    await until(() => failureOf("throws-at-once") !== undefined, "the synchronous failure's warning");
    // Its default retry delay is one minute of service clock.
    expect(failureOf("throws-at-once")).to.deep.include({ retryInMs: 60_000 });

    // Not retried before its retry delay has passed on the service clock.
    await severalTicks();
    expect(attempts).to.equal(1);
    clock.advance(1);
    await until(() => attempts === 2, "the retry");
    await current.stop();
    const flakyLines = lines.filter((line) => (line.kind === periodicKind("flaky") || line.job === "flaky") && line.level >= 30);
    expect(flakyLines.map((line) => [line.level, line.msg])).to.deep.equal([
      [40, "job failed; retrying"],
      [30, "job run changed data"],
    ]);
    expect(others).to.equal(1);
    // The retry was the same job (one slot, one job), its two tries recorded.
    const row = await db.prisma.job.findFirstOrThrow({ where: { kind: periodicKind("flaky") } });
    expect(row).to.deep.include({ status: "succeeded", attempts: 2 });
  });

  it("never overlaps two runs of one job, on one process or two", async () => {
    const clock = manualClock("2026-03-01T00:00:00.000Z");
    const { logger } = capturingLogger<LogLine>();
    let runs = 0;
    let active = 0;
    let maxActive = 0;
    let held = gate();
    const slow: PeriodicJob = {
      name: "slow",
      intervalMs: 1_000,
      run: async () => {
        runs += 1;
        active += 1;
        maxActive = Math.max(maxActive, active);
        await held.opened;
        active -= 1;
        return { changed: 0 };
      },
    };
    // Two processes, each enqueueing the slots and running the queue.
    start(clock, logger, [slow]);
    start(clock, logger, [slow]);
    try {
      await until(() => runs === 1, "the run at start");
      // Due many times over while the first run is held: no second run starts.
      for (let i = 0; i < 5; i += 1) {
        clock.advance(10);
        await severalTicks();
      }
      expect(runs).to.equal(1);

      const first = held;
      held = gate();
      first.open();
      // Overdue, it runs again at the next look, still one at a time.
      await until(() => runs === 2, "the next run");
      expect(maxActive).to.equal(1);
    } finally {
      held.open();
      for (const current of workers) await current.stop();
    }
    expect(maxActive).to.equal(1);
  });

  it("stop() waits for running jobs and starts no further run", async () => {
    const clock = manualClock("2026-03-01T00:00:00.000Z");
    const { logger } = capturingLogger<LogLine>();
    const held = gate();
    let runs = 0;
    let finished = 0;
    const job: PeriodicJob = {
      name: "held",
      intervalMs: 1_000,
      run: async () => {
        runs += 1;
        await held.opened;
        finished += 1;
        return { changed: 0 };
      },
    };
    const current = start(clock, logger, [job]);
    await until(() => runs === 1, "the run at start");

    let stopped = false;
    const stopping = current.stop().then(() => {
      stopped = true;
    });
    await severalTicks();
    expect(stopped).to.equal(false);

    held.open();
    await stopping;
    expect(finished).to.equal(1);
    clock.advance(3_600);
    await severalTicks();
    expect(runs).to.equal(1);
    await current.stop(); // a second stop is harmless
  });

  it("claims nothing in the main runner while a lane that goes first runs jobs, and claims at once when it is idle", async () => {
    const clock = manualClock("2026-03-01T00:00:00.000Z");
    const { logger } = capturingLogger<LogLine>();
    const queue = processQueue(clock);
    const page = gate();
    const ran: string[] = [];
    const current = startWorkers({
      queue,
      clock,
      logger,
      jobs: [],
      handlers: {
        page: async () => {
          ran.push("page started");
          await page.opened;
          ran.push("page done");
        },
        delivery: async () => {
          ran.push("delivery");
        },
      },
      lanes: [{ kinds: ["page"], concurrency: 2, goesFirst: true }],
      // No periodic job to look for; the runners poll every 200 ms, and an enqueue wakes them at once.
      tickMs: 60_000,
    });
    workers.push(current);
    await queue.enqueue({ kind: "page", payload: {} });
    await until(() => ran.includes("page started"), "the page to start");
    await queue.enqueue({ kind: "delivery", payload: {} });
    await sleep(300);
    expect(ran).to.deep.equal(["page started"]);
    expect((await queue.stats()).delivery).to.deep.equal({ queued: 1 });
    page.open();
    await until(() => ran.includes("delivery"), "the delivery once the page is done", 5_000);
    expect(ran).to.deep.equal(["page started", "page done", "delivery"]);
  });
});

describe(`platform jobs (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let users: UsersRepo;
  let workers: Workers | undefined;
  // One service clock for the suite: it only moves forward, as in a running service.
  const clock = manualClock("2026-01-15T12:00:00.000Z");

  const createUser = (subject: string, email?: string) =>
    users.create({
      subject,
      email,
      displayName: subject,
      now: clock.now(),
      wallet: { managed: (index) => `0x${index.toString(16).padStart(40, "0")}` },
    });
  // The services of a worker process: fresh reads, and no wallet is ever derived.
  let presences: ProcessPresence[] = [];
  const workerServices = async () => {
    const services = await servicesFromConfig(loadConfig({ NODE_ENV: "test" }), {
      db,
      clock,
      processKind: "worker",
      cacheReads: false,
      wallets: { addressOf: () => expect.fail("the worker never provisions users"), signerOf: () => expect.fail("the worker never signs") },
    });
    presences.push(services.presence);
    return services;
  };
  const ranOnce = (lines: LogLine[], job: string) => lines.some((line) => line.job === job && line.msg.startsWith("job run"));

  before(async () => {
    db = await createTestDatabase();
    users = createUsersRepo({ db });
  });
  afterEach(async () => {
    await workers?.stop();
    workers = undefined;
    for (const presence of presences) await presence.stop();
    presences = [];
  });
  after(async () => {
    await db?.destroy();
  });

  it("runs one outbox consumer per name of CONSUMERS (the names stored with the events), each once", async () => {
    const names = (await workerServices()).outboxConsumers.map((consumer) => consumer.name);
    expect([...names].sort()).to.deep.equal([...CONSUMERS].sort());
  });

  it("the seniority job raises a user's seniority when the clock moves a month forward", async () => {
    const alice = await createUser("worker|alice");
    const { logger, lines } = capturingLogger<LogLine>();
    workers = startPlatformWorkers({ services: await workerServices(), clock, logger, tickMs: TICK_MS });
    expect(workers.jobs).to.deep.equal([
      "notifications.weekly-summary",
      "trust-score.guardians",
      "trust-score.seniority",
      "users.erase",
      "jobs.prune",
      "webhooks.prune-log",
    ]);
    expect(workers.loops).to.deep.equal(["outbox.produce"]);
    await until(() => ranOnce(lines, "trust-score.seniority"), "the seniority run at start");
    expect(await db.prisma.user.findUniqueOrThrow({ where: { id: alice.id } })).to.deep.include({ trustSeniority: 0, trustScore: 0 });

    clock.advance(31 * DAY_S); // 15 January to 15 February: one full month
    const seniority = async () => (await db.prisma.user.findUniqueOrThrow({ where: { id: alice.id } })).trustSeniority;
    await until(async () => (await seniority()) === 1, "the month step");
    await workers.stop();

    const row = await db.prisma.user.findUniqueOrThrow({ where: { id: alice.id } });
    expect(row).to.deep.include({ trustSeniority: 1, trustScore: 1, trustBaseScore: 1 });
    const history = await db.prisma.trustScoreHistory.findMany({ where: { userId: alice.id } });
    expect(history.map(({ day, score, change, reason }) => ({ day, score, change, reason }))).to.deep.equal([
      { day: "2026-02-15", score: 1, change: 1, reason: "seniority increase" },
    ]);
    const events = await db.prisma.domainEvent.findMany({ where: { userId: alice.id }, select: { type: true } });
    expect(events.map((event) => event.type).sort()).to.deep.equal(["trust_score.updated", "user.trust_score_updated"]);
    expect(lines.find((line) => line.job === "trust-score.seniority" && line.level === 30)).to.deep.include({
      msg: "job run changed data",
      changed: 1,
    });
  });

  it("the erase job erases an account once its deletion date has passed", async () => {
    const bob = await createUser("worker|bob", "bob@example.com");
    const deletedAt = clock.now();
    const erasureAt = new Date(deletedAt.getTime() + 30 * DAY_S * 1_000);
    await users.markDeleted(bob.id, deletedAt, erasureAt);
    const { logger, lines } = capturingLogger<LogLine>();
    // A new hour: the last test's workers ran the hourly jobs' current slots.
    clock.advance(3_600);
    workers = startPlatformWorkers({ services: await workerServices(), clock, logger, tickMs: TICK_MS });
    await until(() => ranOnce(lines, "users.erase"), "the erase run at start");
    expect(await db.prisma.user.findUniqueOrThrow({ where: { id: bob.id } })).to.deep.include({
      email: "bob@example.com",
      erasedAt: null,
    });

    clock.advance(30 * DAY_S + 1);
    const erasedAt = async () => (await db.prisma.user.findUniqueOrThrow({ where: { id: bob.id } })).erasedAt;
    await until(async () => (await erasedAt()) !== null, "the erasure");
    await workers.stop();

    const row = await db.prisma.user.findUniqueOrThrow({ where: { id: bob.id } });
    expect(row).to.deep.include({ email: null, displayName: "Deleted user", subject: "worker|bob" });
    expect(row.erasedAt?.toISOString()).to.equal(clock.now().toISOString());
    expect(lines.find((line) => line.job === "users.erase" && line.level === 30)).to.deep.include({
      changed: 1,
      userIds: [bob.id],
    });
  });
});

// Separate processes share PostgreSQL only (PGlite lives inside one process).
if (usingPostgres) {
  describe("two npm run worker processes on one PostgreSQL", function () {
    this.timeout(120_000);
    let db: TestDatabase;
    let children: StackProcess[] = [];

    after(async () => {
      for (const child of children) await child.stop();
      await db?.destroy();
    });

    it("both enqueue every periodic slot, and each slot runs once, on one of them", async () => {
      db = await createTestDatabase();
      children = [0, 1].map(() => startStack({ DATABASE_URL: db.url, CHAIN_RPC_URL: "" }, "worker"));
      const ready = await Promise.all(children.map((child) => child.ready()));
      expect(ready[0]).to.match(/^ready: worker jobs=notifications\.weekly-summary,.*,jobs\.prune,webhooks\.prune-log database=postgres$/);
      // The one-minute job gets a new slot each time the (shared) service clock moves a minute on.
      const clock = await createSharedClock(db);
      const periodic = { dedupeKey: { startsWith: "periodic:trust-score.guardians:" } };
      try {
        await until(
          async () => {
            if ((await db.prisma.job.count({ where: { ...periodic, status: "succeeded" } })) >= 4) return true;
            await clock.advance(61);
            return false;
          },
          "four slots",
          30_000,
          500,
        );
      } finally {
        clock.stop();
      }
      for (const child of children) await child.stop();

      const jobs = await db.prisma.job.findMany({ where: { dedupeKey: { startsWith: "periodic:" } } });
      const attempts = await db.prisma.jobAttempt.findMany({ where: { jobId: { in: jobs.map((job) => job.id) } } });
      // One job per slot (the key), tried once (the claim), by one process or the other.
      expect(jobs.filter((job) => job.status === "succeeded").length).to.be.at.least(4);
      expect(
        jobs.every((job) => job.attempts <= 1),
        JSON.stringify(jobs),
      ).to.equal(true);
      expect(attempts.length).to.equal(jobs.filter((job) => job.attempts === 1).length);
      expect(attempts.every((attempt) => attempt.outcome === "succeeded" || attempt.outcome === null)).to.equal(true);
      const processes = await db.prisma.serviceProcess.findMany({ select: { id: true } });
      expect(processes).to.deep.equal([]); // both stopped cleanly, their rows removed
      for (const child of children) expect(child.output()).to.not.match(/failed|Error/);
    });
  });
}
