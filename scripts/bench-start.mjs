// `npm run bench:start`: how long `npm start` takes to print its `ready:` line and how much memory the
// process tree holds then, for a first start on an empty DATA_DIR and a second start on the same one.
// Runs `npm start` as a user does (npm, its prestart, then node), ROUNDS times (BENCH_ROUNDS, default 5),
// and prints each run and the medians. Plain JavaScript: it measures the start, so it adds no loader.
//
//   wall_ms   spawn of `npm start` to the `ready:` line on stdout
//   tree_mb   summed VmRSS of every process under npm at that moment (npm, sh, node)
//   node_mb   VmRSS of the process that printed `ready:` (the node of scripts/start; its threads included)
//   startup_ms, rss_mb   what the ready line itself says (from node's own start, and its RSS)
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "..");
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** pid → { ppid, rssKb, cmd } of every process on the machine, from /proc. */
function processTable() {
  const table = new Map();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = readFileSync(`/proc/${entry}/status`, "utf8");
      const ppid = Number(status.match(/^PPid:\s+(\d+)/m)?.[1]);
      const rssKb = Number(status.match(/^VmRSS:\s+(\d+)/m)?.[1] ?? 0);
      const cmd = readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ").trim();
      table.set(Number(entry), { ppid, rssKb, cmd });
    } catch {
      // the process ended meanwhile
    }
  }
  return table;
}

function treeOf(root) {
  const table = processTable();
  const members = [];
  const walk = (pid) => {
    const row = table.get(pid);
    if (!row) return;
    members.push({ pid, ...row });
    for (const [child, info] of table) if (info.ppid === pid) walk(child);
  };
  walk(root);
  return members;
}

async function startOnce(dataDir) {
  const [port, chainPort] = [await freePort(), await freePort()];
  const deploymentsDir = mkdtempSync(path.join(os.tmpdir(), "bench-start-deployments-"));
  const began = performance.now();
  const child = spawn("npm", ["start", "--silent"], {
    cwd: ROOT,
    env: {
      ...process.env,
      PATH: `${path.join(ROOT, "node_modules", ".bin")}:${process.env.PATH}`,
      DATA_DIR: dataDir,
      PORT: String(port),
      CHAIN_PORT: String(chainPort),
      DEPLOYMENTS_DIR: deploymentsDir,
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const sample = await new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`npm start exited with ${code} before ready:\n${stdout}${stderr}`)));
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      const line = stdout.split("\n").find((entry) => entry.startsWith("ready:"));
      if (!line || !stdout.slice(stdout.indexOf(line)).includes("\n")) return;
      const wallMs = performance.now() - began;
      const tree = treeOf(child.pid);
      // The process that printed the line (a /proc read can miss a process that is being replaced).
      const printer = tree.find((member) => /^node .*start\.(ts|js)$/.test(member.cmd)) ?? { rssKb: Number.NaN };
      resolve({
        wallMs: Math.round(wallMs),
        treeMb: Math.round(tree.reduce((sum, member) => sum + member.rssKb, 0) / 1024),
        nodeMb: Math.round(printer.rssKb / 1024),
        startupMs: Number(line.match(/startup_ms=(\d+)/)?.[1] ?? Number.NaN),
        rssMb: Number(line.match(/rss_mb=(\d+)/)?.[1] ?? Number.NaN),
        processes: tree.map((member) => `${member.pid}:${Math.round(member.rssKb / 1024)}MB:${member.cmd.slice(0, 60)}`),
      });
    });
  });
  process.kill(-child.pid, "SIGTERM");
  await new Promise((resolve) => (child.exitCode === null ? child.once("exit", resolve) : resolve()));
  rmSync(deploymentsDir, { recursive: true, force: true });
  return sample;
}

const median = (values) => {
  const known = values.filter(Number.isFinite).sort((a, b) => a - b);
  return known[Math.floor(known.length / 2)];
};
const runs = { first: [], warm: [] };
for (let round = 1; round <= ROUNDS; round += 1) {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "bench-start-data-"));
  try {
    for (const kind of ["first", "warm"]) {
      const sample = await startOnce(dataDir);
      runs[kind].push(sample);
      console.log(
        `round ${round} ${kind.padEnd(5)} wall_ms=${sample.wallMs} tree_mb=${sample.treeMb} node_mb=${sample.nodeMb} startup_ms=${sample.startupMs} rss_mb=${sample.rssMb}`,
      );
      if (process.env.BENCH_VERBOSE) console.log(`  ${sample.processes.join("\n  ")}`);
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
for (const kind of ["first", "warm"]) {
  const of = (key) => median(runs[kind].map((sample) => sample[key]));
  console.log(
    `median ${kind.padEnd(5)} wall_ms=${of("wallMs")} tree_mb=${of("treeMb")} node_mb=${of("nodeMb")} startup_ms=${of("startupMs")} rss_mb=${of("rssMb")} (${ROUNDS} rounds)`,
  );
}
