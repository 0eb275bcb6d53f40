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

    it("a process killed after sending a deposit and before answering: the next start settles it, and the retry with the key sends nothing", async () => {
      const first = await startApi();
      const user = await newUser(first.url, 100);
      const key = randomUUID();
      await chain.setAutomine(false);
      try {
        const answer = call(first.url, "POST", "/v1/vault/deposit", { token: user.token, body: { amount: 40 }, key });
        answer.catch(() => undefined);
        const row = await waitFor(
          () => db.prisma.chainTransaction.findFirst({ where: { userId: user.id, purpose: "vault.deposit" } }),
          30_000,
          "the deposit's transaction to be recorded",
        );
        await waitFor(async () => (await chain.provider.getTransaction(row.txHash)) !== null, 30_000, "the deposit to reach the node");
        await first.child.stop("SIGKILL");
        const left = await db.prisma.chainTransaction.findUniqueOrThrow({ where: { txHash: row.txHash } });
        expect(left.status, "the killed process never settled it").to.equal("signed");
        await chain.mine();
      } finally {
        await chain.setAutomine(true);
      }

      // The restart, on the same address.
      const second = await startApi({ port: first.port });
      const settled = await db.prisma.chainTransaction.findFirstOrThrow({ where: { userId: user.id, purpose: "vault.deposit" } });
      expect(settled.status, "reconciled at start").to.equal("mined");
      expect(second.child.output()).to.match(/reconciled transactions left in flight/);

      // The killed process held the request's Idempotency-Key; it no longer beats, so the retry
      // takes the key over (no 409 for the hold's 2 minutes) and gets the settled deposit.
      const retry = await call(second.url, "POST", "/v1/vault/deposit", { token: user.token, body: { amount: 40 }, key });
      expect(retry.status, retry.text).to.equal(200);
      expect(retry.body.data.txHash).to.equal(settled.txHash);
      expect(await db.prisma.chainTransaction.count({ where: { userId: user.id, purpose: "vault.deposit" } })).to.equal(1);
      const deposits = await chain.contracts.vault.queryFilter(chain.contracts.vault.filters.Deposit!(user.wallet));
      expect(deposits).to.have.length(1);
      expect(await chain.contracts.usdc.balanceOf(user.wallet)).to.equal(usdc(60));
      await second.child.stop();
    });

    it("a deposit sent WITHOUT a key by a process killed before answering: settled at the next start, nothing sent twice, no orphan, and the user's next write goes at once", async () => {
      const first = await startApi();
      const user = await newUser(first.url, 100);
      await chain.setAutomine(false);
      try {
        const answer = call(first.url, "POST", "/v1/vault/deposit", { token: user.token, body: { amount: 30 } });
        answer.catch(() => undefined);
        const row = await waitFor(
          () => db.prisma.chainTransaction.findFirst({ where: { userId: user.id, purpose: "vault.deposit" } }),
          30_000,
          "the deposit's transaction to be recorded",
        );
        expect(row.idempotencyKey, "recorded under a key the service made").to.match(/^request /);
        await waitFor(async () => (await chain.provider.getTransaction(row.txHash)) !== null, 30_000, "the deposit to reach the node");
        await first.child.stop("SIGKILL");
        await chain.mine();
      } finally {
        await chain.setAutomine(true);
      }
      const second = await startApi({ port: first.port });
      const rows = await db.prisma.chainTransaction.findMany({ where: { userId: user.id, purpose: "vault.deposit" } });
      expect(
        rows.map((r) => r.status),
        "reconciled at start, one transaction",
      ).to.deep.equal(["mined"]);
      expect(
        await db.prisma.idempotencyRecord.count({ where: { userId: user.id, operation: "POST /v1/vault/deposit" } }),
        "no key, no kept answer",
      ).to.equal(0);
      // The dead process's lease on the user's transactions is taken over: the next write does not wait for it to expire.
      const next = await call(second.url, "POST", "/v1/vault/deposit", { token: user.token, body: { amount: 10 } });
      expect(next.status, next.text).to.equal(200);
      const deposits = await chain.contracts.vault.queryFilter(chain.contracts.vault.filters.Deposit!(user.wallet));
      expect(deposits).to.have.length(2);
      expect(await chain.contracts.usdc.balanceOf(user.wallet)).to.equal(usdc(60));
      const position = await call(second.url, "GET", "/v1/vault/position", { token: user.token });
      expect(position.body.data.usdcValue).to.equal("40.00");
      await second.child.stop();
    });

    it("two processes sending at once for the same users: every nonce right, chain = mirror = API", async () => {
      const a = await startApi();
      const b = await startApi({ issuerPort: a.port });
      const users = [await newUser(a.url, 1_000), await newUser(a.url, 1_000)];
      const requests = users.flatMap((user) =>
        Array.from({ length: 20 }, (_, i) =>
          call(i % 2 === 0 ? a.url : b.url, "POST", "/v1/vault/deposit", { token: user.token, body: { amount: 5 }, key: randomUUID() }),
        ),
      );
      const answers = await Promise.all(requests);
      for (const answer of answers) expect(answer.status, answer.text).to.equal(200);
      const rows = await db.prisma.chainTransaction.findMany({
        where: { purpose: "vault.deposit", userId: { in: users.map((u) => u.id) } },
      });
      expect(rows).to.have.length(40);
      expect(rows.every((row) => row.status === "mined")).to.equal(true);
      // Every transaction the paying account ever sent is mined or filled: no nonce used twice, none skipped.
      const payer = await (await chain.signer(0)).getAddress();
      const all = await db.prisma.chainTransaction.findMany({ where: { sender: payer.toLowerCase() }, orderBy: { nonce: "asc" } });
      expect(new Set(all.map((row) => row.nonce)).size).to.equal(all.length);
      for (const user of users) {
        const onChain = (await chain.contracts.vault.balanceOf(user.wallet)) as bigint;
        const position = await call(a.url, "GET", "/v1/vault/position", { token: user.token });
        expect(position.body.data.tmUSDCBalance).to.equal(formatUsdc2(onChain / SHARES_PER_MICRO));
        const mirrored = await db.prisma.vaultPosition.findFirstOrThrow({ where: { owner: user.wallet.toLowerCase() } });
        expect(BigInt(mirrored.shares.toFixed())).to.equal(onChain);
        expect(await chain.contracts.usdc.balanceOf(user.wallet)).to.equal(usdc(1_000 - 100));
      }
      await Promise.all([a.child.stop(), b.child.stop()]);
    });
  });
}
