// `npm run bench:indexer`: at least 20,000 platform events on the embedded chain, then
// (b) a full backfill by the indexer into a throw-away PostgreSQL database against (a) the raw
// eth_getLogs rate over the same blocks (the indexer's filters and the block ranges it committed,
// nothing else: the limit on this machine), and the live lag (block mined to row visible).
// The last line is the summary a CI step reads: `ratio: <backfill / raw> lag_p95_ms: <n>`.
// BENCH_DATABASE_URL names the PostgreSQL server (default postgres@127.0.0.1:5432): the benchmark
// creates its own database there and drops it at the end. BENCH_EVENTS, BENCH_TXS_PER_BLOCK,
// BENCH_LIVE_BLOCKS change the sizes; BENCH_CPU_PROFILE=<file> writes a CPU profile of the backfill.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import inspector from "node:inspector/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { loadConfig } from "../core/config.js";
import { type Database, openDatabase } from "../core/db.js";
import { createLogger } from "../core/logger.js";
import { applyMigrations } from "../core/migrations.js";
import { ContractCatalogue, logFilters, platformAddresses, startBlock } from "../indexer/contracts.js";
import { createIndexer } from "../indexer/indexer.js";
import { createRpc, type LogFilter, type Rpc } from "../indexer/rpc.js";
import { startTestChain, type TestChain, usdc } from "../test/helpers/chain.js";
import { freshBenchDatabase } from "./bench/database.js";
import { generate, platformEvents } from "./bench/indexer-events.js";
import { covered, instrument, tally } from "./bench/indexer-spans.js";

// The throw-away chain's deployment file goes to a temporary folder, never the repository's deployments/.
const deploymentsDir = mkdtempSync(path.join(os.tmpdir(), "bench-deployments-"));
process.env.DEPLOYMENTS_DIR = deploymentsDir;

const TARGET_EVENTS = Number(process.env.BENCH_EVENTS ?? 20_000);
const TXS_PER_BLOCK = Number(process.env.BENCH_TXS_PER_BLOCK ?? 250);
const LIVE_BLOCKS = Number(process.env.BENCH_LIVE_BLOCKS ?? 100);
const RAW_RUNS = 3;
const BACKFILL_TIMEOUT_MS = 180_000;
/** The indexer's default maxLogsPerRange: an answer with more logs is dropped and the range halved. */
const MAX_LOGS = 10_000;
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const config = loadConfig({ INDEXER_POLL_MS: process.env.INDEXER_POLL_MS, INDEXER_MAX_BLOCK_RANGE: process.env.INDEXER_MAX_BLOCK_RANGE });

const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
const line = (label: string, value: string) => console.log(`${label.padEnd(44)} ${value}`);
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** Waits until `indexer` has indexed `block`, or fails after BACKFILL_TIMEOUT_MS (LOG_LEVEL=info shows why). */
async function indexedUpTo(indexer: { status(): { indexedBlock: number } }, block: number): Promise<void> {
  const deadline = performance.now() + BACKFILL_TIMEOUT_MS;
  while (indexer.status().indexedBlock < block) {
    if (performance.now() > deadline) throw new Error(`the indexer did not reach block ${block} within ${BACKFILL_TIMEOUT_MS / 1000} s`);
    await sleep(10);
  }
}

// ---------------------------------------------------------------------------------------------
// (a) Raw eth_getLogs over block ranges, the indexer's filters, one range after the other.

async function rawFetch(rpc: Rpc, filters: LogFilter[], ranges: [number, number][]): Promise<{ ms: number; logs: number }> {
  const started = performance.now();
  let logs = 0;
  for (const [from, to] of ranges) {
    const answers = await Promise.all(filters.map((filter) => rpc.getLogs(filter, from, to)));
    for (const answer of answers) logs += answer.length;
  }
  return { ms: performance.now() - started, logs };
}

async function bestOf(runs: number, work: () => Promise<{ ms: number; logs: number }>) {
  const results = [];
  for (let i = 0; i < runs; i += 1) results.push(await work());
  return results.reduce((a, b) => (a.ms < b.ms ? a : b));
}

// ---------------------------------------------------------------------------------------------
// Live lag: one deposit's block mined to its ChainLog row visible on another connection.

async function lagOnce(chain: TestChain, watcher: pg.Client, from: string): Promise<number> {
  const request = (method: string, params: unknown[] = []) => chain.embedded.provider.request({ method, params });
  const vault = await chain.contracts.vault.getAddress();
  const data = chain.contracts.vault.interface.encodeFunctionData("deposit", [usdc(25), from]);
  const txHash = (await request("eth_sendTransaction", [{ from, to: vault, data, gas: "0x2bf20" }])) as string;
  await request("evm_mine");
  const mined = performance.now();
  for (;;) {
    const found = await watcher.query(`SELECT 1 FROM "ChainLog" WHERE "chainId" = $1 AND "txHash" = $2 LIMIT 1`, [
      chain.deployment.chainId,
      txHash,
    ]);
    if (found.rowCount) return performance.now() - mined;
    if (performance.now() - mined > 30_000) throw new Error(`deposit ${txHash} not in ChainLog 30 s after its block was mined`);
    await sleep(5);
  }
}

// ---------------------------------------------------------------------------------------------

// Created before the chain: an unreachable server fails the run at once.
const benchDatabase = await freshBenchDatabase(SERVER_URL);
const chain = await startTestChain();
let db: Database | undefined;
let stopIndexer: (() => Promise<void>) | undefined;
try {
  const rpc = createRpc(chain.rpcUrl);
  const catalogue = new ContractCatalogue();
  const filters = logFilters(catalogue, platformAddresses(chain.deployment));
  const firstBlock = startBlock(chain.deployment);
  const logger = createLogger(process.env.LOG_LEVEL ?? "warn", "indexer");
  const indexerOptions = {
    rpcUrl: chain.rpcUrl,
    deployment: chain.deployment,
    logger,
    confirmations: 0,
    pollMs: config.indexer.pollMs,
    maxBlockRange: config.indexer.maxBlockRange,
  };

  // Events, counted with the indexer's filters over its whole range (this also warms the chain up).
  const generated = await generate(chain, rpc, filters, firstBlock, { targetEvents: TARGET_EVENTS, txsPerBlock: TXS_PER_BLOCK });
  const head = Number(await chain.provider.getBlockNumber());
  const all = (await Promise.all(filters.map((filter) => rpc.getLogs(filter, firstBlock, head)))).flat();
  if (all.length !== generated.expected) {
    throw new Error(`eth_getLogs returns ${all.length} logs, expected ${generated.expected}: did transactions revert?`);
  }
  const events = platformEvents(all, catalogue, chain);
  if (events < TARGET_EVENTS) throw new Error(`only ${events} platform events, wanted ${TARGET_EVENTS}`);
  const txs = generated.deposits + generated.redeems + generated.yields;
  line(
    "platform events",
    `${fmt(events)} in blocks ${firstBlock}-${head}: ${fmt(generated.deposits)} deposits, ${fmt(generated.redeems)} redeems,`,
  );
  line("", `${fmt(generated.yields)} yield distributions, 3 x (loan, repayments, social vault); ${TXS_PER_BLOCK} txs per bulk block`);
  line("", `eth_getLogs matches ${fmt(all.length)}: ${fmt(all.length - events)} USDC mints to users, fetched and dropped`);
  line("generated in", `${(generated.ms / 1000).toFixed(1)} s (bulk: ${fmt(txs)} transactions)`);

  // (b) Full backfill into a fresh, migrated PostgreSQL database, until the indexer's cursor is at the head.
  db = await openDatabase({ databaseUrl: benchDatabase.url });
  await applyMigrations(db.migrationAdapter());
  const probe = instrument(db);
  const backfiller = createIndexer({ ...indexerOptions, db: probe.db });
  stopIndexer = () => backfiller.stop();
  // BENCH_CPU_PROFILE=file.cpuprofile: a V8 CPU profile of the backfill alone (open it in Chrome DevTools).
  const profiler = process.env.BENCH_CPU_PROFILE ? new inspector.Session() : undefined;
  if (profiler) {
    profiler.connect();
    await profiler.post("Profiler.enable");
    await profiler.post("Profiler.setSamplingInterval", { interval: 200 });
    await profiler.post("Profiler.start");
  }
  probe.start();
  const backfillStart = performance.now();
  backfiller.start();
  await indexedUpTo(backfiller, head);
  const backfillMs = performance.now() - backfillStart;
  probe.stop();
  if (profiler) {
    const { profile } = await profiler.post("Profiler.stop");
    writeFileSync(process.env.BENCH_CPU_PROFILE!, JSON.stringify(profile));
    profiler.disconnect();
  }
  await backfiller.stop();
  stopIndexer = undefined;
  const { rows } = await db.sql.query<{ n: string }>(`SELECT count(*) AS n FROM "ChainLog" WHERE "chainId" = $1`, [
    chain.deployment.chainId,
  ]);
  const stored = Number(rows[0]!.n);
  if (stored !== events) throw new Error(`ChainLog holds ${stored} rows after the backfill, the chain ${events} platform events`);
  const backfillRate = events / (backfillMs / 1000);

  // (a) Raw eth_getLogs, nothing else, over the ranges the indexer committed (and, for reference, one range).
  const ranges: [number, number][] = [];
  let previous = firstBlock - 1;
  for (const to of probe.cursorMoves) {
    ranges.push([previous + 1, to]);
    previous = to;
  }
  if (previous !== head) throw new Error(`the indexer's cursor moves end at block ${previous}, not at the head ${head}`);
  const raw = await bestOf(RAW_RUNS, () => rawFetch(rpc, filters, ranges));
  const rawOne = await bestOf(RAW_RUNS, () => rawFetch(rpc, filters, [[firstBlock, head]]));
  if (raw.logs !== all.length || rawOne.logs !== all.length)
    throw new Error(`raw eth_getLogs returned ${raw.logs} logs, not ${all.length}`);
  const rawRate = events / (raw.ms / 1000);
  const spanList = ranges.map(([from, to]) => to - from + 1).join("+");
  line(
    `(a) raw eth_getLogs, ${plural(ranges.length, "range")} x ${filters.length} filters`,
    `${fmt(raw.ms)} ms  ${fmt(rawRate)} events/s  (best of ${RAW_RUNS})`,
  );
  line("", `the indexer's committed ranges: ${spanList} blocks`);
  line(`    raw eth_getLogs, 1 range x ${filters.length} filters`, `${fmt(rawOne.ms)} ms  ${fmt(events / (rawOne.ms / 1000))} events/s`);
  line("(b) backfill into PostgreSQL", `${fmt(backfillMs)} ms  ${fmt(backfillRate)} events/s  (ChainLog rows = ${fmt(stored)} = events)`);

  // Where the backfill's time went (spans of 5 ms or more in total).
  const kinds = tally(probe.spans).filter(([, entry]) => entry.ms >= 5);
  const show = ([kind, entry]: (typeof kinds)[number]) =>
    line(
      `    ${kind}`,
      `${String(entry.calls).padStart(4)} x ${fmt(entry.ms).padStart(6)} ms${entry.items ? `  ${fmt(entry.items)} items` : ""}`,
    );
  for (const kind of kinds.filter(([name]) => !name.startsWith("  "))) {
    show(kind);
    if (kind[0].startsWith("db transaction")) for (const inner of kinds.filter(([name]) => name.startsWith("  "))) show(inner);
  }
  const fetched = probe.spans.filter((span) => span.kind === "rpc eth_getLogs").reduce((n, span) => n + (span.detail ?? 0), 0);
  const rpcMs = covered(probe.spans.filter((span) => span.kind.startsWith("rpc")));
  const sqlMs = covered(probe.spans.filter((span) => span.kind.startsWith("db")));
  const eitherMs = covered(probe.spans.filter((span) => !span.nested));
  line(
    "    eth_getLogs: logs fetched / in range",
    `${fmt(fetched)} / ${fmt(all.length)}${fetched > all.length ? ` (answers over ${fmt(MAX_LOGS)} logs are dropped, then read again in halves)` : ""}`,
  );
  line("    wall time with RPC / SQL in flight", `${fmt(rpcMs)} / ${fmt(sqlMs)} ms (they overlap: the indexer prefetches)`);
  line("    wall time with neither in flight", `${fmt(backfillMs - eitherMs)} ms (indexer CPU: decode, fold, build rows)`);

  // Live lag: the indexer follows the head; one deposit per block, from the moment its block is
  // mined to the moment its ChainLog row is visible on another connection.
  const follower = createIndexer({ ...indexerOptions, db });
  stopIndexer = () => follower.stop();
  follower.start();
  await indexedUpTo(follower, head);
  const watcher = new pg.Client({ connectionString: benchDatabase.url });
  await watcher.connect();
  const accounts = (await chain.provider.send("eth_accounts", [])) as string[];
  await chain.setAutomine(false);
  const lags: number[] = [];
  for (let i = 0; i < LIVE_BLOCKS; i += 1) {
    lags.push(await lagOnce(chain, watcher, accounts[1 + (i % 19)]!));
    await sleep(50 + Math.random() * 50);
  }
  await watcher.end();
  await chain.setAutomine(true);
  const sorted = [...lags].sort((a, b) => a - b);
  const p50 = percentile(sorted, 50);
  const p95 = percentile(sorted, 95);
  line(
    `live lag, ${LIVE_BLOCKS} blocks (pollMs ${config.indexer.pollMs})`,
    `p50 ${fmt(p50)} ms  p95 ${fmt(p95)} ms  max ${fmt(sorted.at(-1)!)} ms`,
  );
  const ratio = backfillRate / rawRate;
  line("backfill / raw", `${ratio.toFixed(2)} (target >= 0.50); live lag p95 target < 1,000 ms`);
  console.log(`ratio: ${ratio.toFixed(2)} lag_p95_ms: ${Math.round(p95)}`);
} finally {
  await stopIndexer?.();
  await db?.close();
  await benchDatabase.drop();
  await chain.close();
  rmSync(deploymentsDir, { recursive: true, force: true });
}
