// The sender's rules (domain/transactions/sender.ts) on a real database and a real embedded
// chain that does not mine on arrival: a transaction left unmined is replaced at the same nonce
// with fees at least 25 % higher, and settled once by whichever of its hashes is mined; one the
// node forgot is broadcast again as it was; bytes the node refuses leave no stuck nonce behind;
// a retry under the same key settles the first transaction instead of sending another.
import { randomUUID } from "node:crypto";
import { expect } from "chai";
import type { JsonRpcProvider, Wallet } from "ethers";
import { platformErrors } from "../../core/platform-abi.js";
import { TransactionRefusedError } from "../../domain/transactions/failures.js";
import { createTransactionsRepo } from "../../domain/transactions/repo.js";
import { createTransactionSender, type TransactionSender } from "../../domain/transactions/sender.js";
import { type TestDatabase, usingPostgres } from "../helpers/database.js";
import { type PayingChain, startPayingChain } from "../helpers/paying-chain.js";

/** A paying account of its own, given 100 ETH for gas. */
const KEY = "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6";
const SINK = "0x000000000000000000000000000000000000dEaD";

describe(`the transaction sender (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(60_000);
  let stack: PayingChain;
  let provider: JsonRpcProvider;
  let db: TestDatabase;
  let account: Wallet;
  let sender: TransactionSender;

  before(async () => {
    stack = await startPayingChain(KEY);
    const { chainId } = stack;
    ({ provider, db, account } = stack);
    sender = createTransactionSender({
      repo: createTransactionsRepo({ db, chainId, sender: account.address }),
      provider,
      chainId,
      account,
      errors: platformErrors(),
      forwarder: stack.forwarder,
      receiptTimeoutMs: 20_000,
      replaceAfterMs: 300,
    });
  });
  afterEach(async () => {
    await provider.send("evm_setAutomine", [true]);
  });
  after(async () => {
    await stack?.close();
  });

  const transfer = (extra: { gasLimit?: bigint; userId?: string; idempotencyKey?: string } = {}) =>
    sender.send({ purpose: "test.transfer", to: SINK, data: "0x", gasLimit: 30_000n, ...extra });
  const rowOf = (txHash: string) =>
    db.prisma.chainTransaction.findFirstOrThrow({ where: { OR: [{ txHash }, { previousTxHashes: { has: txHash } }] } });
  const mineAfter = (ms: number) =>
    new Promise<void>((resolve, reject) => setTimeout(() => provider.send("evm_mine", []).then(() => resolve(), reject), ms));

  it("replaces a transaction left unmined: same nonce, fees at least 25 % higher; settled once by the hash that is mined", async () => {
    await provider.send("evm_setAutomine", [false]);
    const nonce = await provider.getTransactionCount(account.address, "pending");
    const fees = await provider.getFeeData();
    const [sent] = await Promise.all([transfer(), mineAfter(1_500)]);
    const row = await rowOf(sent.txHash);
    expect(row.previousTxHashes.length).to.be.greaterThan(0);
    expect(row).to.include({ status: "mined", nonce, txHash: sent.txHash });
    const mined = (await provider.getTransaction(sent.txHash))!;
    expect(mined.nonce).to.equal(nonce);
    expect(mined.maxFeePerGas! * 100n >= fees.maxFeePerGas! * 125n).to.equal(true);
    // One transaction at that nonce, recorded once.
    expect(await db.prisma.chainTransaction.count({ where: { nonce, sender: account.address } })).to.equal(1);
  });

  it("broadcasts again, as it was, a transaction the node forgot", async () => {
    await provider.send("evm_setAutomine", [false]);
    const pending = transfer();
    // The node drops it from its pool before it is mined (a restart of a node without persistence, say).
    let dropped: string | undefined;
    for (let tries = 0; !dropped && tries < 50; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      const block = await provider.send("eth_getBlockByNumber", ["pending", false]);
      dropped = block?.transactions?.[0];
    }
    expect(dropped).to.be.a("string");
    expect(await provider.send("hardhat_dropTransaction", [dropped])).to.equal(true);
    expect(await provider.getTransaction(dropped!)).to.equal(null);
    // At its next look the sender finds the node without it and sends the same bytes again.
    let back = false;
    for (let tries = 0; !back && tries < 100; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      back = (await provider.getTransaction(dropped!)) !== null;
    }
    expect(back).to.equal(true);
    await provider.send("evm_mine", []);
    const sent = await pending;
    // The same bytes: the hash mined is the first one signed, no replacement was needed to bring it back.
    expect(sent.txHash).to.equal(dropped);
    expect((await rowOf(sent.txHash)).status).to.equal("mined");
  });

  it("refused bytes are recorded failed and leave no stuck nonce: the next transaction is mined", async () => {
    const nonce = await provider.getTransactionCount(account.address, "pending");
    const refusal = await transfer({ gasLimit: 20_000n }).catch((error: unknown) => error);
    expect(refusal).to.be.instanceOf(TransactionRefusedError);
    expect((await db.prisma.chainTransaction.findFirstOrThrow({ where: { nonce, sender: account.address } })).status).to.equal("failed");
    // Its nonce is taken at once by a zero-value transfer to the paying account itself.
    expect(await provider.getTransactionCount(account.address, "latest")).to.equal(nonce + 1);
    const [filler] = (await provider.getBlock("latest", true))!.prefetchedTransactions;
    expect(filler).to.deep.include({ from: account.address, to: account.address, value: 0n, nonce });
    const next = await transfer();
    expect((await provider.getTransaction(next.txHash))!.nonce).to.equal(nonce + 1);
  });

  it("a retry under the same key settles the first transaction and sends nothing", async () => {
    const key = { userId: `user-${randomUUID()}`, idempotencyKey: randomUUID() };
    const first = await transfer(key);
    const before = await provider.getTransactionCount(account.address, "latest");
    const retry = await transfer(key);
    expect(retry.txHash).to.equal(first.txHash);
    expect(await provider.getTransactionCount(account.address, "latest")).to.equal(before);
  });
});
