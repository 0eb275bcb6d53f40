// Root postinstall. npm runs it with node_modules/.bin first on PATH, so `node`
// (and any `npm` started from here) is the Node 24 of the `node` package.
//
// Why a second install: npm itself may run under the machine's Node 20, and npm
// skips optional dependencies whose `engines` reject the Node running npm. EDR's
// native platform package declares node >= 22, so Hardhat would find no binding.
// Re-running the install under Node 24 adds exactly what was skipped.
import { spawnSync } from "node:child_process";

const major = Number(process.versions.node.split(".")[0]);
if (major < 22) {
  console.error(
    `postinstall: running on Node ${process.versions.node}; the project needs the Node 24 of the "node" package (is it approved in allowScripts?)`,
  );
  process.exit(1);
}

// Checked in a child process: a failed native load stays cached in this one.
function edrLoads() {
  const probe = spawnSync("node", ["-e", 'require("@nomicfoundation/edr")'], { stdio: "ignore" });
  return probe.status === 0;
}

if (!edrLoads()) {
  if (process.env.POSTINSTALL_REINSTALL === "1") {
    console.error("postinstall: EDR native binding still missing after a reinstall under Node 24");
    process.exit(1);
  }
  console.log(`postinstall: EDR native binding missing (npm ran under an older Node); reinstalling under Node ${process.versions.node}`);
  const result = spawnSync("npm", ["install", "--no-save", "--no-audit", "--no-fund"], {
    stdio: "inherit",
    env: { ...process.env, POSTINSTALL_REINSTALL: "1" },
  });
  if (result.status !== 0 || !edrLoads()) process.exit(result.status || 1);
  // The nested install ran this script again and did the remaining steps there.
  process.exit(0);
}

const generate = spawnSync("node", ["scripts/db-generate.mjs"], { stdio: "inherit" });
process.exit(generate.status ?? 1);
