// Real `npm run worker` processes for a benchmark: started from package.json's worker script with
// the given environment (each its own DATA_DIR), resolved once each printed its ready line; their
// output kept (the last 20,000 characters each) to show what they said during the run.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "..", "..");

export interface BenchWorkers {
  children: ChildProcess[];
  /** Each worker's output so far. */
  outputs: string[];
  /** SIGTERM to each (they finish what they run), resolved once all exited. */
  stop(): Promise<void>;
  /** SIGKILL to any still running (at exit, after a failure). */
  kill(): void;
}

export async function startBenchWorkers(count: number, env: NodeJS.ProcessEnv): Promise<BenchWorkers> {
  const [command, ...args] = (JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")).scripts.worker as string).split(" ");
  if (command !== "node") throw new Error(`unexpected worker script: ${command}`);
  const children: ChildProcess[] = [];
  const outputs: string[] = [];
  const kill = () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  };
  process.once("exit", kill);
  const readies = Array.from({ length: count }, (_, w) => {
    // BENCH_CPU_PROF=<dir>: each worker writes a CPU profile there when it stops.
    const profile = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
    const child = spawn(process.execPath, [...profile, ...args], {
      cwd: ROOT,
      env: { ...env, DATA_DIR: mkdtempSync(path.join(os.tmpdir(), "bench-worker-")) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    outputs[w] = "";
    const keep = (chunk: Buffer) => {
      outputs[w] = (outputs[w]! + chunk.toString()).slice(-20_000);
    };
    child.stdout!.on("data", keep);
    child.stderr!.on("data", keep);
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker ${w + 1}: no ready line within 90 s:\n${outputs[w]}`)), 90_000);
      child.stdout!.on("data", () => {
        if (/^ready:/m.test(outputs[w]!)) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`worker ${w + 1} exited with ${code}:\n${outputs[w]}`));
      });
    });
  });
  try {
    await Promise.all(readies);
  } catch (error) {
    kill();
    throw error;
  }
  return {
    children,
    outputs,
    kill,
    stop: () =>
      Promise.all(
        children.map(
          (child) =>
            new Promise<void>((resolve) => {
              if (child.exitCode !== null || child.signalCode !== null) return resolve();
              child.once("exit", () => resolve());
              child.kill("SIGTERM");
            }),
        ),
      ).then(() => undefined),
  };
}
