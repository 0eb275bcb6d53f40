import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "..", "..");

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

let built = false;
/**
 * `npm start`'s prestart, once per test run: it runs the compiled copy in dist/, which must be
 * the sources' (a test file run alone after an edit); nothing to do after `npm run build`.
 */
function buildIfStale() {
  if (built) return;
  const build = spawnSync(process.execPath, ["scripts/build.mjs", "--if-stale"], { cwd: ROOT, encoding: "utf8" });
  if (build.status !== 0) throw new Error(`node scripts/build.mjs --if-stale failed:\n${build.stdout}${build.stderr}`);
  built = true;
}

/** The command of an npm script such as `start` (its pre-script's build: `buildIfStale`). */
function scriptCommand(script: string): string[] {
  const scripts = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")).scripts as Record<string, string>;
  const [command, ...args] = (scripts[script] ?? "").split(" ");
  if (command !== "node") throw new Error(`unexpected ${script} script: ${scripts[script]}`);
  return args;
}

export interface StackProcess {
  child: ChildProcess;
  /** The DATA_DIR this helper made for it (removed when the child exits). */
  dataDir: string;
  output(): string;
  stderr(): string;
  /** Resolves with the ready line, or rejects with the output when the process exits first. */
  ready(timeoutMs?: number): Promise<string>;
  exited(): Promise<number | null>;
  /** Sends `signal`, then SIGKILL if the child has not exited after `graceMs`. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<number | null>;
}

/** How long a stopped child has to exit on its signal before it is killed (a blocked event loop never runs a SIGTERM handler). */
const STOP_GRACE_MS = 15_000;

/**
 * Each thread's native stack (gdb, when the machine has it): what a start that printed nothing
 * was waiting for. Best effort, bounded, never throws.
 */
function threadStacks(pid: number | undefined): string {
  if (pid === undefined) return "";
  const gdb = spawnSync("gdb", ["-p", String(pid), "-batch", "-nx", "-ex", "thread apply all bt 12"], {
    encoding: "utf8",
    timeout: 30_000,
  });
  if (gdb.error) return `\n(no thread stacks: ${gdb.error.message})`;
  // A line per thread: its name, then its frames' functions, innermost first.
  const threads: string[] = [];
  for (const line of gdb.stdout.split("\n")) {
    const thread = /^Thread \d+ .*?"([^"]*)"/.exec(line);
    const frame = /^#\d+\s+(?:0x[0-9a-f]+ in )?([^\s(]+)/.exec(line);
    if (thread) threads.push(`${thread[1]}:`);
    else if (frame && threads.length > 0) threads[threads.length - 1] += ` ${frame[1]}`;
  }
  if (threads.length === 0) return `\n(no thread stacks: ${gdb.stderr.trim().split("\n").at(-1) ?? "gdb printed none"})`;
  return `\nthreads of process ${pid} (gdb):\n${threads.join("\n")}`;
}

/** Runs `npm run <script>` (default `start`), or a `.ts` file, as a child process with `env` added. */
export function startStack(env: Record<string, string | undefined>, script = "start"): StackProcess {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "stack-"));
  // A path to a .ts file runs that file; anything else names an npm script.
  if (script === "start") buildIfStale();
  const args = script.endsWith(".ts") ? ["--disable-warning=ExperimentalWarning", "--import", "tsx", script] : scriptCommand(script);
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  const exit = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => {
      // Its DATA_DIR (a PGlite folder of about 40 MB) goes with it: a run leaves no folder per start behind.
      rmSync(dataDir, { recursive: true, force: true });
      resolve(code);
    }),
  );
  const stop = async (signal: NodeJS.Signals = "SIGTERM", graceMs = STOP_GRACE_MS) => {
    if (child.exitCode !== null || child.signalCode !== null) return exit;
    child.kill(signal);
    const grace = setTimeout(() => child.kill("SIGKILL"), graceMs);
    try {
      return await exit;
    } finally {
      clearTimeout(grace);
    }
  };
  return {
    child,
    dataDir,
    output: () => stdout + stderr,
    stderr: () => stderr,
    exited: () => exit,
    // A child that is not ready in time is killed: nothing waits on it, and its stacks say where it stood.
    ready: (timeoutMs = 90_000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          const stacks = threadStacks(child.pid);
          void stop("SIGKILL");
          reject(new Error(`no ready line within ${timeoutMs} ms:\n${stdout}${stderr}${stacks}`));
        }, timeoutMs);
        const check = () => {
          const line = stdout.split("\n").find((entry) => entry.startsWith("ready:"));
          if (line) {
            clearTimeout(timer);
            resolve(line);
          }
        };
        child.stdout?.on("data", check);
        void exit.then((code) => {
          clearTimeout(timer);
          reject(new Error(`exited with ${code} before ready:\n${stdout}${stderr}`));
        });
      }),
    stop,
  };
}
