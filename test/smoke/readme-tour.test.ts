// The README's five-minute tour, run as it is written (its shell block, against `npm start`):
// every answer is a success, and the deposit, the position and the loan request say what the
// tour says they do.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { sharedService } from "../helpers/service-process.js";

const ROOT = path.resolve(import.meta.dirname, "..", "..");

function tourScript(): string {
  const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
  const start = readme.indexOf("## A five-minute tour");
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(start));
  if (start < 0 || !block) throw new Error("README: no five-minute tour");
  return block[1]!;
}

describe("the README's five-minute tour", function () {
  this.timeout(120_000);

  it("runs as written against npm start: each answer a success, 50 USDC in the vault, a pending loan", async () => {
    const { url } = await sharedService();
    // The tour's address is npm start's default; each answer on a line of its own, to read them back.
    const script = tourScript().replaceAll("localhost:3000", url.replace("http://", "")).replaceAll("curl -s ", "curl -s -w '\\n' ");
    const output = execFileSync("bash", ["-euo", "pipefail", "-c", script], { encoding: "utf8", timeout: 90_000 });
    const answers = output
      .split("\n")
      .filter((line) => line.trim() !== "")
      .map((line) => JSON.parse(line));
    expect(answers.map((answer) => answer.success)).to.deep.equal(answers.map(() => true));
    expect(answers.find((answer) => answer.data?.depositAmount)?.data.depositAmount).to.equal("50.00");
    expect(answers.find((answer) => answer.data?.usdcValue)?.data.usdcValue).to.equal("50.00");
    expect(answers.find((answer) => answer.data?.status === "pending")?.data).to.include({ amount: 20, duration: 7 });
    expect(answers.find((answer) => typeof answer.data?.score === "number")).to.not.equal(undefined);
  });
});
