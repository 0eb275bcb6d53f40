import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The repository's root; the examples are written under it so `@trustmint/sdk` resolves as in an app. */
export const ROOT = path.resolve(fileURLToPath(import.meta.url), "../../../..");
export const EXAMPLES_DIR = path.join(ROOT, ".data", "readme-examples");

export interface Example {
  /** e.g. sdk-1.ts: the package, the example's place in its README, its language. */
  file: string;
  code: string;
  /** The heading the example sits under. */
  heading: string;
}

/** Every ```ts and ```tsx block of a package's README: each is a whole program that runs as written. */
export function readmeExamples(pkg: "sdk" | "react"): Example[] {
  const readme = readFileSync(path.join(ROOT, "packages", pkg, "README.md"), "utf8");
  const examples: Example[] = [];
  let heading = "";
  const lines = readme.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith("## ")) heading = line.slice(3);
    const fence = line.match(/^```(ts|tsx)$/);
    if (!fence) continue;
    const end = lines.indexOf("```", i + 1);
    if (end < 0) throw new Error(`README of ${pkg}: an unclosed block at line ${i + 1}`);
    examples.push({ file: `${pkg}-${examples.length + 1}.${fence[1]}`, code: `${lines.slice(i + 1, end).join("\n")}\n`, heading });
    i = end;
  }
  return examples;
}

/** Writes an example where it runs (prefix: what the test's compiler needs, not part of the example). */
export function writeExample(example: Example, prefix = ""): string {
  mkdirSync(EXAMPLES_DIR, { recursive: true });
  const file = path.join(EXAMPLES_DIR, example.file);
  writeFileSync(file, prefix + example.code);
  return file;
}
