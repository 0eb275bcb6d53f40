import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";

// The layers, lowest first: core (configuration, database, chain), domain (services,
// repositories, rules, the event catalogue), then its users: the indexer, the workers and the
// HTTP API. A layer imports only from layers below it, so the domain can be called from every
// process and the API stays a thin HTTP shell.
const ROOT = path.resolve(import.meta.dirname, "..", "..");
const FORBIDDEN: Record<string, string[]> = {
  core: ["api", "domain", "indexer", "worker"],
  domain: ["api", "indexer", "worker"],
  indexer: ["api", "worker"],
  worker: ["api", "indexer"],
};

function sourceFiles(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const file = path.join(folder, name);
    if (statSync(file).isDirectory()) return sourceFiles(file);
    return file.endsWith(".ts") ? [file] : [];
  });
}

/** Every relative import and re-export specifier of a file. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/(?:import|export)\s[^;]*?from\s+"(\.[^"]+)"|import\(\s*"(\.[^"]+)"\s*\)/g)].map((m) => (m[1] ?? m[2])!);
}

describe("layers", () => {
  for (const [layer, forbidden] of Object.entries(FORBIDDEN)) {
    it(`${layer}/ imports nothing from ${forbidden.join(", ")}`, () => {
      const offending = sourceFiles(path.join(ROOT, layer)).flatMap((file) =>
        importsOf(file)
          .map((specifier) => path.relative(ROOT, path.resolve(path.dirname(file), specifier)))
          .filter((target) => forbidden.includes(target.split(path.sep)[0]!))
          .map((target) => `${path.relative(ROOT, file)} -> ${target}`),
      );
      expect(offending).to.deep.equal([]);
    });
  }

  it("finds the imports it checks (the scan is not vacuous)", () => {
    const domainImports = sourceFiles(path.join(ROOT, "domain")).flatMap(importsOf);
    expect(domainImports).to.include("../core/clock.js");
    expect(importsOf(path.join(ROOT, "indexer", "store.ts"))).to.include("../domain/users/wallet-directory.js");
  });
});
