import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { EXAMPLES_DIR, ROOT, readmeExamples, writeExample } from "./readme.js";
import { sharedService } from "./support.js";

// The packages' READMEs run as written: every ts/tsx block type-checks against the built
// packages as an app's would, and each of the SDK's runs against the service (`npm start`) as
// its own program, TRUSTMINT_URL pointing at it. (The React example runs in its own test, in
// the React tests' DOM.)

const run = promisify(execFile);
const NODE = process.execPath;

describe("the packages' READMEs", function () {
  this.timeout(120_000);
  const sdk = readmeExamples("sdk");
  const react = readmeExamples("react");

  it("has the examples the READMEs promise, and each type-checks as an app's code", async () => {
    expect(sdk.map((example) => example.heading)).to.deep.equal([
      "Quick start",
      "Sign in with a wallet",
      "Live notifications",
      "Webhooks",
      "Money",
      "The payments library",
    ]);
    expect(react.map((example) => example.heading)).to.deep.equal(["Quick start", "A wallet app"]);
    for (const example of [...sdk, ...react]) writeExample(example);
    writeFileSync(
      path.join(EXAMPLES_DIR, "tsconfig.json"),
      JSON.stringify({
        extends: "../../tsconfig.json",
        compilerOptions: { lib: ["ES2024", "DOM", "DOM.Iterable"], jsx: "react-jsx", types: ["node"] },
        include: [...sdk, ...react].map((example) => example.file),
      }),
    );
    const tsc = path.join(ROOT, "node_modules", "typescript", "bin", "tsc");
    const checked = await run(NODE, [tsc, "--noEmit", "-p", EXAMPLES_DIR], { cwd: ROOT }).catch((error) => error);
    expect(checked.stdout ?? "", "tsc's complaints").to.equal("");
  });

  for (const [index, example] of sdk.entries()) {
    it(`runs the SDK's "${example.heading}" example against npm start`, async () => {
      const { url } = await sharedService();
      const file = writeExample(example);
      const { stdout, stderr } = await run(NODE, ["--import", "tsx", "--disable-warning=ExperimentalWarning", file], {
        cwd: ROOT,
        env: { ...process.env, TRUSTMINT_URL: url },
        timeout: 90_000,
      }).catch((error) => {
        throw new Error(`example ${index + 1} (${example.heading}) failed:\n${error.stdout}\n${error.stderr}`);
      });
      expect(stderr).to.equal("");
      expect(stdout).to.not.equal("");
      // What each example prints, from the service's answers.
      const expected: Record<string, RegExp> = {
        "Quick start": /vault position: 25\.00 USDC[\s\S]*refused: 400 INSUFFICIENT_BALANCE[\s\S]*deposit 25\.00 0x[0-9a-f]{64}/,
        "Sign in with a wallet": /^signed in: 0x[0-9a-fA-F]{40} self\ndeposited: 10\.00 ETH spent: none\n$/,
        "Live notifications": /unread: 0\nnew: /,
        Webhooks: /verified: \[ 'vault\.deposit' \]/,
        Money: /^12\.65\n12\.65\n$/,
        "The payments library": /status: success\nrefunded 5 USDC; 5 in all/,
      };
      expect(stdout).to.match(expected[example.heading]!);
    });
  }
});
