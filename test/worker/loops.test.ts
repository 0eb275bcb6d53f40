// The continuous loops (worker/loops.ts) and how a process's runner yields to them: a loop goes
// again at once while it finds work, polls when idle, backs off when a pass fails; while a loop
// works off a backlog the runner claims no job, and claims again as soon as the loop is idle.
import { expect } from "chai";
import { createClock } from "../../core/clock.js";
import { createJobQueue } from "../../domain/jobs/queue.js";
import { startJobRunner } from "../../domain/jobs/runner.js";
import { createProcessPresence } from "../../domain/processes/presence.js";
import { startLoops } from "../../worker/loops.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";
import { capturingLogger, sleep, until } from "../helpers/waiting.js";

describe("continuous loops", () => {
  const clock = createClock();

  it("runs again at once while a pass finds work, polls when idle, and says when it is idle", async () => {
    let backlog = 5;
    const passes: number[] = [];
    let idled = 0;
    const loops = startLoops({
      clock,
      logger: capturingLogger().logger,
      // An idle poll far longer than the test: the backlog can only go by passes that follow each other at once.
      loops: [
        {
          name: "drain",
          idleMs: 60_000,
          run: async () => {
            if (backlog === 0) return 0;
            passes.push(backlog--);
            return 1;
          },
        },
      ],
      onIdle: () => {
        idled += 1;
      },
    });
    await until(() => idled === 1, "the loop to find nothing left");
    expect(passes).to.deep.equal([5, 4, 3, 2, 1]);
    expect(loops.busy()).to.equal(false);
    // stop() cuts the idle wait short.
    const started = performance.now();
    await loops.stop();
    expect(performance.now() - started).to.be.below(1_000);
  });

  it("is busy while it works, and backs off from a failing pass, said once, until it runs again", async () => {
    let calls = 0;
    let busyDuringWork = false;
    const { logger, lines } = capturingLogger();
    const loops = startLoops({
      clock,
      logger,
      loops: [
        {
          name: "flaky",
          idleMs: 5,
          run: async () => {
            calls += 1;
            if (calls <= 3) throw new Error("database down");
            if (calls === 4) return 1;
            busyDuringWork ||= loops.busy();
            return 0;
          },
        },
      ],
    });
    await until(() => calls >= 6, "the loop to run after its failures");
    await loops.stop();
    expect(busyDuringWork).to.equal(true);
    expect(lines.filter((line) => line.level >= 40).map((line) => line.msg)).to.deep.equal(["loop pass failed; retrying"]);
    expect(lines.map((line) => line.msg)).to.include("loop running again");
  });
});

describe(`a runner held by a busy loop (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(30_000);
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase();
  });
  after(async () => {
    await db?.destroy();
  });

  it("claims nothing while held, and runs the due jobs once woken", async () => {
    const clock = createClock();
    const presence = createProcessPresence({ db, kind: "test" });
    const queue = createJobQueue({ db, clock, presence });
    let held = true;
    const ran: string[] = [];
    const runner = startJobRunner({
      queue,
      handlers: { work: async (payload: { name: string }) => void ran.push(payload.name) },
      pollMs: 5,
      logger: capturingLogger().logger,
      holdWhile: () => held,
    });
    try {
      await queue.enqueueMany([
        { kind: "work", payload: { name: "a" } },
        { kind: "work", payload: { name: "b" } },
      ]);
      await sleep(200);
      expect(ran).to.deep.equal([]);
      expect((await queue.stats()).work).to.deep.equal({ queued: 2 });
      held = false;
      runner.wake();
      await until(() => ran.length === 2, "the jobs to run");
      expect(ran.sort()).to.deep.equal(["a", "b"]);
    } finally {
      await runner.stop();
      await presence.stop();
    }
  });
});
