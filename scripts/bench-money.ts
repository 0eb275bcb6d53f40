// `npm run bench:money`: N users (BENCH_USERS, default 20) deposit into and withdraw from the
// staking vault and repay part of a loan, in parallel, each waiting for one answer before the
// next request, through the API (their managed wallets sign, the relay pays, the answer waits
// for the mirror); and the
// same operations sent straight to the contracts with ethers by N funded wallets, on the same
// embedded chain in the same run: the chain's own limit. The clients run in a thread of their
// own (scripts/bench/money-load.ts). Rounds alternate the two; each figure
// is the median over the rounds. The last line is `ratio: <API ops/s / direct ops/s> p99_ms: <API p99>`.
import { randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { type Contract, JsonRpcSigner, Wallet } from "ethers";
import { createApp } from "../api/app.js";
import { listen } from "../api/server.js";
import { connectRpc, startEmbeddedChain } from "../core/chain.js";
import { ensureChainIdentity } from "../core/chain-identity.js";
import { createClock } from "../core/clock.js";
import { loadConfig } from "../core/config.js";
import { openDatabase } from "../core/db.js";
import { ensureDeployment } from "../core/deployments.js";
import { createLogger } from "../core/logger.js";
import { applyMigrations } from "../core/migrations.js";
import { platformContract } from "../core/platform-abi.js";
import { refFromLoanId } from "../domain/loans/ids.js";
import { loanTerms } from "../domain/loans/terms.js";
import { CHAIN_DERIVED_TABLES } from "../domain/modules.js";
import { servicesFromConfig } from "../domain/services.js";
import { attachIndexer } from "../domain/transactions/read-your-writes.js";
import { createIndexer } from "../indexer/indexer.js";
import { type CpuSnapshot, cpuPerOperation, cpuSnapshot } from "./bench/cpu.js";
import { freshBenchDatabase } from "./bench/database.js";
import { freePort } from "./bench/free-port.js";
import type { LoadSample, LoadSetup } from "./bench/money-load.js";

const USERS = Number(process.env.BENCH_USERS ?? 20);
/** Deposit + withdrawal + loan repayment rounds per user per measured run. */
const PAIRS = Number(process.env.BENCH_PAIRS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const DEPOSIT = 10_000_000n; // 10 USDC
const WITHDRAW_TMUSDC = 5; // tmUSDC per withdrawal
const REPAYMENT = 1_000_000n; // 1 USDC per loan repayment
const LOAN_USDC = 500; // each user's loan (Elite tier): repaid 1 USDC at a time, never closed by the benchmark

process.env.DEPLOYMENTS_DIR ??= mkdtempSync(path.join(os.tmpdir(), "bench-deployments-"));
const logger = createLogger(process.env.LOG_LEVEL ?? "warn");
const chain = await startEmbeddedChain("127.0.0.1", 0);
const { provider, chainId } = await connectRpc(chain.rpcUrl);
const port = await freePort();
const config = loadConfig({ PORT: String(port), DATA_DIR: mkdtempSync(path.join(os.tmpdir(), "bench-")), NODE_ENV: "test" });
const deployment = await ensureDeployment({ provider, deployerPrivateKey: config.chain.deployerPrivateKey, fresh: true });
// In-memory PGlite by default; BENCH_DATABASE_URL names a PostgreSQL server (through any
// database on it) where the benchmark creates a database of its own, dropped at the end: every
// run starts from empty tables, so runs compare (never DATABASE_URL, which may hold real data).
const benchDatabase = process.env.BENCH_DATABASE_URL ? await freshBenchDatabase(process.env.BENCH_DATABASE_URL) : undefined;
const db = await openDatabase({ databaseUrl: benchDatabase?.url, pgliteDataDir: "memory://" });
await applyMigrations(db.migrationAdapter());
await ensureChainIdentity(db, deployment, { embedded: true, logger, chainTables: CHAIN_DERIVED_TABLES });
const indexer = createIndexer({
  db,
  rpcUrl: chain.rpcUrl,
  deployment,
  logger,
  confirmations: 0,
  pollMs: config.indexer.pollMs,
  maxBlockRange: config.indexer.maxBlockRange,
});
indexer.start();
const clock = createClock();
const services = await servicesFromConfig(config, {
  db,
  clock,
  logger,
  processKind: "api",
  cacheReads: true,
  chain: { provider, chainId, deployment },
});
attachIndexer(services.mirror!, indexer);
const app = await createApp({ logger, clock, db, chain: { provider, chainId }, config, services });
const server = await listen(app, "127.0.0.1", port);

async function call(method: string, urlPath: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${server.url}${urlPath}`, {
    method,
    headers: { "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${method} ${urlPath} answered ${response.status}: ${text}`);
  return JSON.parse(text) as { data: Record<string, unknown> };
}

// Setup (not measured): API users on the enterprise plan (no 429s) with test USDC; direct
// wallets with ETH for gas, test USDC and an unlimited approval.
const deployer = new Wallet(config.chain.deployerPrivateKey, provider);
const usdc = platformContract(deployment, "usdc", deployer);
const vault = platformContract(deployment, "stakingVault", provider);
const loanBook = platformContract(deployment, "loanBook", deployer);
// The pool's liquidity for both kinds of users' loans.
await (await usdc.getFunction("mint")(deployer.address, 100_000_000_000n)).wait();
await (await usdc.getFunction("approve")(await vault.getAddress(), 100_000_000_000n)).wait();
await (await (vault.connect(deployer) as Contract).getFunction("deposit")(100_000_000_000n, deployer.address)).wait();
// The borrowers below are all new: the loan book's limits on unproven borrowers (D-125) are opened, as the
// timelock would (impersonated on this development chain), since the benchmark measures repayments, not onboarding;
// from the next block on, the budget refills at once.
const timelock = deployment.contracts.timelock!.address;
await provider.send("hardhat_impersonateAccount", [timelock]);
await provider.send("hardhat_setBalance", [timelock, "0xDE0B6B3A7640000"]);
const asTimelock = loanBook.connect(new JsonRpcSigner(provider, timelock)) as Contract;
await (await asTimelock.getFunction("setUnprovenLimits")([10_000n, 2n ** 96n - 1n, 2n ** 96n - 1n])).wait();
await provider.send("hardhat_stopImpersonatingAccount", [timelock]);

const apiUsers = await Promise.all(
  Array.from({ length: USERS }, async (_, i) => {
    const token = (await call("POST", "/dev/token", { sub: `bench-money-${i}` })).data.accessToken as string;
    const auth = { authorization: `Bearer ${token}` };
    const me = await call("GET", "/v1/users/me", undefined, auth);
    await call("PUT", `/dev/users/${me.data.id}/plan`, { plan: "enterprise" });
    // The Elite tier, set directly: the benchmark measures repayments, not how a score is earned.
    await db.prisma.user.update({ where: { id: me.data.id as string }, data: { trustScore: 90 } });
    services.invalidateUser(me.data.id as string);
    return auth;
  }),
);
const apiLoans: string[] = [];
for (const auth of apiUsers) {
  await call("POST", "/dev/faucet", { amount: 10_000 }, { ...auth, "idempotency-key": randomUUID() });
  const loan = await call("POST", "/v1/loans", { amount: LOAN_USDC, duration: 90 }, { ...auth, "idempotency-key": randomUUID() });
  await call("POST", `/dev/loans/${loan.data.id}/fund`);
  apiLoans.push(loan.data.id as string);
}

const directWallets = Array.from({ length: USERS }, () => Wallet.createRandom().connect(provider));
const directLoans: bigint[] = [];
for (const wallet of directWallets) {
  await (await deployer.sendTransaction({ to: wallet.address, value: 10n ** 18n })).wait();
  await (await usdc.getFunction("mint")(wallet.address, 10_000_000_000n)).wait();
  await (await (usdc.connect(wallet) as Contract).getFunction("approve")(await vault.getAddress(), 2n ** 255n)).wait();
  await (await (usdc.connect(wallet) as Contract).getFunction("approve")(await loanBook.getAddress(), 2n ** 255n)).wait();
  // The same terms as an API user's loan, funded by the operator straight on the LoanBook.
  const terms = loanTerms(BigInt(LOAN_USDC) * 1_000_000n, 100);
  await (
    await loanBook.getFunction("fundLoan")(
      refFromLoanId(randomUUID()),
      wallet.address,
      terms.amount,
      terms.interest,
      terms.insuranceFee,
      90,
    )
  ).wait();
  directLoans.push((await loanBook.getFunction("loanCount")()) as bigint);
}

// The clients run in their own thread (scripts/bench/money-load.ts), as real clients run elsewhere:
// this thread serves the API and runs the indexer, as `npm start` does; the chain has its own.
const load = new Worker(new URL("./bench/money-load.ts", import.meta.url), {
  workerData: {
    apiUrl: server.url,
    rpcUrl: chain.rpcUrl,
    chainId,
    vault: await vault.getAddress(),
    vaultAbi: JSON.parse(vault.interface.formatJson()),
    loanBook: await loanBook.getAddress(),
    loanBookAbi: JSON.parse(loanBook.interface.formatJson()),
    apiLoans,
    directLoans,
    repayment: REPAYMENT,
    auths: apiUsers,
    directKeys: directWallets.map((wallet) => wallet.privateKey),
    pairs: PAIRS,
    deposit: DEPOSIT,
    withdrawTmUsdc: WITHDRAW_TMUSDC,
  } satisfies LoadSetup,
});
const OPERATIONS = USERS * PAIRS * 3;
const cpuSpent: Record<"api" | "direct", { before: CpuSnapshot; after: CpuSnapshot; operations: number }[]> = { api: [], direct: [] };
const measure = async (kind: "api" | "direct") => {
  const before = cpuSnapshot();
  const sample = await new Promise<LoadSample>((resolve, reject) => {
    load.once("message", (message: { sample?: LoadSample; error?: string }) =>
      message.sample ? resolve(message.sample) : reject(new Error(message.error)),
    );
    load.postMessage(kind);
  });
  cpuSpent[kind].push({ before, after: cpuSnapshot(), operations: OPERATIONS });
  return sample;
};

type Sample = LoadSample;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const samples: { direct: Sample[]; api: Sample[] } = { direct: [], api: [] };
for (let round = 1; round <= ROUNDS; round += 1) {
  samples.direct.push(await measure("direct"));
  samples.api.push(await measure("api"));
  console.error(`round ${round}/${ROUNDS} done`);
}
const summary = (runs: Sample[]) => ({
  opsPerSecond: median(runs.map((r) => r.opsPerSecond)),
  p50: median(runs.map((r) => r.p50)),
  p99: median(runs.map((r) => r.p99)),
});
const direct = summary(samples.direct);
const viaApi = summary(samples.api);
console.log(
  `${USERS} users x ${PAIRS} x (deposit, withdrawal, loan repayment) per round, median of ${ROUNDS} rounds, embedded chain, ${db.kind}`,
);
for (const [title, line] of [
  ["direct (ethers -> contracts)", direct],
  ["API (relay, answer after the mirror)", viaApi],
] as const) {
  console.log(
    `${title.padEnd(38)} ${line.opsPerSecond.toFixed(1).padStart(7)} ops/s  p50 ${line.p50.toFixed(1)} ms  p99 ${line.p99.toFixed(1)} ms`,
  );
}
// Where each operation's CPU went (median round by total), so a change to the hot path shows its
// effect: both kinds of run are CPU-bound on a small machine, and their ratio follows these figures.
for (const kind of ["direct", "api"] as const) {
  const rounds = cpuSpent[kind].map(({ before, after, operations }) => {
    const parts = cpuPerOperation(before, after, operations);
    return { parts, total: parts.reduce((sum, [, ms]) => sum + ms, 0) };
  });
  const { parts, total } = [...rounds].sort((a, b) => a.total - b.total)[Math.floor(rounds.length / 2)]!;
  console.log(`cpu per op, ${kind}: ${total.toFixed(1)} ms (${parts.map(([name, ms]) => `${name} ${ms.toFixed(1)}`).join(", ")})`);
}
load.postMessage("stop");
await server.close();
await indexer.stop();
provider.destroy();
await chain.close();
await db.close();
await benchDatabase?.drop();
console.log(`ratio: ${(viaApi.opsPerSecond / direct.opsPerSecond).toFixed(2)} p99_ms: ${Math.round(viaApi.p99)}`);
