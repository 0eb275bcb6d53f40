// `npm run build`: the contracts (Hardhat, into artifacts/) and the service's TypeScript compiled to
// JavaScript (esbuild, into dist/), which `npm start` runs: no TypeScript compiler at start (D-87).
//
//   node scripts/build.mjs              both, always (Hardhat's own cache skips unchanged contracts)
//   node scripts/build.mjs --if-stale   each part only when its inputs changed since it was built
//                                       (`npm start`'s prestart: about 0.1 s when nothing did)
//
// Plain JavaScript, so it runs before anything is compiled. Each part writes a stamp (the hash of
// its inputs) once it has succeeded; a missing or different stamp means "build it".
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "..");
const DIST = path.join(ROOT, "dist");
/** The folders of the service's code (tests stay on tsx: they run the sources). */
const SOURCE_FOLDERS = ["api", "core", "domain", "indexer", "scripts", "worker", "generated"];
const CONTRACTS_STAMP = path.join(ROOT, "artifacts", ".inputs.sha256");
const DIST_STAMP = path.join(DIST, ".inputs.sha256");
const ifStale = process.argv.includes("--if-stale");

function filesUnder(folder, keep) {
  if (!existsSync(folder)) return [];
  return readdirSync(folder, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && keep(entry.name))
    .map((entry) => path.join(entry.parentPath, entry.name))
    .sort();
}

/** One hash over the files' paths and contents, and any extra text (tool versions). */
function hashOf(files, extra = "") {
  const hash = createHash("sha256").update(extra);
  for (const file of files) hash.update(`\0${path.relative(ROOT, file)}\0`).update(readFileSync(file));
  return hash.digest("hex");
}

const versionOf = (name) => JSON.parse(readFileSync(path.join(ROOT, "node_modules", name, "package.json"), "utf8")).version;
const stampSays = (file, hash) => existsSync(file) && readFileSync(file, "utf8").trim() === hash;

function buildContracts() {
  // What the platform's artifacts depend on; the Solidity tests (test/contracts) are compiled by `hardhat test`.
  const inputs = [...filesUnder(path.join(ROOT, "contracts"), (name) => name.endsWith(".sol")), path.join(ROOT, "hardhat.config.ts")];
  const hash = hashOf(inputs, `solc ${versionOf("solc")} openzeppelin ${versionOf("@openzeppelin/contracts")}`);
  if (ifStale && stampSays(CONTRACTS_STAMP, hash)) return;
  // Hardhat's CLI on this Node (the project's Node 24 under npm), whatever PATH says.
  const cli = path.join(path.dirname(createRequire(import.meta.url).resolve("hardhat/package.json")), "dist", "src", "cli.js");
  const hardhat = spawnSync(process.execPath, [cli, "build", "--quiet"], { cwd: ROOT, stdio: "inherit" });
  if (hardhat.status !== 0) process.exit(hardhat.status ?? 1);
  writeFileSync(CONTRACTS_STAMP, `${hash}\n`);
}

async function buildJavaScript() {
  const sources = SOURCE_FOLDERS.flatMap((folder) =>
    filesUnder(path.join(ROOT, folder), (name) => name.endsWith(".ts") && !name.endsWith(".d.ts")),
  );
  const hash = hashOf([...sources, path.join(ROOT, "tsconfig.json"), import.meta.filename], `esbuild ${versionOf("esbuild")}`);
  if (ifStale && stampSays(DIST_STAMP, hash)) return;
  const { build } = await import("esbuild");
  // A clean folder: a source deleted since the last build leaves no module behind.
  rmSync(DIST, { recursive: true, force: true });
  // One file in, one file out, same layout (dist/core/db.js): imports keep their `.js` names.
  await build({
    entryPoints: sources,
    outdir: DIST,
    outbase: ROOT,
    format: "esm",
    platform: "node",
    target: "node24",
    sourcemap: "linked",
    logLevel: "warning",
  });
  mkdirSync(DIST, { recursive: true });
  writeFileSync(DIST_STAMP, `${hash}\n`);
}

buildContracts();
await buildJavaScript();
