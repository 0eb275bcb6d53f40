import { setTimeout as sleep } from "node:timers/promises";
import { expect } from "chai";
import { startSteps } from "../../scripts/lifecycle.js";

describe("npm start's progress while it starts", () => {
  it("says which steps are still running, until done", async () => {
    const said: { waitingFor: string[] }[] = [];
    const steps = startSteps({ warn: (fields: object) => said.push(fields as { waitingFor: string[] }) } as never, 20);
    let release = () => {};
    const slow = steps.track("the database", new Promise<void>((resolve) => (release = resolve)));
    await steps.track("the chain", Promise.resolve());
    const failed = steps.track("the deployment", Promise.reject(new Error("no contracts"))).catch((error: Error) => error.message);
    expect(await failed).to.equal("no contracts");
    await sleep(70);
    expect(said.length).to.be.greaterThan(0);
    expect(said.at(-1)!.waitingFor).to.deep.equal(["the database"]);
    release();
    await slow;
    await sleep(50);
    expect(said.at(-1)!.waitingFor).to.deep.equal([]);
    steps.done();
    const count = said.length;
    await sleep(60);
    expect(said.length).to.equal(count);
  });
});
