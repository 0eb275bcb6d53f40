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
            if (backlog === 0) return { did: 0 };
            passes.push(backlog--);
            return { did: 1 };
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
            if (calls === 4) return { did: 1 };
            busyDuringWork ||= loops.busy();
            return { did: 0 };
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

  it("stays busy and looks again soon while another process holds the work of a burst, and goes idle once it is done", async () => {
    // A pass finds work, three find it held elsewhere, then it is gone: the idle poll is far
    // longer than the test, so the passes can only follow each other at the contended pace.
    const passes: ("work" | "held" | "none")[] = ["work", "held", "held", "held", "none"];
    let busyWhileHeld = true;
    let idled = 0;
    let at = 0;
    const loops = startLoops({
      clock,
      logger: capturingLogger().logger,
      loops: [
        {
          name: "shared",
          idleMs: 60_000,
          run: async () => {
            const pass = passes[at++] ?? "none";
            if (pass === "held" && at > 2) busyWhileHeld &&= loops.busy();
            return pass === "work" ? { did: 1 } : { did: 0, contended: pass === "held" };
          },
        },
      ],
      onIdle: () => {
        idled += 1;
      },
    });
    await until(() => idled === 1, "the loop to go idle after the held work", 2_000);
    expect(at).to.equal(5);
    expect(busyWhileHeld).to.equal(true);
    expect(loops.busy()).to.equal(false);
    await loops.stop();
  });

  it("stays idle when an idle poll meets another process's partition lock", async () => {
    let passes = 0;
    let everBusy = false;
    const loops = startLoops({
      clock,
      logger: capturingLogger().logger,
      loops: [
        {
          name: "idle",
          idleMs: 20,
          run: async () => {
            passes += 1;
            everBusy ||= passes > 1 && loops.busy();
            return { did: 0, contended: true };
          },
        },
      ],
    });
    await until(() => passes >= 4, "a few idle passes");
    await loops.stop();
    expect(everBusy).to.equal(false);
  });

  it("is busy from the moment a pass finds work, before the pass is over", async () => {
    let passes = 0;
    const busy: boolean[] = [];
    const loops = startLoops({
      clock: createClock(),
      logger: capturingLogger().logger,
      loops: [
        {
          name: "burst",
          idleMs: 5,
          run: async (_now, found) => {
            passes += 1;
            if (passes > 1) return { did: 0 };
            // The first pass starts inside startLoops: `loops` is assigned once it returns.
            await sleep(1);
            busy.push(loops.busy());
            found();
            busy.push(loops.busy());
            return { did: 1 };
          },
        },
      ],
    });
    await until(() => passes >= 2, "a second pass");
    await loops.stop();
    expect(busy).to.deep.equal([false, true]);
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
