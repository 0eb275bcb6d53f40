import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";

// Every tuning constant carries its reason beside it: a numeric constant at the top level of the
// service's code (a limit, a delay, a size, a count) has a comment on the line above that says
// why it is what it is (or stands in a group of constants under one), so a newcomer can change
// it knowing what it trades.
const ROOT = path.resolve(import.meta.dirname, "..", "..");
const FOLDERS = ["core", "domain", "indexer", "worker", "api"];
const CONSTANT = /^(?:export )?const ([A-Z][A-Z0-9_]+)(?:: [A-Za-z]+)? = [0-9][0-9_.]*(?: \*\s*[0-9_.]+)*;/;

function sourceFiles(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const file = path.join(folder, name);
    if (statSync(file).isDirectory()) return sourceFiles(file);
    return file.endsWith(".ts") ? [file] : [];
  });
}

/** Each numeric top-level constant of the folders, with whether the line above it is a comment. */
function constants() {
  return FOLDERS.flatMap((folder) =>
    sourceFiles(path.join(ROOT, folder)).flatMap((file) => {
      const lines = readFileSync(file, "utf8").split("\n");
      const explained: boolean[] = [];
      return lines.flatMap((line, i) => {
        const match = CONSTANT.exec(line);
        if (!match) return [];
        const above = (lines[i - 1] ?? "").trim();
        const comment = above.startsWith("//") || above.startsWith("/**") || above.startsWith("*") || above.endsWith("*/");
        // A group: the constant right above was explained (MIN_ and MAX_ of one range, say).
        explained[i] = comment || explained[i - 1] === true;
        return [{ name: `${path.relative(ROOT, file)}: ${match[1]}`, explained: explained[i] }];
      });
    }),
  );
}

describe("tuning constants", () => {
  it("each has its reason in a comment beside it", () => {
    expect(
      constants()
        .filter((constant) => !constant.explained)
        .map((constant) => constant.name),
    ).to.deep.equal([]);
  });

  it("finds the constants it checks (the scan is not vacuous)", () => {
    const names = constants().map((constant) => constant.name);
    expect(names).to.include("domain/jobs/types.ts: DEFAULT_MAX_ATTEMPTS");
    expect(names).to.include("worker/jobs.ts: OUTBOX_SLOTS");
    expect(names.length).to.be.above(50);
  });
});
