import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
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
  output(): string;
  stderr(): string;
  /** Resolves with the ready line, or rejects with the output when the process exits first. */
  ready(timeoutMs?: number): Promise<string>;
  exited(): Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
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
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    child,
    output: () => stdout + stderr,
    stderr: () => stderr,
    exited: () => exit,
    ready: (timeoutMs = 90_000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ready line within ${timeoutMs} ms:\n${stdout}${stderr}`)), timeoutMs);
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
    stop: async (signal = "SIGTERM") => {
      if (child.exitCode === null) child.kill(signal);
      return exit;
    },
  };
}
