import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";

// A file a newcomer reads in one sitting: no TypeScript source file of the service, its scripts
// or its client libraries is over 400 lines (generated code aside). A file that grows past it is
// split by role, as the social vault's, the loans' and the sender's were (#33).
const ROOT = path.resolve(import.meta.dirname, "..", "..");
const FOLDERS = ["api", "core", "domain", "indexer", "worker", "scripts", "packages"];
const MAX_LINES = 400;

function sourceFiles(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const file = path.join(folder, name);
    if (["node_modules", "generated", "dist", "docs"].includes(name)) return [];
    if (statSync(file).isDirectory()) return sourceFiles(file);
    return /\.tsx?$/.test(name) && !/\.(test|d)\.tsx?$/.test(name) ? [file] : [];
  });
}

describe("file size", () => {
  it(`keeps every source file at ${MAX_LINES} lines or fewer`, () => {
    const files = FOLDERS.flatMap((folder) => sourceFiles(path.join(ROOT, folder)));
    expect(files.length).to.be.at.least(100);
    const long = files
      .map((file) => ({ file: path.relative(ROOT, file), lines: readFileSync(file, "utf8").split("\n").length }))
      .filter(({ lines }) => lines > MAX_LINES);
    expect(long).to.deep.equal([]);
  });
});
