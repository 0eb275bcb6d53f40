// The relay across a reorganisation (#42, D-90), on the embedded chain with evm_snapshot and
// evm_revert as a testnet developer uses them: the service's transactions the reorganisation
// removed (a user's first deposit, with the permit that granted the vault its allowance) are
// broadcast again as they were, their facts come back under their ids, and the user's next
// write signs at the nonce the chain expects instead of being skipped for good.
import { expect } from "chai";
import { createLogger } from "../../core/logger.js";
import { startPlatformWorkers } from "../../worker/jobs.js";
import type { Workers } from "../../worker/scheduler.js";
import type { TestApi } from "../helpers/api.js";
import type { TestChain } from "../helpers/chain.js";
import { type TestDatabase, usingPostgres } from "../helpers/database.js";
import { expectErrorEnvelope } from "../helpers/envelope.js";
import { waitFor, waitForHead } from "../helpers/mirror.js";
import { type MoneyStack, newTestUser, postWithKey, startMoneyStack } from "../helpers/money-stack.js";

describe(`the relay across a reorganisation (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(180_000);
  let stack: MoneyStack | undefined;
  let chain: TestChain;
  let db: TestDatabase;
  let api: TestApi;
  let workers: Workers;

  before(async () => {
    stack = await startMoneyStack();
    ({ chain, db, api } = stack);
    workers = startPlatformWorkers({ services: api.services, clock: api.clock, logger: createLogger("silent"), tickMs: 100 });
  });
  after(async () => {
    await workers?.stop();
    await stack?.close();
  });

  const sharesOf = async (wallet: string) => (await chain.contracts.vault.balanceOf(wallet)) as bigint;
  const positionOf = async (token: string) => (await api.request("GET", "/v1/vault/position", { token })).body.data.usdcValue as string;

  it("brings back a user's removed deposit and its permit, and the user's next write goes through", async () => {
    const user = await newTestUser(api, "reorged", 50);
    // The sandbox's reorganisation, as an app developer drives it: a fork point, then the reorganisation.
    const fork = await api.request("POST", "/dev/chain/snapshot");
    expect(fork.status, fork.text).to.equal(200);
    const key = crypto.randomUUID();
    const first = await postWithKey(api, "/v1/vault/deposit", user.token, { amount: 20 }, key);
    expect(first.status, first.text).to.equal(200);
    const removedTx = first.body.data.txHash as string;
    expect(await sharesOf(user.wallet)).to.be.above(0n);
    // The permit that granted the vault its allowance and the batch: both dropped.
    const reorg = await api.request("POST", "/dev/chain/reorg", { body: { snapshotId: fork.body.data.snapshotId } });
    expect(reorg.status, reorg.text).to.equal(200);
    expect(reorg.body.data).to.deep.include({ forkBlock: fork.body.data.blockNumber, removedBlocks: 2 });
    expect(reorg.body.data.head).to.equal(fork.body.data.blockNumber + 3);
    expectErrorEnvelope(
      await api.request("POST", "/dev/chain/reorg", { body: { snapshotId: fork.body.data.snapshotId } }),
      400,
      "VALIDATION_ERROR",
    );

    // The job broadcasts the removed permit and batch again, as they were: the deposit is back.
    await waitFor(async () => ((await sharesOf(user.wallet)) > 0n ? true : undefined), 30_000, "the removed deposit back on chain");
    const again = await chain.provider.getTransactionReceipt(removedTx);
    expect(again?.status, "the same transaction, mined again").to.equal(1);
    await waitForHead(db, chain);
    await waitFor(async () => ((await positionOf(user.token)) === "20.00" ? true : undefined), 20_000, "the mirror follows");

    // Before (#42): this deposit was signed at forwarder nonce 1 while the chain was back at 0,
    // skipped by the forwarder and answered 503, and so was every later one.
    const next = await postWithKey(api, "/v1/vault/deposit", user.token, { amount: 10 });
    expect(next.status, next.text).to.equal(200);
    expect(await positionOf(user.token)).to.equal("30.00");
    const onChain = (await chain.contracts.vault.convertToAssets(await sharesOf(user.wallet))) as bigint;
    expect(onChain).to.equal(30_000_000n);
    // The first request's key replays its answer, whose transaction the chain holds again.
    const replay = await postWithKey(api, "/v1/vault/deposit", user.token, { amount: 20 }, key);
    expect(replay.status).to.equal(200);
    expect(replay.body.data.txHash).to.equal(removedTx);
    // No nonce of the paying account was filled with an empty transfer: nothing waited on a gap.
    const requests = await db.prisma.relayedRequest.findMany({ where: { userId: user.id }, orderBy: { forwarderNonce: "asc" } });
    expect(requests.map((request) => [request.forwarderNonce, request.status])).to.deep.equal([
      [0n, "executed"],
      [1n, "executed"],
    ]);
  });

  it("lets the first write after a reorganisation bring the removed transactions back itself, before the job does", async () => {
    await workers.stop();
    try {
      const user = await newTestUser(api, "reorged-writer", 50);
      const fork = await chain.snapshot();
      expect((await postWithKey(api, "/v1/vault/deposit", user.token, { amount: 20 })).status).to.equal(200);
      await chain.revert(fork);
      await chain.mine(3);
      // No job runs: the next write's batch broadcasts the lower, removed nonces first, then its own.
      const next = await postWithKey(api, "/v1/vault/deposit", user.token, { amount: 5 });
      expect(next.status, next.text).to.equal(200);
      const onChain = (await chain.contracts.vault.convertToAssets(await sharesOf(user.wallet))) as bigint;
      expect(onChain).to.equal(25_000_000n);
    } finally {
      workers = startPlatformWorkers({ services: api.services, clock: api.clock, logger: createLogger("silent"), tickMs: 100 });
    }
  });

  it("keeps a fact that comes back behind another log as the same fact: one event under its id, nothing given twice (D-91)", async () => {
    await workers.stop();
    try {
      const user = await newTestUser(api, "moved", 50);
      const outsider = await chain.signer(7);
      await (await chain.contracts.usdc.mint(await outsider.getAddress(), 1_000_000n)).wait();
      const fork = await chain.snapshot();
      const deposit = await postWithKey(api, "/v1/vault/deposit", user.token, { amount: 20 });
      expect(deposit.status, deposit.text).to.equal(200);
      const txHash = deposit.body.data.txHash as string;
      const before = await chain.provider.getTransactionReceipt(txHash);
      const factsOf = async () =>
        db.prisma.domainEvent.findMany({
          where: { data: { path: ["txHash"], equals: txHash }, revertedAt: null },
          select: { id: true, type: true },
          orderBy: { id: "asc" },
        });
      const facts = await waitFor(async () => ((await factsOf()).length > 0 ? factsOf() : undefined), 20_000, "the deposit's facts");
      // What the user sees of the deposit; its time is the new block's.
      const seen = async () => ({
        transactions: (await api.request("GET", "/v1/vault/transactions", { token: user.token })).body.data.map(
          ({ timestamp: _, ...rest }: Record<string, unknown>) => rest,
        ),
        activity: (await api.request("GET", "/v1/users/me/activity", { token: user.token })).body.data,
        xp: (await api.request("GET", `/v1/users/${user.id}/xp`, { token: user.token })).body.data,
        notifications: (await api.request("GET", "/v1/notifications", { token: user.token })).body.data,
      });
      const shown = await seen();
      expect(shown.transactions).to.have.length(1);

      // The reorganisation removes the permit and the batch; the mirror marks their facts reverted.
      await chain.revert(fork);
      await chain.mine(3);
      await waitFor(async () => ((await factsOf()).length === 0 ? true : undefined), 20_000, "the facts reverted");

      // They come back in one block behind another wallet's USDC transfer, paid a higher tip.
      await chain.setAutomine(false);
      const restoring = api.services.relay!.restore();
      await waitFor(async () => ((await chain.provider.getTransaction(txHash)) ? true : undefined), 20_000, "the batch broadcast again");
      const other = chain.contracts.usdc.connect(outsider) as typeof chain.contracts.usdc;
      await other.transfer(user.wallet, 1n, { maxPriorityFeePerGas: 10n ** 11n, maxFeePerGas: 10n ** 12n });
      await chain.mine(1);
      await chain.setAutomine(true);
      await restoring;
      const after = await chain.provider.getTransactionReceipt(txHash);
      expect(after?.blockNumber, "in another block").to.not.equal(before?.blockNumber);
      expect(after!.logs.map((log) => log.index)).to.not.deep.equal(before!.logs.map((log) => log.index));
      await waitForHead(db, chain);

      // Before (#42) the facts came back under new ids as new facts: events, activity and
      // notifications twice, and the transaction listed twice under a new id.
      expect(
        await waitFor(async () => ((await factsOf()).length === facts.length ? factsOf() : undefined), 20_000, "the facts back"),
      ).to.deep.equal(facts);
      expect(await seen()).to.deep.equal(shown);
    } finally {
      await chain.setAutomine(true);
      workers = startPlatformWorkers({ services: api.services, clock: api.clock, logger: createLogger("silent"), tickMs: 100 });
    }
  });

  describe("replays tell the truth (D-92)", () => {
    // No job runs: the replay alone must find out what the chain holds.
    beforeEach(async () => workers.stop());
    afterEach(() => {
      workers = startPlatformWorkers({ services: api.services, clock: api.clock, logger: createLogger("silent"), tickMs: 100 });
    });
    const heldOf = async (wallet: string) => (await chain.contracts.vault.convertToAssets(await sharesOf(wallet))) as bigint;

    it("runs a key whose deposit a reorganisation removed again: the same transaction, back on chain, not a memory of it", async () => {
      const user = await newTestUser(api, "replayed", 50);
      const fork = await chain.snapshot();
      const key = crypto.randomUUID();
      const first = await postWithKey(api, "/v1/vault/deposit", user.token, { amount: 20 }, key);
      expect(first.status, first.text).to.equal(200);
      await chain.revert(fork);
      await chain.mine(3);
      expect(await heldOf(user.wallet)).to.equal(0n);

      // Before (#42): 200 Idempotent-Replayed with the removed txHash and newBalance "20.00"; the chain held 0.
      const replay = await postWithKey(api, "/v1/vault/deposit", user.token, { amount: 20 }, key);
      expect(replay.status, replay.text).to.equal(200);
      expect(replay.body.data.txHash).to.equal(first.body.data.txHash);
      expect((await chain.provider.getTransactionReceipt(replay.body.data.txHash))?.status, "held by the chain").to.equal(1);
      expect(await heldOf(user.wallet)).to.equal(20_000_000n);
      expect(replay.body.data.newBalance).to.equal("20.00");
      // Once more: the answer kept again, and the chain's.
      const again = await postWithKey(api, "/v1/vault/deposit", user.token, { amount: 20 }, key);
      expect(again.headers.get("idempotent-replayed")).to.equal("true");
      expect(again.body).to.deep.equal(replay.body);
      expect(await heldOf(user.wallet)).to.equal(20_000_000n);
    });

    it("runs it anew when the removed request can no longer run (its deadline passed): once, under the same key", async () => {
      const user = await newTestUser(api, "expired", 50);
      const fork = await chain.snapshot();
      const key = crypto.randomUUID();
      const first = await postWithKey(api, "/v1/vault/deposit", user.token, { amount: 20 }, key);
      expect(first.status, first.text).to.equal(200);
      await chain.revert(fork);
      // The new branch is more than an hour later: the removed permit and request are past their deadlines.
      await chain.provider.send("evm_increaseTime", [3_700]);
      await chain.mine(1);

      const replay = await postWithKey(api, "/v1/vault/deposit", user.token, { amount: 20 }, key);
      expect(replay.status, replay.text).to.equal(200);
      expect(replay.body.data.txHash, "a new transaction").to.not.equal(first.body.data.txHash);
      expect((await chain.provider.getTransactionReceipt(replay.body.data.txHash))?.status).to.equal(1);
      expect(await heldOf(user.wallet), "deposited once").to.equal(20_000_000n);
      expect(replay.body.data.newBalance).to.equal("20.00");
      const requests = await db.prisma.relayedRequest.findMany({ where: { userId: user.id }, orderBy: { createdAt: "asc" } });
      expect(requests.map((request) => [request.forwarderNonce, request.status])).to.deep.equal([
        [0n, "skipped"],
        [0n, "executed"],
      ]);
      // The key now answers with the new transaction, and the user's next write goes through.
      const again = await postWithKey(api, "/v1/vault/deposit", user.token, { amount: 20 }, key);
      expect(again.body.data.txHash).to.equal(replay.body.data.txHash);
      expect((await postWithKey(api, "/v1/vault/deposit", user.token, { amount: 5 })).status).to.equal(200);
      expect(await heldOf(user.wallet)).to.equal(25_000_000n);
    });
  });
});
