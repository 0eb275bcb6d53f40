import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";

// No import circles in the service's code (type-only imports count too: a circle of types is a
// circle of concepts). A circle is broken by moving the shared piece down into the file both
// need, or into a types file of its own.
const ROOT = path.resolve(import.meta.dirname, "..", "..");
const FOLDERS = ["core", "domain", "api", "indexer", "worker", "scripts"];
const IMPORT = /^(?:import|export)\s[^;]*?from\s+"(\.{1,2}\/[^"]+)"/gm;

function sourceFiles(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const file = path.join(folder, name);
    if (statSync(file).isDirectory()) return sourceFiles(file);
    return file.endsWith(".ts") ? [file] : [];
  });
}

/** Each source file and the source files it imports (relative `.js` specifiers, as the code writes them), by their paths in the repository. */
function importGraph(): Map<string, string[]> {
  const files = FOLDERS.flatMap((folder) => sourceFiles(path.join(ROOT, folder)));
  const known = new Set(files);
  return new Map(
    files.map((file) => {
      const targets = [...readFileSync(file, "utf8").matchAll(IMPORT)]
        .map((match) => path.resolve(path.dirname(file), match[1]!.replace(/\.js$/, ".ts")))
        .filter((target) => known.has(target))
        .map((target) => path.relative(ROOT, target));
      return [path.relative(ROOT, file), [...new Set(targets)]];
    }),
  );
}

/** Every circle, once, as the files around it (Tarjan's strongly connected components of more than one file, or a file importing itself). */
function circles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string) => {
    indexOf.set(file, index);
    low.set(file, index++);
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!indexOf.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, indexOf.get(target)!));
    }
    if (low.get(file) === indexOf.get(file)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== file);
      if (component.length > 1 || graph.get(file)?.includes(file)) found.push(component.sort());
    }
  };
  for (const file of graph.keys()) if (!indexOf.has(file)) visit(file);
  return found;
}

describe("imports", () => {
  it("form no circle", () => {
    const graph = importGraph();
    expect(graph.size).to.be.greaterThan(200);
    expect(circles(graph)).to.deep.equal([]);
  });

  it("the circle finder finds a circle (its own check)", () => {
    const graph = new Map([
      ["a", ["b"]],
      ["b", ["c"]],
      ["c", ["a"]],
      ["d", ["a"]],
    ]);
    expect(circles(graph)).to.deep.equal([["a", "b", "c"]]);
  });
});
