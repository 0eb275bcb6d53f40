// `npm publish --dry-run` of each package, as `npm run check` runs it: what would be published,
// without publishing (that stays a person's decision). Fails on any warning npm gives but the
// one a dry run gives without a login, and when a tarball would lack its built code, its
// reference or its license.
import { spawnSync } from "node:child_process";

const PACKAGES = ["packages/sdk", "packages/react"];
const REQUIRED = ["dist/index.js", "dist/index.d.ts", "docs/api/README.md", "README.md", "LICENSE", "CHANGELOG.md"];
const LOGIN_WARNING = /requires you to be logged in/;

let failed = false;
const fail = (message) => {
  console.error(`publish-dry-run: ${message}`);
  failed = true;
};
for (const dir of PACKAGES) {
  const run = spawnSync("npm", ["publish", "--dry-run", "--json", "--ignore-scripts"], { cwd: dir, encoding: "utf8" });
  if (run.status !== 0) {
    fail(`${dir}: npm publish --dry-run failed\n${run.stderr}`);
    continue;
  }
  const warnings = run.stderr.split("\n").filter((line) => /^npm (warn|error)/i.test(line) && !LOGIN_WARNING.test(line));
  if (warnings.length > 0) fail(`${dir}:\n${warnings.join("\n")}`);
  const [report] = Object.values(JSON.parse(run.stdout));
  const files = new Set(report.files.map((file) => file.path));
  const missing = REQUIRED.filter((file) => !files.has(file));
  if (missing.length > 0) fail(`${report.name} would be published without ${missing.join(", ")} (npm run check builds them)`);
  console.log(`publish-dry-run: ${report.name}@${report.version}: ${report.entryCount} files, ${report.size} bytes packed`);
}
if (failed) process.exit(1);
