import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { ethers } from "ethers";
import express from "express";
import { pino } from "pino";
import { healthRoutes } from "../../api/health/routes.js";
import { connectRpc } from "../../core/chain.js";
import { ensureChainIdentity } from "../../core/chain-identity.js";
import type { Deployment } from "../../core/deployments.js";
import { formatUsdc2 } from "../../core/money.js";
import { createIndexer, type Indexer } from "../../indexer/indexer.js";
import { deposit, distributeYield, fundLoan, repay, socialVaultActivity } from "../helpers/activity.js";
import { startTestApi } from "../helpers/api.js";
import { chainHandles, type TestChain, usdc } from "../helpers/chain.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { cleanReindex, dumpMirror, waitFor, waitForHead } from "../helpers/mirror.js";
import { freePort, startStack } from "../helpers/stack.js";

const ROOT = path.resolve(import.meta.dirname, "..", "..");
const ZERO_HASH = `0x${"0".repeat(64)}`;
const ROLLED_BACK = "chain reorganisation: rolled back to the fork point";
const LOOP_STARTED = "indexer reorg loop:";
const LOOP_ENDED = "indexer reorg loop ended";
const UNLINKED_PARENT = "the node reports a parentHash that is not the indexed block's hash";

// biome-ignore lint/suspicious/noExplicitAny: JSON answers are asserted field by field
type Json = any;

/** `npm run chain` on a free port, started as the script does (`hardhat node`), in its own process group. */
async function startHardhatNode(): Promise<{ rpcUrl: string; child: ChildProcess; stop(): Promise<void> }> {
  const scripts = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")).scripts as Record<string, string>;
  expect(scripts.chain, "npm run chain").to.equal("hardhat node");
  const port = await freePort();
  const cli = path.join(ROOT, "node_modules", "hardhat", "dist", "src", "cli.js");
  const child = spawn(process.execPath, [cli, "node", "--hostname", "127.0.0.1", "--port", String(port)], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  child.stdout?.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    output += chunk;
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    process.kill(-child.pid!, "SIGTERM");
    await exited;
  };
  try {
    await waitFor(async () => output.includes("Started HTTP") || child.exitCode !== null, 60_000, "the Hardhat node to listen");
    if (child.exitCode !== null) throw new Error(`hardhat node exited with ${child.exitCode}:\n${output}`);
  } catch (error) {
    await stop();
    throw error;
  }
  return { rpcUrl: `http://127.0.0.1:${port}`, child, stop };
}

/** `npm run deploy` against the node (without its build step, which the test run has done). */
async function deployTo(rpcUrl: string): Promise<Deployment> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "deployments-node-"));
  const deploy = startStack({ CHAIN_RPC_URL: rpcUrl, DEPLOYMENTS_DIR: dir, LOG_LEVEL: "warn" }, "scripts/deploy.ts");
  const code = await deploy.exited();
  if (code !== 0) throw new Error(`npm run deploy exited with ${code}:\n${deploy.output()}`);
  return JSON.parse(readFileSync(path.join(dir, "31337.json"), "utf8")) as Deployment;
}

/** The test helpers' view of a chain, over an external node. */
async function connectTestChain(rpcUrl: string, deployment: Deployment, close: () => Promise<void>): Promise<TestChain> {
  const { provider } = await connectRpc(rpcUrl);
  return {
    ...(await chainHandles(provider, deployment)),
    rpcUrl,
    embedded: { rpcUrl, provider: { request: ({ method, params }) => provider.send(method, (params ?? []) as unknown[]) }, close },
    // What hardhat-network-helpers' mine(n) sends: the call whose blocks report a zero parentHash.
    mine: async (blocks = 1) => {
      await provider.send("hardhat_mine", [ethers.toQuantity(blocks)]);
    },
    close: async () => {
      provider.destroy();
      await close();
    },
  };
}

/** The indexer with a logger whose lines the test reads (what an operator would see). */
function loggedIndexer(db: TestDatabase, chain: TestChain, rpcUrl: string, maxBlockRange: number) {
  const lines: Json[] = [];
  const logger = pino({ level: "debug" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const indexer = createIndexer({
    db,
    rpcUrl,
    deployment: chain.deployment,
    logger,
    confirmations: 0,
    pollMs: 20,
    maxBlockRange,
  });
  const messages = (prefix: string, level?: number) =>
    lines.filter((l) => String(l.msg).startsWith(prefix) && (level === undefined || l.level === level));
  return { indexer, lines, messages };
}

/** Headers of blocks `from..to` as the node answers them. */
async function headers(chain: TestChain, from: number, to: number): Promise<{ number: string; hash: string; parentHash: string }[]> {
  const numbers = Array.from({ length: to - from + 1 }, (_, i) => from + i);
  return Promise.all(numbers.map((n) => chain.provider.send("eth_getBlockByNumber", [ethers.toQuantity(n), false])));
}

/** /health of an API process sharing the database: the real route over the real database. */
async function serveHealth(
  db: TestDatabase,
  chain: TestChain,
): Promise<{ get(): Promise<{ status: number; body: Json }>; close(): Promise<void> }> {
  const app = express();
  app.use(healthRoutes({ db, chain: { provider: chain.provider, chainId: chain.deployment.chainId } }));
  const server = await new Promise<http.Server>((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/health`;
  return {
    get: async () => {
      const response = await fetch(url);
      return { status: response.status, body: (await response.json()) as Json };
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A JSON-RPC proxy in front of the node that, while `lying`, answers `eth_getBlockByNumber("latest")`
 * with a hash no block has: the head looks replaced while every block read by number is unchanged.
 */
async function startLyingProxy(target: string) {
  let lying = false;
  let lies = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", async () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const call = JSON.parse(body) as Json | Json[];
      const answer = await fetch(target, { method: "POST", headers: { "content-type": "application/json" }, body });
      const reply = (await answer.json()) as Json | Json[];
      if (lying && !Array.isArray(call) && call.method === "eth_getBlockByNumber" && call.params?.[0] === "latest") {
        const block = (reply as Json).result;
        block.hash = ethers.keccak256(block.hash);
        lies += 1;
      }
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(reply));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    setLying(on: boolean) {
      lying = on;
    },
    lies: () => lies,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe("indexer: on a Hardhat node (`npm run chain`)", function () {
  this.timeout(180_000);
  let node: Awaited<ReturnType<typeof startHardhatNode>> | undefined;
  let chain: TestChain;
  let db: TestDatabase | undefined;
  let indexer: Indexer | undefined;
  const closers: (() => Promise<void>)[] = [];

  before(async () => {
    node = await startHardhatNode();
    chain = await connectTestChain(node.rpcUrl, await deployTo(node.rpcUrl), node.stop);
  });

  after(async () => {
    await chain?.close();
    await node?.stop();
  });

  beforeEach(async () => {
    db = await createTestDatabase();
  });

  afterEach(async () => {
    await indexer?.stop();
    indexer = undefined;
    for (const close of closers.splice(0).reverse()) await close();
    await db?.destroy();
  });

  it("serves vault deposits and withdrawals of several users at once through the API, relayed to the node", async () => {
    const logged = loggedIndexer(db!, chain, node!.rpcUrl, 1_000);
    indexer = logged.indexer;
    await ensureChainIdentity(db!, chain.deployment, { embedded: false, logger: pino({ level: "silent" }) });
    indexer.start();
    const api = await startTestApi({ chain: { rpcUrl: node!.rpcUrl, deployment: chain.deployment }, db });
    closers.push(() => api.close());
    const users = await Promise.all(
      Array.from({ length: 4 }, async (_, i) => {
        const token = await api.token(`node-saver-${i}`, { expiresIn: 86_400 });
        const faucet = await api.request("POST", "/dev/faucet", {
          token,
          body: { amount: 100 },
          headers: { "idempotency-key": randomUUID() },
        });
        expect(faucet.status, faucet.text).to.equal(200);
        return { token, wallet: faucet.body.data.walletAddress as string };
      }),
    );
    const post = (token: string, route: string, body: unknown) =>
      api.request("POST", route, { token, body, headers: { "idempotency-key": randomUUID() } });
    const deposits = await Promise.all(
      users.flatMap((u) => [post(u.token, "/v1/vault/deposit", { amount: 30 }), post(u.token, "/v1/vault/deposit", { amount: 20 })]),
    );
    for (const answer of deposits) expect(answer.status, answer.text).to.equal(200);
    const withdrawals = await Promise.all(users.map((u) => post(u.token, "/v1/vault/withdraw", { tmUSDCAmount: 10 })));
    for (const answer of withdrawals) expect(answer.status, answer.text).to.equal(200);
    for (const user of users) {
      const shares = (await chain.contracts.vault.balanceOf(user.wallet)) as bigint;
      const position = (await api.request("GET", "/v1/vault/position", { token: user.token })).body.data;
      expect(position.tmUSDCBalance).to.equal(formatUsdc2(shares / 10n ** 12n));
      expect(shares).to.be.greaterThan(0n);
      expect(await chain.provider.getBalance(user.wallet)).to.equal(0n);
    }
  });

  it("indexes through hardhat_mine batches whose inner blocks report parentHash 0x000…, without a rollback", async () => {
    const depositor = await chain.signer(1);
    const borrower = await chain.signer(2);
    await deposit(chain, depositor, usdc(5_000));
    await distributeYield(chain, usdc(25));

    // Small ranges, so that ranges start inside the mined batches (a range starting at the
    // batch's first block would see a correct parentHash).
    const logged = loggedIndexer(db!, chain, chain.rpcUrl, 8);
    indexer = logged.indexer;
    indexer.start();
    await waitForHead(db!, chain);

    const before = await chain.provider.getBlockNumber();
    await chain.mine(0x40); // what hardhat-network-helpers' mine(64) sends
    const mined = await headers(chain, before + 1, before + 0x40);
    const zero = mined.filter((b) => b.parentHash === ZERO_HASH).length;
    // The node's answer this test is about: most blocks of the batch name no parent.
    expect(zero, "blocks of the hardhat_mine batch with parentHash 0x000…").to.be.at.least(0x40 / 2);
    const again = await headers(chain, before + 1, before + 0x40);
    expect(
      again.map((b) => b.hash),
      "each block's own hash is stable",
    ).to.deep.equal(mined.map((b) => b.hash));

    const loanId = await fundLoan(chain, borrower, crypto.randomUUID(), usdc(300), usdc(15));
    await repay(chain, borrower, loanId, usdc(100));
    await waitForHead(db!, chain);

    // A second batch right after events, then events on top of it.
    await chain.mine(0x40);
    await socialVaultActivity(chain, await chain.signer(3), await (await chain.signer(4)).getAddress());
    await deposit(chain, await chain.signer(5), usdc(77));
    const head = await waitForHead(db!, chain);
    expect(head).to.be.at.least(before + 2 * 0x40 + 5);

    expect(logged.messages(UNLINKED_PARENT), "ranges started on blocks without a parent hash").to.have.length(1);
    expect(logged.messages(ROLLED_BACK), "rollbacks").to.deep.equal([]);
    expect(logged.messages(LOOP_STARTED), "reorg loops").to.deep.equal([]);
    const mirrored = await dumpMirror(db!);
    expect(mirrored.VaultTransaction).to.have.length.at.least(2);
    expect(mirrored).to.deep.equal(await cleanReindex(chain));
    const cursor = await db!.prisma.indexerCursor.findUniqueOrThrow({ where: { chainId: chain.deployment.chainId } });
    expect(cursor.reorgLoop).to.equal(null);
  });

  it("backs off and reports a reorg loop in /health while the node signals a reorg its blocks do not show", async () => {
    const proxy = await startLyingProxy(chain.rpcUrl);
    closers.push(proxy.close);
    const health = await serveHealth(db!, chain);
    closers.push(health.close);
    const logged = loggedIndexer(db!, chain, proxy.url, 1_000);
    indexer = logged.indexer;
    indexer.start();
    await deposit(chain, await chain.signer(6), usdc(300));
    const head = await waitForHead(db!, chain);
    const calm = await health.get();
    expect(calm.status).to.equal(200);
    expect(calm.body.indexer).to.deep.include({ state: "indexing", reorgLoop: null });
    const mirrored = await dumpMirror(db!);

    proxy.setLying(true);
    const looping = await waitFor(
      async () => {
        // Lies counted before the report: each is followed by one attempt, written after it.
        const lies = proxy.lies();
        const reply = await health.get();
        return (reply.body.indexer?.reorgLoop?.count ?? 0) >= 3 ? { ...reply, lies } : undefined;
      },
      30_000,
      "/health to report three attempts of the reorg loop",
    );
    expect(looping.status).to.equal(503);
    expect(looping.body).to.deep.include({ status: "degraded", failing: ["indexer"] });
    const loop = looping.body.indexer.reorgLoop;
    expect(looping.body.indexer.state).to.equal("reorg-loop");
    expect(loop).to.include({ forkBlock: head, fromBlock: head, chainUnchanged: true });
    expect(loop.reason).to.equal("head block replaced");
    expect(Date.parse(loop.since)).to.be.a("number").and.not.NaN;
    // Every attempt found the chain unchanged: the wait doubles from 250 ms.
    expect(loop.backoffMs).to.equal(Math.min(30_000, 250 * 2 ** (loop.count - 1)));
    expect(looping.lies, "one head read per attempt, none in between").to.be.at.most(loop.count + 1);

    // Nothing was rolled back, and the loop was logged once, not once per attempt.
    const cursor = await db!.prisma.indexerCursor.findUniqueOrThrow({ where: { chainId: chain.deployment.chainId } });
    expect(cursor.blockNumber).to.equal(head);
    expect(await dumpMirror(db!)).to.deep.equal(mirrored);
    expect(logged.messages(ROLLED_BACK)).to.deep.equal([]);
    expect(logged.messages(LOOP_STARTED, 40)).to.have.length(1);

    proxy.setLying(false);
    const recovered = await waitFor(
      async () => {
        const reply = await health.get();
        return reply.status === 200 ? reply : undefined;
      },
      60_000,
      "/health to recover once the node answers consistently",
    );
    expect(recovered.body.indexer).to.deep.include({ state: "indexing", reorgLoop: null });
    expect(logged.messages(LOOP_ENDED)).to.have.length(1);

    await deposit(chain, await chain.signer(7), usdc(40));
    await waitForHead(db!, chain);
    expect(await dumpMirror(db!)).to.deep.equal(await cleanReindex(chain));
    expect(logged.messages(ROLLED_BACK)).to.deep.equal([]);
  });
});
