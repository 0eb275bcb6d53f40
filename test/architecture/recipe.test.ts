import { readFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";

// docs/adding-a-domain.md shows a real manifest: its copy is the file, so the recipe's example
// cannot drift from the code (the files and names it cites are checked by doc-links and doc-names).
const ROOT = path.resolve(import.meta.dirname, "..", "..");

describe("the recipe for a domain (docs/adding-a-domain.md)", () => {
  it("shows domain/webhooks/module.ts as it is", () => {
    const recipe = readFileSync(path.join(ROOT, "docs", "adding-a-domain.md"), "utf8");
    const example = /```ts\n([\s\S]*?)```/.exec(recipe)?.[1];
    expect(example).to.match(/^\/\/ The webhooks' manifest/);
    expect(example).to.equal(readFileSync(path.join(ROOT, "domain", "webhooks", "module.ts"), "utf8"));
  });
});
