// CPU time spent during a measured run, by where it was spent: this process's threads (grouped
// by thread name: the main thread, the chain's worker and its native threads, the load thread),
// and PostgreSQL's server processes when the benchmark runs on one. Linux /proc only; elsewhere
// the report is empty. Lets a benchmark say where each operation's CPU went.
import { readdirSync, readFileSync } from "node:fs";

const TICK_MS = 10; // USER_HZ is 100 on Linux

function ticksOf(statPath: string): number {
  try {
    const stat = readFileSync(statPath, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]); // utime + stime
  } catch {
    return 0;
  }
}

function nameOf(commPath: string): string {
  try {
    return readFileSync(commPath, "utf8").trim();
  } catch {
    return "?";
  }
}

export type CpuSnapshot = Map<string, number>;

export function cpuSnapshot(): CpuSnapshot {
  const totals = new Map<string, number>();
  const add = (key: string, ticks: number) => totals.set(key, (totals.get(key) ?? 0) + ticks);
  let tasks: string[] = [];
  try {
    tasks = readdirSync("/proc/self/task");
  } catch {
    return totals;
  }
  for (const tid of tasks) {
    const key = tid === String(process.pid) ? "main thread" : nameOf(`/proc/self/task/${tid}/comm`);
    add(key, ticksOf(`/proc/self/task/${tid}/stat`));
  }
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    if (nameOf(`/proc/${pid}/comm`) === "postgres") add("postgres", ticksOf(`/proc/${pid}/stat`));
  }
  return totals;
}

/** CPU milliseconds per operation spent between two snapshots, largest first. */
export function cpuPerOperation(before: CpuSnapshot, after: CpuSnapshot, operations: number): [string, number][] {
  return [...after.entries()]
    .map(([key, ticks]) => [key, ((ticks - (before.get(key) ?? 0)) * TICK_MS) / operations] as [string, number])
    .filter(([, ms]) => ms > 0)
    .sort((a, b) => b[1] - a[1]);
}
