import { existsSync } from "node:fs";
import { expect } from "chai";
import { startStack } from "../helpers/stack.js";

// The helper every process test starts children with: a child that hangs must fail its test, not
// hold the run open (one CI run waited 75 minutes on a start that never printed its ready line).
describe("the test helper that starts processes", function () {
  this.timeout(60_000);

  it("kills a child that is not ready in time, says what it printed and where its threads stood, and removes its DATA_DIR", async () => {
    const stack = startStack({}, "test/helpers/fixtures/never-ready.ts");
    const error = await stack.ready(3_000).then(
      () => expect.fail("a blocked child was taken as ready"),
      (reason: Error) => reason,
    );
    expect(error.message).to.match(/^no ready line within 3000 ms:\nstarting\n/);
    // Where the machine lets gdb attach, each thread's frames: the main thread's blocked in Atomics.wait.
    expect(error.message).to.match(/threads of process \d+ \(gdb\):\n[\s\S]*AtomicsWait|\(no thread stacks: .+\)/);
    expect(await stack.exited()).to.equal(null);
    expect(stack.child.signalCode).to.equal("SIGKILL");
    expect(existsSync(stack.dataDir)).to.equal(false);
  });

  it("stop() kills a child whose blocked event loop never runs its SIGTERM handler", async () => {
    const stack = startStack({}, "test/helpers/fixtures/never-ready.ts");
    await new Promise<void>((resolve) => stack.child.stdout?.once("data", () => resolve()));
    expect(await stack.stop("SIGTERM", 1_000)).to.equal(null);
    expect(stack.child.signalCode).to.equal("SIGKILL");
  });
});
