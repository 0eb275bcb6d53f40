import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";

// The docs that describe the code as it is now (the README, the folders' READMEs, docs/ but the
// decisions and the performance history, which record the past) name only identifiers the code
// still has: a function renamed or removed leaves no stale `name` behind. Checked: names in
// backticks written like code (camelCase, PascalCase with an inner capital, or CONSTANT_CASE).
const ROOT = path.resolve(import.meta.dirname, "..", "..");
const CODE = [
  "core",
  "domain",
  "api",
  "indexer",
  "worker",
  "scripts",
  "contracts",
  "packages/sdk/src",
  "packages/sdk/test",
  "packages/react/src",
  "prisma",
  "test",
];
const HISTORY = ["docs/decisions.md", "docs/perf"];
const SKIP = new Set(["node_modules", "dist", "generated", "docs/api"]);
/** Names that are not the code's: placeholders, a JSON-RPC method, a profiler's thread names, a table of what was removed. */
const NOT_CODE = new Set(["createXxxService", "createXxxRepo", "eth_estimateGas", "WorkerThread", "V8Worker", "UserTransactionLease"]);
const CODE_LIKE = /^(?:[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*|[A-Z][A-Z0-9]*_[A-Z0-9_]+)$/;

function filesUnder(folder: string, keep: (file: string) => boolean): string[] {
  return readdirSync(path.join(ROOT, folder)).flatMap((name) => {
    const relative = path.join(folder, name);
    if (SKIP.has(name) || SKIP.has(relative.replace(/^packages\/[^/]+\//, ""))) return [];
    if (statSync(path.join(ROOT, relative)).isDirectory()) return filesUnder(relative, keep);
    return keep(relative) ? [relative] : [];
  });
}

describe("documentation names", () => {
  it("name only identifiers the code has", () => {
    const source = CODE.flatMap((folder) => filesUnder(folder, (file) => /\.(ts|tsx|sol|mjs|prisma)$/.test(file)))
      .map((file) => readFileSync(path.join(ROOT, file), "utf8"))
      .join("\n");
    const docs = [
      "README.md",
      ...["core", "domain", "api", "indexer", "worker", "scripts", "contracts", "packages", "docs"].flatMap((folder) =>
        filesUnder(folder, (file) => file.endsWith(".md") && !HISTORY.some((history) => file.startsWith(history))),
      ),
    ];
    expect(docs.length).to.be.greaterThan(25);
    const stale = docs.flatMap((doc) =>
      [
        ...new Set(
          [...readFileSync(path.join(ROOT, doc), "utf8").matchAll(/`([A-Za-z_][A-Za-z0-9_]*)(?:\([^`]*\))?`/g)].map((match) => match[1]!),
        ),
      ]
        .filter((name) => name.length > 5 && CODE_LIKE.test(name) && !NOT_CODE.has(name) && !source.includes(name))
        .map((name) => `${doc}: ${name}`),
    );
    expect(stale).to.deep.equal([]);
  });
});
