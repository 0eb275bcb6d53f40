// The receiver example of docs/api-tour.md, run as it is written (extracted from it): it takes
// a real signed delivery, refuses a bad signature (401) and a stale timestamp (400), and
// acknowledges a repeated id without handling it twice, unless a `.reverted` took it back.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { signDelivery } from "../../domain/webhooks/signing.js";
import { startTestApi, type TestApi } from "../helpers/api.js";
import { freePort } from "../helpers/stack.js";
import { until } from "../helpers/waiting.js";

const ROOT = path.resolve(import.meta.dirname, "..", "..");
const SECRET = "readme-receiver-secret-0123456789";

function readmeReceiver(): string {
  const readme = readFileSync(path.join(ROOT, "docs", "api-tour.md"), "utf8");
  const start = readme.indexOf("A receiver in Node");
  const block = /```js\n([\s\S]*?)```/.exec(readme.slice(start));
  if (start < 0 || !block) throw new Error("docs/api-tour.md: no receiver example");
  // The walk indents it under a list item.
  return block[1]!.replace(/^ {2}/gm, "");
}

describe("the API walk's webhook receiver example", function () {
  this.timeout(60_000);
  let api: TestApi;
  let receiver: ChildProcess;
  let port: number;

  before(async () => {
    api = await startTestApi();
    port = await freePort();
    // The example logs each event it handles: a line on stdout marks it handled.
    const code = readmeReceiver().replace("// ... handle event.event with event.data ...", 'console.log("handled " + event.id);');
    receiver = spawn(process.execPath, ["--input-type=module", "-e", code], {
      cwd: ROOT,
      env: { ...process.env, WEBHOOK_SECRET: SECRET, PORT: String(port) },
      stdio: ["ignore", "pipe", "inherit"],
    });
    await until(async () => (await fetch(`http://127.0.0.1:${port}/`).catch(() => null)) !== null, "the receiver to listen", 10_000, 50);
  });
  after(async () => {
    receiver?.kill();
    await api?.close();
  });

  it("accepts a signed delivery once, and refuses a bad signature, a stale timestamp and a stale one made fresh", async () => {
    let output = "";
    receiver.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    const token = await api.token("readme|receiver", { name: "Receiver" });
    const hook = await api.request("POST", "/v1/webhooks", {
      token,
      body: { url: `http://127.0.0.1:${port}/hooks`, events: ["loan.funded"], secret: SECRET },
    });
    expect(hook.status, hook.text).to.equal(201);
    const tested = await api.request("POST", `/v1/webhooks/${hook.body.data.id}/test`, { token, body: { event: "loan.funded" } });
    expect(tested.body.data).to.include({ delivered: true, statusCode: 200 });
    await until(() => output.includes("handled "), "the receiver to handle the delivery");

    const send = (headers: Record<string, string>, body: string) =>
      fetch(`http://127.0.0.1:${port}/hooks`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
    const body = JSON.stringify({ id: "evt-readme-1", event: "loan.funded", timestamp: new Date().toISOString(), data: {} });
    const now = Math.floor(Date.now() / 1000);
    const signed = signDelivery({ secrets: [SECRET], messageId: "evt-readme-1", timestampSeconds: now, body });
    expect((await send({ ...signed }, body)).status).to.equal(200);
    // The same id again: acknowledged, not handled again.
    expect((await send({ ...signed }, body)).status).to.equal(200);
    expect(output.match(/handled evt-readme-1/g)).to.have.length(1);
    // A reorg took it back: the .reverted is handled, and the fact, sent again under its id, is handled again.
    const reverted = JSON.stringify({
      id: "evt-readme-r",
      event: "loan.funded.reverted",
      timestamp: new Date().toISOString(),
      data: JSON.parse(body),
    });
    const revertSigned = signDelivery({ secrets: [SECRET], messageId: "evt-readme-r", timestampSeconds: now, body: reverted });
    expect((await send({ ...revertSigned }, reverted)).status).to.equal(200);
    await until(() => output.includes("handled evt-readme-r"), "the .reverted handled");
    expect((await send({ ...signed }, body)).status).to.equal(200);
    await until(() => output.match(/handled evt-readme-1/g)?.length === 2, "the fact handled again");
    const other = signDelivery({ secrets: ["another-secret-of-enough-length"], messageId: "evt-readme-2", timestampSeconds: now, body });
    expect((await send({ ...other }, body)).status).to.equal(401);
    const stale = signDelivery({ secrets: [SECRET], messageId: "evt-readme-3", timestampSeconds: now - 600, body });
    expect((await send({ ...stale }, body)).status).to.equal(400);
    // The stale attempt with a fresh time written over it: its webhook-signature no longer matches.
    expect((await send({ ...stale, "webhook-timestamp": String(now) }, body)).status).to.equal(401);
  });
});
