import { randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { ensureChainIdentity } from "../../core/chain-identity.js";
import { createLogger } from "../../core/logger.js";
import { formatUsdc2 } from "../../core/money.js";
import type { Indexer } from "../../indexer/indexer.js";
import { startTestChain, type TestChain, usdc } from "../helpers/chain.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";
import { testIndexer, waitFor } from "../helpers/mirror.js";
import { freePort, type StackProcess, startStack } from "../helpers/stack.js";

// Real `npm run api` processes on one PostgreSQL and one chain: a process killed between
// sending a deposit and answering it, and two processes sending for the same users at once.
// PGlite lives in one process, so these run on PostgreSQL only (the in-process equivalents are
// in vault.test.ts and money-sandbox.test.ts).

const SHARES_PER_MICRO = 10n ** 12n;

async function call(base: string, method: string, urlPath: string, options: { token?: string; body?: unknown; key?: string } = {}) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.key) headers["idempotency-key"] = options.key;
  const response = await fetch(`${base}${urlPath}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  return { status: response.status, text, body: text ? JSON.parse(text) : undefined };
}

function expectInsufficientBalance(answer: { status: number; text: string; body: { error?: { code: string } } }) {
  expect(answer.status, answer.text).to.equal(400);
  expect(answer.body.error?.code, answer.text).to.equal("INSUFFICIENT_BALANCE");
}

if (usingPostgres) {
  describe("vault over several API processes (PostgreSQL)", function () {
    this.timeout(300_000);
    let chain: TestChain;
    let db: TestDatabase;
    let indexer: Indexer;
    const children: StackProcess[] = [];
    // One DATA_DIR: every process signs and accepts the same development tokens.
    const dataDir = mkdtempSync(path.join(os.tmpdir(), "api-processes-"));

    /**
     * `npm run api` on `port` (default a free one). Tokens name their issuer's port, so a process
     * that must accept another's tokens is given that issuer (the key is the same: one DATA_DIR).
     */
    async function startApi(options: { port?: number; issuerPort?: number } = {}) {
      const port = String(options.port ?? (await freePort()));
      const env: Record<string, string> = {
        CHAIN_RPC_URL: chain.rpcUrl,
        DATABASE_URL: db.url!,
        DATA_DIR: dataDir,
        PORT: port,
        LOG_LEVEL: "info",
      };
      if (options.issuerPort) env.AUTH_ISSUER = `http://127.0.0.1:${options.issuerPort}/dev`;
      const child = startStack(env, "api");
      children.push(child);
      const line = await child.ready();
      return { child, url: /api=(\S+)/.exec(line)![1]!, port: Number(port) };
    }

    async function newUser(base: string, funds: number) {
      const token = (await call(base, "POST", "/dev/token", { body: { sub: `p-${randomUUID()}`, expiresIn: 86_400 } })).body.data
        .accessToken;
      const me = (await call(base, "GET", "/v1/users/me", { token })).body.data;
      await call(base, "PUT", `/dev/users/${me.id}/plan`, { body: { plan: "enterprise" } });
      const faucet = await call(base, "POST", "/dev/faucet", { token, body: { amount: funds }, key: randomUUID() });
      expect(faucet.status, faucet.text).to.equal(200);
      return { token, id: me.id as string, wallet: me.walletAddress as string };
    }

    before(async () => {
      chain = await startTestChain();
      db = await createTestDatabase();
      await ensureChainIdentity(db, chain.deployment, { embedded: false, logger: createLogger("silent") });
      indexer = testIndexer(db, chain);
      indexer.start();
    });
    after(async () => {
      for (const child of children) await child.stop("SIGKILL");
      await indexer?.stop();
      await db?.destroy();
      await chain?.close();
    });

    /** Deposits `amount` once with automine on: the vault gets its standing allowance (D-86), so later deposits are single requests. */
    async function firstDeposit(base: string, user: { token: string }, amount = 1) {
      const answer = await call(base, "POST", "/v1/vault/deposit", { token: user.token, body: { amount } });
      expect(answer.status, answer.text).to.equal(200);
    }

    it("kill -9 with a batch in flight: the next start settles every request, each retry gets its own answer, nothing is sent twice", async () => {
      const first = await startApi();
      const users = [await newUser(first.url, 100), await newUser(first.url, 100), await newUser(first.url, 100)];
      for (const user of users) await firstDeposit(first.url, user);
      const keys = users.map(() => [randomUUID(), randomUUID()]);
      await chain.setAutomine(false);
      try {
        for (const [u, user] of users.entries()) {
          for (const key of keys[u]!) {
            call(first.url, "POST", "/v1/vault/deposit", { token: user.token, body: { amount: 10 }, key }).catch(() => undefined);
          }
        }
        const ids = users.map((user) => user.id);
        const requests = await waitFor(
          async () => {
            const rows = await db.prisma.relayedRequest.findMany({ where: { userId: { in: ids }, status: "pending" } });
            return rows.length === 6 ? rows : undefined;
          },
          30_000,
          "the six deposits to be recorded",
        );
        const batches = await db.prisma.chainTransaction.findMany({ where: { id: { in: requests.map((r) => r.transactionId) } } });
        for (const batch of batches) {
          await waitFor(async () => (await chain.provider.getTransaction(batch.txHash)) !== null, 30_000, "the batch to reach the node");
        }
        await first.child.stop("SIGKILL");
        for (const batch of batches) {
          const left = await db.prisma.chainTransaction.findUniqueOrThrow({ where: { id: batch.id } });
          expect(left.status, "the killed process never settled it").to.equal("signed");
        }
        await chain.mine();
      } finally {
        await chain.setAutomine(true);
      }

      // The restart, on the same address: it settles the batches and every request in them.
      const second = await startApi({ port: first.port });
      expect(second.child.output()).to.match(/reconciled users' requests left in flight/);
      for (const [u, user] of users.entries()) {
        for (const key of keys[u]!) {
          const request = await db.prisma.relayedRequest.findUniqueOrThrow({
            where: { userId_idempotencyKey_purpose: { userId: user.id, idempotencyKey: key, purpose: "vault.deposit" } },
          });
          expect(request.status, "reconciled at start").to.equal("executed");
          const batch = await db.prisma.chainTransaction.findUniqueOrThrow({ where: { id: request.transactionId } });
          expect(batch.status).to.equal("mined");
          // The killed process held the key; it no longer beats, so the retry takes it over and gets the settled deposit.
          const retry = await call(second.url, "POST", "/v1/vault/deposit", { token: user.token, body: { amount: 10 }, key });
          expect(retry.status, retry.text).to.equal(200);
          expect(retry.body.data.txHash).to.equal(batch.txHash);
        }
        // Counted on chain: the first deposit and the two in flight, each once.
        const deposits = await chain.contracts.vault.queryFilter(chain.contracts.vault.filters.Deposit!(user.wallet));
        expect(deposits).to.have.length(3);
        expect(await chain.contracts.forwarder.nonces(user.wallet)).to.equal(3n);
        expect(await chain.contracts.usdc.balanceOf(user.wallet)).to.equal(usdc(100 - 1 - 20));
        expect(await db.prisma.relayedRequest.count({ where: { userId: user.id } })).to.equal(3);
      }
      await second.child.stop();
    });

    it("a deposit sent WITHOUT a key by a process killed before answering: settled at the next start, nothing sent twice, and the user's next write goes at once", async () => {
      const first = await startApi();
      const user = await newUser(first.url, 100);
      await firstDeposit(first.url, user);
      await chain.setAutomine(false);
      try {
        const answer = call(first.url, "POST", "/v1/vault/deposit", { token: user.token, body: { amount: 30 } });
        answer.catch(() => undefined);
        const request = await waitFor(
          () => db.prisma.relayedRequest.findFirst({ where: { userId: user.id, status: "pending" } }),
          30_000,
          "the deposit to be recorded",
        );
        expect(request.idempotencyKey, "recorded under a key the service made").to.match(/^request /);
        const batch = await db.prisma.chainTransaction.findUniqueOrThrow({ where: { id: request.transactionId } });
        await waitFor(async () => (await chain.provider.getTransaction(batch.txHash)) !== null, 30_000, "the deposit to reach the node");
        await first.child.stop("SIGKILL");
        await chain.mine();
      } finally {
        await chain.setAutomine(true);
      }
      const second = await startApi({ port: first.port });
      const rows = await db.prisma.relayedRequest.findMany({ where: { userId: user.id, purpose: "vault.deposit" } });
      expect(
        rows.map((r) => r.status),
        "reconciled at start, one request each",
      ).to.deep.equal(["executed", "executed"]);
      expect(
        await db.prisma.idempotencyRecord.count({ where: { userId: user.id, operation: "POST /v1/vault/deposit" } }),
        "no key, no kept answer",
      ).to.equal(0);
      // Nothing holds the user's transactions: the next write goes at once.
      const next = await call(second.url, "POST", "/v1/vault/deposit", { token: user.token, body: { amount: 10 } });
      expect(next.status, next.text).to.equal(200);
      const deposits = await chain.contracts.vault.queryFilter(chain.contracts.vault.filters.Deposit!(user.wallet));
      expect(deposits).to.have.length(3);
      expect(await chain.contracts.usdc.balanceOf(user.wallet)).to.equal(usdc(100 - 1 - 30 - 10));
      const position = await call(second.url, "GET", "/v1/vault/position", { token: user.token });
      expect(position.body.data.usdcValue).to.equal("41.00");
      await second.child.stop();
    });

    it("two processes sharing the paying account under load: every request answered, nonces in order, chain = mirror = API", async () => {
      const a = await startApi();
      const b = await startApi({ issuerPort: a.port });
      const users = await Promise.all(Array.from({ length: 5 }, () => newUser(a.url, 1_000)));
      // 20 writes per user, half to each process, deposits and (after the first) withdrawals mixed, all at once.
      const requests = users.flatMap((user) =>
        Array.from({ length: 20 }, (_, i) => {
          const base = i % 2 === 0 ? a.url : b.url;
          const [path, body] = i % 4 === 3 ? ["/v1/vault/withdraw", { tmUSDCAmount: 1 }] : ["/v1/vault/deposit", { amount: 5 }];
          return call(base, "POST", path, { token: user.token, body, key: randomUUID() });
        }),
      );
      const answers = await Promise.all(requests);
      for (const answer of answers) {
        // A withdrawal simulated before any deposit of its user landed may find nothing to redeem yet.
        if (answer.status !== 200) expectInsufficientBalance(answer);
      }
      expect(answers.filter((answer) => answer.status === 200).length).to.be.at.least(75);
      const rows = await db.prisma.relayedRequest.findMany({ where: { userId: { in: users.map((u) => u.id) } } });
      expect(rows).to.have.length(answers.filter((answer) => answer.status === 200).length);
      expect(rows.every((row) => row.status === "executed")).to.equal(true);
      // Every transaction the paying account ever sent is mined or filled: no nonce used twice, none skipped.
      const payer = await (await chain.signer(0)).getAddress();
      const all = await db.prisma.chainTransaction.findMany({ where: { sender: payer.toLowerCase() }, orderBy: { nonce: "asc" } });
      expect(new Set(all.map((row) => row.nonce)).size).to.equal(all.length);
      expect(all.every((row) => row.status === "mined")).to.equal(true);
      // Each process broadcast after the lower nonces the other had recorded: the node never saw one ahead.
      for (const process of [a, b]) expect(process.child.output()).to.not.match(/ahead of a lower nonce/);
      for (const user of users) {
        const executed = rows.filter((row) => row.userId === user.id).map((row) => Number(row.forwarderNonce));
        expect(executed.sort((x, y) => x - y)).to.deep.equal(Array.from({ length: executed.length }, (_, i) => i));
        const onChain = (await chain.contracts.vault.balanceOf(user.wallet)) as bigint;
        const position = await call(a.url, "GET", "/v1/vault/position", { token: user.token });
        expect(position.body.data.tmUSDCBalance).to.equal(formatUsdc2(onChain / SHARES_PER_MICRO));
        const mirrored = await db.prisma.vaultPosition.findFirstOrThrow({ where: { owner: user.wallet.toLowerCase() } });
        expect(BigInt(mirrored.shares.toFixed())).to.equal(onChain);
      }
      await Promise.all([a.child.stop(), b.child.stop()]);
    });
  });
}
