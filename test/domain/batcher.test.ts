// The batcher (domain/transactions/batcher.ts), the one place that takes the paying account's
// nonces, on a real database and a real embedded chain: calls of one turn are recorded together
// (one group commit) before any byte reaches the node, with consecutive nonces broadcast in
// order; two processes on one account never sign two transactions with one nonce; the account's
// own sends elsewhere are never behind; one item's duplicate key does not sink the others.
import { randomUUID } from "node:crypto";
import { expect } from "chai";
import type { JsonRpcProvider, Wallet } from "ethers";
import { type Batched, createBatcher, type OwnCall } from "../../domain/transactions/batcher.js";
import { createPayingAccount } from "../../domain/transactions/paying-account.js";
import { createTransactionsRepo } from "../../domain/transactions/repo.js";
import { type TestDatabase, usingPostgres } from "../helpers/database.js";
import { type PayingChain, startPayingChain } from "../helpers/paying-chain.js";

/** A paying account of its own, given 100 ETH for gas. */
const KEY = "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a8d4e5e3f8d7";
const SINK = "0x000000000000000000000000000000000000dEaD";

describe(`the batcher (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(60_000);
  let stack: PayingChain;
  let provider: JsonRpcProvider;
  let chainId: number;
  let db: TestDatabase;
  let account: Wallet;

  before(async () => {
    stack = await startPayingChain(KEY);
    ({ provider, chainId, db, account } = stack);
  });
  after(async () => {
    await stack?.close();
  });

  /** A batcher as a process builds one; `onBroadcast` sees each broadcast before it goes. */
  function batcherOf(onBroadcast?: (txHashes: string[]) => Promise<void>) {
    const repo = createTransactionsRepo({ db, chainId, sender: account.address });
    const payingAccount = createPayingAccount({ provider, chainId, account });
    const broadcast = payingAccount.broadcast;
    payingAccount.broadcast = async (batch) => {
      await onBroadcast?.(batch.map((item) => item.txHash));
      return broadcast(batch);
    };
    // Own calls only here: the forwarder is never called.
    return createBatcher({ repo, provider, account, payingAccount, forwarder: stack.forwarder });
  }
  const call = (extra: Partial<OwnCall> = {}): OwnCall => ({ purpose: "test.transfer", to: SINK, data: "0x", gasLimit: 30_000n, ...extra });
  const recorded = async (txHashes: string[]) =>
    (await db.prisma.chainTransaction.findMany({ where: { txHash: { in: txHashes } }, select: { txHash: true } })).length;
  const minedNonces = async (results: Batched[]) => {
    const receipts = await Promise.all(results.map((result) => provider.waitForTransaction(result.transaction.txHash)));
    expect(receipts.map((receipt) => receipt?.status)).to.deep.equal(results.map(() => 1));
    return results.map((result) => result.transaction.nonce);
  };

  it("records the calls of one turn together, before the node sees them, and broadcasts them in nonce order", async () => {
    const broadcasts: { txHashes: string[]; recordedBefore: number }[] = [];
    const batcher = batcherOf(async (txHashes) => {
      broadcasts.push({ txHashes, recordedBefore: await recorded(txHashes) });
    });
    const first = await provider.getTransactionCount(account.address, "pending");
    const results = await Promise.all(Array.from({ length: 6 }, () => batcher.submit({ own: call() })));
    // One group commit, one broadcast of all six, each recorded before it went.
    expect(broadcasts).to.have.length(1);
    expect(broadcasts[0]!.txHashes).to.have.length(6);
    expect(broadcasts[0]!.recordedBefore).to.equal(6);
    expect(await minedNonces(results)).to.deep.equal([0, 1, 2, 3, 4, 5].map((i) => first + i));
  });

  it("two processes on one account never sign two transactions with one nonce", async () => {
    const [one, two] = [batcherOf(), batcherOf()];
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? one : two).submit({ own: call() })));
    const nonces = await minedNonces(results);
    expect(new Set(nonces).size).to.equal(10);
    const { rows } = await db.sql.query<{ nonce: number; count: number }>(
      `SELECT "nonce", count(*)::int AS "count" FROM "ChainTransaction" WHERE "sender" = $1 GROUP BY "nonce" HAVING count(*) > 1`,
      [account.address],
    );
    expect(rows).to.deep.equal([]);
  });

  it("takes a nonce after one the account used elsewhere (never behind the chain's count)", async () => {
    const sentElsewhere = await account.sendTransaction({ to: SINK, value: 1n });
    await sentElsewhere.wait();
    const [result] = await Promise.all([batcherOf().submit({ own: call() })]);
    expect(result!.transaction.nonce).to.equal(sentElsewhere.nonce + 1);
    expect((await minedNonces([result!]))[0]).to.equal(sentElsewhere.nonce + 1);
  });

  it("one item's duplicate key refuses that item alone: the others of its batch are recorded and sent", async () => {
    const batcher = batcherOf();
    const key = { userId: `user-${randomUUID()}`, idempotencyKey: randomUUID() };
    await batcher.submit({ own: call(key) });
    const outcomes = await Promise.allSettled([
      batcher.submit({ own: call() }),
      batcher.submit({ own: call(key) }),
      batcher.submit({ own: call() }),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).to.deep.equal(["fulfilled", "rejected", "fulfilled"]);
    const sent = outcomes.flatMap((outcome) => (outcome.status === "fulfilled" ? [outcome.value] : []));
    const nonces = await minedNonces(sent);
    expect(nonces[1]).to.equal(nonces[0]! + 1);
  });
});
