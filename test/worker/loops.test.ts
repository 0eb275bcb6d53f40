// The continuous loops (worker/loops.ts): a loop goes again at once while it finds work, polls
// when idle, and backs off when a pass fails.
import { expect } from "chai";
import { createClock } from "../../core/clock.js";
import { startLoops } from "../../worker/loops.js";
import { capturingLogger, until } from "../helpers/waiting.js";

describe("continuous loops", () => {
  const clock = createClock();

  it("runs again at once while a pass finds work, and polls when idle", async () => {
    let backlog = 5;
    const passes: number[] = [];
    let idlePasses = 0;
    const loops = startLoops({
      clock,
      logger: capturingLogger().logger,
      // An idle poll far longer than the test: the backlog can only go by passes that follow each other at once.
      loops: [
        {
          name: "drain",
          idleMs: 60_000,
          run: async () => {
            if (backlog === 0) {
              idlePasses += 1;
              return 0;
            }
            passes.push(backlog--);
            return 1;
          },
        },
      ],
    });
    await until(() => idlePasses === 1, "the loop to find nothing left");
    expect(passes).to.deep.equal([5, 4, 3, 2, 1]);
    // stop() cuts the idle wait short.
    const started = performance.now();
    await loops.stop();
    expect(performance.now() - started).to.be.below(1_000);
    expect(idlePasses).to.equal(1);
  });

  it("backs off from a failing pass, said once, until it runs again", async () => {
    let calls = 0;
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
            return calls === 4 ? 1 : 0;
          },
        },
      ],
    });
    await until(() => calls >= 6, "the loop to run after its failures");
    await loops.stop();
    expect(lines.filter((line) => line.level >= 40).map((line) => line.msg)).to.deep.equal(["loop pass failed; retrying"]);
    expect(lines.map((line) => line.msg)).to.include("loop running again");
  });
});
