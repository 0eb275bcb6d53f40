import { randomUUID } from "node:crypto";
import { expect } from "chai";
import { formatUnits, Transaction, toQuantity, Wallet } from "ethers";
import { requestHashOf } from "../../api/http/idempotency.js";
import { ensureChainIdentity } from "../../core/chain-identity.js";
import { createLogger } from "../../core/logger.js";
import { platformContract, platformErrors } from "../../core/platform-abi.js";
import { CHAIN_DERIVED_TABLES } from "../../domain/modules.js";
import { createProcessPresence } from "../../domain/processes/presence.js";
import { TransactionRevertedError } from "../../domain/transactions/failures.js";
import { createTransactionsRepo } from "../../domain/transactions/repo.js";
import { createTransactionSender } from "../../domain/transactions/sender.js";
import { deposit } from "../helpers/activity.js";
import { type ApiResponse, startTestApi, type TestApi } from "../helpers/api.js";
import { DEPLOYER_KEY, startTestChain, type TestChain, usdc } from "../helpers/chain.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";
import { expectErrorEnvelope } from "../helpers/envelope.js";

// The money sandbox's faucet over real HTTP on a real chain: the first money write, so the
// place where the transaction sender (nonces, records, reconciliation) and Idempotency-Key are tested.

describe(`money sandbox: faucet, transaction sender, Idempotency-Key (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(180_000);
  let chain: TestChain;
  let db: TestDatabase;
  let api: TestApi;
  let token: string;
  let wallet: string;
  let userId: string;

  const balanceOf = async (address: string) => (await chain.contracts.usdc.balanceOf(address)) as bigint;
  /** `key` null sends no Idempotency-Key header. */
  const faucet = (body: unknown, key: string | null = randomUUID(), as = token) =>
    api.request("POST", "/dev/faucet", { token: as, body, headers: key === null ? {} : { "idempotency-key": key } });
  const faucetTransactions = () => db.prisma.chainTransaction.count({ where: { purpose: "sandbox.faucet", userId } });

  before(async () => {
    chain = await startTestChain();
    db = await createTestDatabase();
    await ensureChainIdentity(db, chain.deployment, { embedded: true, logger: createLogger("silent"), chainTables: CHAIN_DERIVED_TABLES });
    api = await startTestApi({ chain, db, logger: createLogger(process.env.TEST_LOG_LEVEL ?? "silent") });
    token = await api.token("saver", { expiresIn: 86_400 });
    const me = await api.request("GET", "/v1/users/me", { token });
    wallet = me.body.data.walletAddress;
    userId = me.body.data.id;
    // Many faucet calls a minute: above the free plan's limit, which applies to the faucet too.
    expect((await api.request("PUT", `/dev/users/${userId}/plan`, { body: { plan: "enterprise" } })).status).to.equal(200);
  });
  after(async () => {
    await api?.close();
    await db?.destroy();
    await chain?.close();
  });

  it("mints test USDC to the caller's managed wallet and answers after the receipt", async () => {
    const before = await balanceOf(wallet);
    const response = await faucet({ amount: 125.5 });
    expect(response.status, response.text).to.equal(200);
    expect(response.body.data).to.deep.include({ walletAddress: wallet, amount: "125.50", balance: "125.50" });
    const receipt = await chain.provider.getTransactionReceipt(response.body.data.txHash);
    expect(receipt?.status).to.equal(1);
    expect((await balanceOf(wallet)) - before).to.equal(125_500_000n);
    const row = await db.prisma.chainTransaction.findUniqueOrThrow({ where: { txHash: response.body.data.txHash } });
    expect(row).to.deep.include({ status: "mined", purpose: "sandbox.faucet", userId, blockNumber: receipt!.blockNumber });
  });

  it("refuses amounts outside (0, 10,000] or with more than 6 decimals, and moves nothing", async () => {
    const before = await faucetTransactions();
    for (const amount of [0, -1, 10_000.000001, 1.0000001, "10", 1e21, null]) {
      const response = await faucet({ amount });
      expectErrorEnvelope(response, 400, "VALIDATION_ERROR");
      expect(response.body.error.details.field, String(amount)).to.equal("amount");
    }
    // Below 0.01 USDC (the smallest amount shown) a mint is not worth its gas.
    for (const amount of [0.000001, 0.009999]) {
      const response = await faucet({ amount });
      expectErrorEnvelope(response, 400, "AMOUNT_TOO_SMALL");
      expect(response.body.error.details).to.deep.equal({ field: "amount", reason: "at least 0.01 USDC" });
    }
    expect((await faucet({ amount: 10_000 })).status).to.equal(200);
    expect((await faucet({ amount: 0.01 })).status).to.equal(200);
    expect(await faucetTransactions()).to.equal(before + 2);
  });

  it("takes an optional Idempotency-Key: without one each request is a new operation; a malformed one is refused; documented", async () => {
    const transactions = await faucetTransactions();
    const balance = await balanceOf(wallet);
    const first = await faucet({ amount: 1 }, null);
    const second = await faucet({ amount: 1 }, null);
    expect([first.status, second.status], first.text + second.text).to.deep.equal([200, 200]);
    expect(first.body.data.txHash).to.not.equal(second.body.data.txHash);
    expect(await faucetTransactions()).to.equal(transactions + 2);
    expect((await balanceOf(wallet)) - balance).to.equal(2_000_000n);
    // Recorded before sending like any other: under a key the service made, with the request's hash.
    const row = await db.prisma.chainTransaction.findUniqueOrThrow({ where: { txHash: first.body.data.txHash } });
    expect(row.idempotencyKey).to.match(/^request [0-9a-f-]{36}$/);
    expect(row.requestHash).to.match(/^[0-9a-f]{64}$/);

    expectErrorEnvelope(await faucet({ amount: 1 }, "has space"), 400, "VALIDATION_ERROR");
    expectErrorEnvelope(await faucet({ amount: 1 }, "k".repeat(256)), 400, "VALIDATION_ERROR");
    const doc = (await api.request("GET", "/v1/openapi.json")).body;
    const operation = doc.paths["/dev/faucet"].post;
    const header = operation.parameters.find((p: { name: string }) => p.name === "Idempotency-Key");
    expect(header).to.deep.include({ in: "header", required: false });
    expect(header.description).to.include("Optional");
    expect(Object.keys(operation.responses)).to.include.members(["409", "422"]);
  });

  it("refuses a key reused with another body even after its 24-hour answer is gone, and replays it with the same body", async () => {
    const key = randomUUID();
    const first = await faucet({ amount: 4 }, key);
    expect(first.status, first.text).to.equal(200);
    // The key's kept answer expires (24 hours); the transaction it sent stays.
    await db.prisma.idempotencyRecord.deleteMany({ where: { key } });
    const balance = await balanceOf(wallet);
    const transactions = await faucetTransactions();
    expectErrorEnvelope(await faucet({ amount: 5 }, key), 422, "IDEMPOTENCY_KEY_REUSED");
    const again = await faucet({ amount: 4 }, key);
    expect(again.status, again.text).to.equal(200);
    expect(again.body.data.txHash).to.equal(first.body.data.txHash);
    expect(await balanceOf(wallet)).to.equal(balance);
    expect(await faucetTransactions()).to.equal(transactions);
  });

  it("answers a retry with the same key and body with the first answer, byte for byte, and sends nothing again", async () => {
    const key = randomUUID();
    const first = await faucet({ amount: 7 }, key);
    const balance = await balanceOf(wallet);
    const transactions = await faucetTransactions();
    const retry = await faucet({ amount: 7 }, key);
    expect(retry.status).to.equal(first.status);
    expect(retry.text).to.equal(first.text);
    expect(retry.headers.get("idempotent-replayed")).to.equal("true");
    expect(await balanceOf(wallet)).to.equal(balance);
    expect(await faucetTransactions()).to.equal(transactions);

    const reused = await faucet({ amount: 8 }, key);
    expectErrorEnvelope(reused, 422, "IDEMPOTENCY_KEY_REUSED");
    expect(await balanceOf(wallet)).to.equal(balance);

    // Another user's identical key is theirs: keys are per user.
    const other = await api.token("other-saver");
    expect((await faucet({ amount: 7 }, key, other)).status).to.equal(200);
  });

  it("a key held by a live request answers 409 with Retry-After; one held by a dead process is taken over at once", async () => {
    const holdBy = async (holder: string) => {
      const key = randomUUID();
      const now = new Date();
      await db.prisma.idempotencyRecord.create({
        data: {
          userId,
          key,
          operation: "POST /dev/faucet",
          requestHash: requestHashOf("POST /dev/faucet", { amount: 2 }),
          status: "in_progress",
          createdAt: now,
          lockedUntil: new Date(now.getTime() + 3_600_000),
          expiresAt: new Date(now.getTime() + 86_400_000),
          holder,
        },
      });
      return key;
    };
    // A process that beats (another API process, say) is still working on its request.
    const live = createProcessPresence({ db, kind: "test" });
    try {
      const busy = await faucet({ amount: 2 }, await holdBy(await live.id()));
      expectErrorEnvelope(busy, 409, "IDEMPOTENCY_IN_PROGRESS");
      expect(Number(busy.headers.get("retry-after"))).to.be.greaterThan(0);
    } finally {
      await live.stop();
    }
    // A holder that no longer beats (killed): the retry takes the key over and runs, without waiting out the hold.
    const balance = await balanceOf(wallet);
    const taken = await faucet({ amount: 2 }, await holdBy(randomUUID()));
    expect(taken.status, taken.text).to.equal(200);
    expect((await balanceOf(wallet)) - balance).to.equal(2_000_000n);
  });

  it("sends one transaction for concurrent requests with one key, and both get its answer", async () => {
    const key = randomUUID();
    const transactions = await faucetTransactions();
    const answers = await Promise.all([faucet({ amount: 3 }, key), faucet({ amount: 3 }, key), faucet({ amount: 3 }, key)]);
    for (const answer of answers) expect(answer.status, answer.text).to.equal(200);
    expect(new Set(answers.map((a) => a.body.data.txHash)).size).to.equal(1);
    expect(await faucetTransactions()).to.equal(transactions + 1);
  });

  it("keeps nonces right under 50 concurrent money writes: every one mined, one nonce each, none skipped", async () => {
    const before = await balanceOf(wallet);
    const since = new Date();
    const answers: ApiResponse[] = await Promise.all(Array.from({ length: 50 }, (_, i) => faucet({ amount: (100 + i) / 100 })));
    for (const answer of answers) expect(answer.status, answer.text).to.equal(200);
    expect(new Set(answers.map((a) => a.body.data.txHash)).size).to.equal(50);
    const expected = answers.reduce((sum, _a, i) => sum + 1_000_000n + BigInt(i) * 10_000n, 0n);
    expect((await balanceOf(wallet)) - before).to.equal(expected);
    const rows = await db.prisma.chainTransaction.findMany({ where: { createdAt: { gte: since } }, orderBy: { nonce: "asc" } });
    expect(rows.map((row) => row.status)).to.deep.equal(Array(50).fill("mined"));
    const nonces = rows.map((row) => row.nonce);
    expect(nonces).to.deep.equal(Array.from({ length: 50 }, (_, i) => nonces[0]! + i));
  });

  /**
   * What a process killed between recording and broadcasting leaves: a faucet mint of `amount`
   * micro-USDC signed at the paying account's next nonce and recorded `signed`, never sent.
   */
  async function recordUnsentMint(amount: bigint, key: string = randomUUID()) {
    const deployer = new Wallet(DEPLOYER_KEY, chain.provider);
    const usdc = platformContract(chain.deployment, "usdc", chain.provider);
    const nonce = await chain.provider.getTransactionCount(deployer.address, "pending");
    const to = await usdc.getAddress();
    const data = usdc.interface.encodeFunctionData("mint", [wallet, amount]);
    const rawTx = await deployer.signTransaction({
      type: 2,
      chainId: chain.deployment.chainId,
      nonce,
      to,
      data,
      gasLimit: 200_000n,
      maxFeePerGas: 10_000_000_000n,
      maxPriorityFeePerGas: 0n,
    });
    const txHash = Transaction.from(rawTx).hash!;
    const sender = deployer.address.toLowerCase();
    await db.prisma.chainTransaction.create({
      data: {
        id: randomUUID(),
        chainId: chain.deployment.chainId,
        purpose: "sandbox.faucet",
        userId,
        idempotencyKey: key,
        sender,
        nonce,
        to: to.toLowerCase(),
        data,
        rawTx,
        txHash,
        status: "signed",
        createdAt: new Date(),
      },
    });
    return { deployer, sender, nonce, txHash };
  }

  it("broadcasts a lower nonce another process recorded but never sent before its own: nothing waits for it, nothing fills it", async () => {
    // What a process killed between recording and broadcasting leaves, its nonce taken from SenderNonce.
    const { sender, nonce, txHash } = await recordUnsentMint(7_000_000n);
    await db.prisma.senderNonce.upsert({
      where: { chainId_address: { chainId: chain.deployment.chainId, address: sender } },
      create: { chainId: chain.deployment.chainId, address: sender, nextNonce: nonce + 1, updatedAt: new Date() },
      update: { nextNonce: nonce + 1 },
    });
    const before = await balanceOf(wallet);
    // This process's next transaction takes nonce + 1; the node sees the lower one first, in the same round trip.
    const next = await faucet({ amount: 3 });
    expect(next.status, next.text).to.equal(200);
    expect((await chain.provider.getTransactionReceipt(txHash))?.status, "the left transaction mined, not filled").to.equal(1);
    expect(await balanceOf(wallet)).to.equal(before + 10_000_000n);
    // Its row is the dead process's to settle: the next start's reconciliation does.
    expect(await api.services.sender!.reconcile()).to.equal(1);
    expect((await db.prisma.chainTransaction.findUniqueOrThrow({ where: { txHash } })).status).to.equal("mined");
  });

  it("takes recorded bytes whose nonce another transaction used as refused, not as sent: the retry answers at once", async () => {
    const key = randomUUID();
    const { deployer, nonce, txHash } = await recordUnsentMint(5_000_000n, key);
    // The same key sends something else with that nonce first (a script, say).
    await (await deployer.sendTransaction({ to: deployer.address, value: 0n, nonce })).wait();
    const before = await balanceOf(wallet);
    const retry = await faucet({ amount: 5 }, key);
    expectErrorEnvelope(retry, 503, "SERVICE_UNAVAILABLE");
    expect(retry.body.error.message).to.match(/new Idempotency-Key/);
    expect((await db.prisma.chainTransaction.findUniqueOrThrow({ where: { txHash } })).status).to.equal("failed");
    expect(await balanceOf(wallet)).to.equal(before);
  });

  it("settles at start what a stopped process had signed and recorded but not sent, and a retry then finds it", async () => {
    // The state a process killed between recording and broadcasting leaves: a signed transaction with the next nonce.
    const key = randomUUID();
    const { txHash } = await recordUnsentMint(42_000_000n, key);
    const before = await balanceOf(wallet);
    expect(await api.services.sender!.reconcile()).to.equal(1);
    expect(await balanceOf(wallet)).to.equal(before + 42_000_000n);
    expect((await db.prisma.chainTransaction.findUniqueOrThrow({ where: { txHash } })).status).to.equal("mined");
    // The client retries its request with the key it had sent: it gets that transaction, no second mint.
    const retry = await faucet({ amount: 42 }, key);
    expect(retry.status, retry.text).to.equal(200);
    expect(retry.body.data.txHash).to.equal(txHash);
    expect(await balanceOf(wallet)).to.equal(before + 42_000_000n);
  });

  it("a transaction the node refuses (the paying account out of gas money): 503, recorded failed, and nothing stuck once funded", async () => {
    const payer = new Wallet(DEPLOYER_KEY).address;
    const funds = await chain.provider.getBalance(payer);
    const key = randomUUID();
    await chain.provider.send("hardhat_setBalance", [payer, "0x1"]);
    let refused: ApiResponse;
    try {
      refused = await faucet({ amount: 3 }, key);
    } finally {
      await chain.provider.send("hardhat_setBalance", [payer, toQuantity(funds)]);
    }
    expectErrorEnvelope(refused, 503, "SERVICE_UNAVAILABLE");
    expect(refused.body.error.message).to.match(/new Idempotency-Key/);
    const row = await db.prisma.chainTransaction.findFirstOrThrow({ where: { userId, idempotencyKey: key } });
    expect(row.status).to.equal("failed");
    // Its nonce was never used and its filler was refused too: the next transaction fills the gap.
    const before = await balanceOf(wallet);
    const next = await faucet({ amount: 4 });
    expect(next.status, next.text).to.equal(200);
    expect(await balanceOf(wallet)).to.equal(before + 4_000_000n);
    const again = await faucet({ amount: 3 }, key);
    expectErrorEnvelope(again, 503, "SERVICE_UNAVAILABLE");
    expect(await balanceOf(wallet)).to.equal(before + 4_000_000n);
  });

  it("decodes a revert found before sending into the contract's custom error, and records nothing", async () => {
    const stranger = new Wallet(Wallet.createRandom().privateKey, chain.provider);
    await (await (await chain.signer(0)).sendTransaction({ to: stranger.address, value: 10n ** 18n })).wait();
    const sender = createTransactionSender({
      repo: createTransactionsRepo({ db, chainId: chain.deployment.chainId, sender: stranger.address.toLowerCase() }),
      provider: chain.provider,
      chainId: chain.deployment.chainId,
      account: stranger,
      errors: platformErrors(),
      forwarder: platformContract(chain.deployment, "forwarder", chain.provider),
    });
    const usdc = platformContract(chain.deployment, "usdc", chain.provider);
    const before = await db.prisma.chainTransaction.count();
    let caught: unknown;
    await sender
      .send({
        purpose: "test.unauthorised-mint",
        to: await usdc.getAddress(),
        data: usdc.interface.encodeFunctionData("mint", [wallet, 1n]),
      })
      .catch((error) => {
        caught = error;
      });
    expect(caught).to.be.instanceOf(TransactionRevertedError);
    expect((caught as TransactionRevertedError).revert?.name).to.equal("AccessControlUnauthorizedAccount");
    expect(await db.prisma.chainTransaction.count()).to.equal(before);
  });

  it("adds yield to the vault through POST /dev/vault/yield, refused while nobody holds tmUSDC, replayed on retry", async () => {
    const yieldOf = (amount: unknown, key = randomUUID()) =>
      api.request("POST", "/dev/vault/yield", { body: { amount }, headers: { "idempotency-key": key } });
    const yieldTransactions = () => db.prisma.chainTransaction.count({ where: { purpose: { startsWith: "sandbox.yield." } } });
    expect((await chain.contracts.vault.totalSupply()) as bigint).to.equal(0n);
    expectErrorEnvelope(await yieldOf(10), 409, "CONFLICT");
    expect(await yieldTransactions()).to.equal(0);

    await deposit(chain, await chain.signer(3), usdc(1_000));
    const key = randomUUID();
    const first = await yieldOf(10, key);
    expect(first.status, first.text).to.equal(200);
    const rate = (await chain.contracts.vault.exchangeRate()) as bigint;
    expect(first.body.data).to.deep.include({ totalYield: "10.00", newExchangeRate: Number(formatUnits(rate, 18)) });
    expect(await yieldTransactions()).to.equal(3); // mint, approve, distribute
    const retry = await yieldOf(10, key);
    expect(retry.text).to.equal(first.text);
    expect((await chain.contracts.vault.totalYield()) as bigint).to.equal(usdc(10));
    expect(await yieldTransactions()).to.equal(3);

    // The yield is locked and unlocks over the vault's period (D-95): the rate rises with the clock.
    expect((await chain.contracts.vault.lockedProfit()) as bigint).to.be.above(0n);
    expect((await api.request("POST", "/dev/time/advance", { body: { seconds: 7 * 86_400 } })).status).to.equal(200);
    expect((await api.request("GET", "/v1/vault/status")).body.data.exchangeRate).to.be.above(first.body.data.newExchangeRate);
  });
});
