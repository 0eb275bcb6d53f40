import { expect } from "chai";
import { createClock } from "../../core/clock.js";
import { loadConfig } from "../../core/config.js";
import { createLogger } from "../../core/logger.js";
import { servicesFromConfig } from "../../domain/services.js";
import type { Indexer } from "../../indexer/indexer.js";
import { startPlatformWorkers } from "../../worker/jobs.js";
import { deposit } from "../helpers/activity.js";
import { startTestChain, type TestChain, usdc } from "../helpers/chain.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { testIndexer, waitFor } from "../helpers/mirror.js";

describe("indexer: mirror", function () {
  this.timeout(60_000);
  let chain: TestChain;
  let db: TestDatabase;
  let indexer: Indexer;

  before(async () => {
    chain = await startTestChain();
    db = await createTestDatabase();
    indexer = testIndexer(db, chain);
    indexer.start();
  });

  after(async () => {
    await indexer?.stop();
    await db?.destroy();
    await chain?.close();
  });

  it("mirrors a deposit made by a wallet directly on the vault and records its domain event", async () => {
    const wallet = await chain.signer(3);
    const address = (await wallet.getAddress()).toLowerCase();
    await db.prisma.user.create({
      data: {
        id: "user-direct",
        subject: "direct",
        displayName: "Direct",
        walletAddress: await wallet.getAddress(),
        createdAt: new Date(),
        updatedAt: new Date(),
      },
    });
    const txHash = await deposit(chain, wallet, usdc(250));
    const row = await waitFor(() => db.prisma.vaultTransaction.findFirst({ where: { txHash } }));
    expect(row.type).to.equal("deposit");
    expect(row.owner).to.equal(address);
    expect(row.assets).to.equal(usdc(250));
    expect(row.shares.toFixed()).to.equal((usdc(250) * 10n ** 12n).toString());

    const position = await db.prisma.vaultPosition.findUniqueOrThrow({
      where: { chainId_owner: { chainId: chain.deployment.chainId, owner: address } },
    });
    expect(position.shares.toFixed()).to.equal((usdc(250) * 10n ** 12n).toString());
    expect(position.costBasis).to.equal(usdc(250));

    const event = await waitFor(() => db.prisma.domainEvent.findFirst({ where: { type: "vault.deposit", userId: "user-direct" } }));
    expect(event.data).to.deep.include({ userId: "user-direct", usdcAmount: "250.00", tmUSDCReceived: "250.00", txHash });
    const transfers = await db.prisma.usdcTransfer.findMany({ where: { txHash } });
    expect(transfers).to.have.length(1);
    expect(transfers[0]!.to).to.equal(chain.deployment.contracts.stakingVault!.address.toLowerCase());
  });

  it("turns a wallet's chain facts into XP and Trust Score volume once, through the worker's outbox page jobs", async () => {
    const clock = createClock();
    const services = await servicesFromConfig(loadConfig({ NODE_ENV: "test" }), {
      db,
      clock: createClock(),
      processKind: "worker",
      cacheReads: false,
      wallets: { addressOf: () => expect.fail("no provisioning"), signerOf: () => expect.fail("no signing") },
    });
    const wallet = await chain.signer(4);
    await db.prisma.user.create({
      data: {
        id: "user-rewards",
        subject: "rewards",
        displayName: "Rewards",
        walletAddress: await wallet.getAddress(),
        createdAt: new Date(),
        updatedAt: new Date(),
      },
    });
    const txHash = await deposit(chain, wallet, usdc(1_500));
    await waitFor(() => db.prisma.domainEvent.findFirst({ where: { type: "vault.deposit", userId: "user-rewards" } }));

    // The worker's producer queues the rewards' and the Trust Score's pages, and its runner takes them.
    const workers = startPlatformWorkers({ services, clock, logger: createLogger("silent") });
    try {
      await waitFor(async () => ((await db.prisma.user.findUniqueOrThrow({ where: { id: "user-rewards" } })).xp === 20 ? true : undefined));
      await waitFor(async () =>
        (await db.prisma.trustScoreInput.findUnique({ where: { userId: "user-rewards" } }))?.peakHeldMicro === usdc(1_500)
          ? true
          : undefined,
      );
    } finally {
      await workers.stop();
    }
    const jobs = await db.prisma.job.findMany({ where: { kind: { in: ["outbox.rewards", "outbox.trust-score"] } } });
    expect(jobs.map((job) => [job.kind, job.status]).sort()).to.deep.include.members([
      ["outbox.rewards", "succeeded"],
      ["outbox.trust-score", "succeeded"],
    ]);
    const activity = await db.prisma.activity.findMany({ where: { userId: "user-rewards", type: "vault_deposit" } });
    expect(activity).to.have.length(1);
    const inputs = await db.prisma.trustScoreInput.findUniqueOrThrow({ where: { userId: "user-rewards" } });
    // The volume counts held money: the most the wallet held in the vault at once (D-88).
    expect(inputs.peakHeldMicro).to.equal(usdc(1_500));
    expect(txHash).to.match(/^0x/);

    // Again, and concurrently: nothing is applied twice.
    await Promise.all([services.rewards.drain(new Date()), services.rewards.drain(new Date())]);
    expect((await db.prisma.user.findUniqueOrThrow({ where: { id: "user-rewards" } })).xp).to.equal(20);
    expect((await db.prisma.trustScoreInput.findUniqueOrThrow({ where: { userId: "user-rewards" } })).peakHeldMicro).to.equal(usdc(1_500));
  });

  it("counts a deposit's volume to the micro-USDC: a sub-cent amount reaches the Trust Score exactly", async () => {
    const services = await servicesFromConfig(loadConfig({ NODE_ENV: "test" }), {
      db,
      clock: createClock(),
      processKind: "worker",
      cacheReads: false,
      wallets: { addressOf: () => expect.fail("no provisioning"), signerOf: () => expect.fail("no signing") },
    });
    const wallet = await chain.signer(5);
    await db.prisma.user.create({
      data: {
        id: "user-sub-cent",
        subject: "sub-cent",
        displayName: "Sub-cent",
        walletAddress: await wallet.getAddress(),
        createdAt: new Date(),
        updatedAt: new Date(),
      },
    });
    // 1.000001 USDC and 1.009999 USDC (the vault's minimum is 1): both two-decimal strings say 1.00.
    await deposit(chain, wallet, 1_000_001n);
    await deposit(chain, wallet, 1_009_999n);
    const events = await waitFor(async () => {
      const found = await db.prisma.domainEvent.findMany({ where: { type: "vault.deposit", userId: "user-sub-cent" } });
      return found.length === 2 ? found : undefined;
    });
    expect(events.map((e) => (e.data as { usdcAmount: string }).usdcAmount)).to.deep.equal(["1.00", "1.00"]);
    await services.rewards.drain(new Date());
    const inputs = await db.prisma.trustScoreInput.findUniqueOrThrow({ where: { userId: "user-sub-cent" } });
    expect(inputs.peakHeldMicro).to.equal(2_010_000n);
  });
});
