// Fails when a focused test (`.only`, `describe.only`, `it.only`) would silence the rest of a suite.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

const FOCUSED = /\b(?:describe|context|it|test|suite)\.only\s*\(/;
const offenders = [];
function walk(dir) {
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) walk(file);
    else if (/\.(ts|tsx|js|mjs)$/.test(name)) {
      readFileSync(file, "utf8")
        .split("\n")
        .forEach((line, index) => {
          if (FOCUSED.test(line)) offenders.push(`${file}:${index + 1}: ${line.trim()}`);
        });
    }
  }
}
walk("test");
for (const pkg of readdirSync("packages"))
  if (statSync(path.join("packages", pkg, "test"), { throwIfNoEntry: false })?.isDirectory()) walk(path.join("packages", pkg, "test"));
if (offenders.length > 0) {
  console.error(`focused tests found (remove .only):\n${offenders.join("\n")}`);
  process.exit(1);
}
console.log("check: no focused tests");
