import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";

// The repository stands on its own: every relative link of its Markdown (the README, docs/, the
// folders' READMEs, the packages') names a file or folder inside it that exists.
const ROOT = path.resolve(import.meta.dirname, "..", "..");
const SKIP = new Set(["node_modules", ".git", "dist", "artifacts", "cache", ".data", "test-artifacts", "generated", "types"]);
const LINK = /\]\(([^)\s]+)\)/g;

function markdownFiles(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    if (SKIP.has(name)) return [];
    const file = path.join(folder, name);
    if (statSync(file).isDirectory()) return name === "api" && folder.endsWith("docs") ? [] : markdownFiles(file);
    return name.endsWith(".md") ? [file] : [];
  });
}

describe("documentation links", () => {
  it("point at files inside the repository that exist", () => {
    const files = markdownFiles(ROOT);
    expect(files.length).to.be.greaterThan(20);
    const links = files.flatMap((file) =>
      [...readFileSync(file, "utf8").matchAll(LINK)]
        .map((match) => ({ file, target: match[1]! }))
        .filter(({ target }) => !/^(https?:|mailto:|#)/.test(target)),
    );
    expect(links.length).to.be.greaterThan(100);
    const broken = links
      .filter(({ file, target }) => !existsSync(path.resolve(path.dirname(file), decodeURIComponent(target.split("#")[0]!))))
      .map(({ file, target }) => `${path.relative(ROOT, file)}: ${target}`);
    expect(broken).to.deep.equal([]);
  });
});
