import { expect } from "chai";
import type { Indexer } from "../../indexer/indexer.js";
import { deposit, distributeYield, everyKindOfActivity, redeem, socialVaultActivity } from "../helpers/activity.js";
import { startTestChain, type TestChain, usdc } from "../helpers/chain.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { cleanReindex, dumpMirror, testIndexer, waitForHead } from "../helpers/mirror.js";

describe("indexer: reorganisations", function () {
  this.timeout(120_000);
  let chain: TestChain;
  let db: TestDatabase;
  let indexer: Indexer | undefined;

  beforeEach(async () => {
    chain = await startTestChain();
    db = await createTestDatabase();
    await everyKindOfActivity(chain, { depositor: 1, borrower: 2, vaultOwner: 3, guardian: 4 });
  });

  afterEach(async () => {
    await indexer?.stop();
    await db?.destroy();
    await chain?.close();
  });

  it("replaces the last blocks seen live: the mirror and the outbox equal a clean re-index", async () => {
    indexer = testIndexer(db, chain);
    indexer.start();
    const forkBlock = await waitForHead(db, chain);
    const snapshot = await chain.snapshot();

    // Old branch: >= 3 blocks of deposits, a redemption and a social vault, all mirrored.
    await deposit(chain, await chain.signer(5), usdc(700));
    await redeem(chain, await chain.signer(1), usdc(100) * 10n ** 12n);
    await socialVaultActivity(chain, await chain.signer(6), await (await chain.signer(7)).getAddress());
    const oldHead = await waitForHead(db, chain);
    expect(oldHead - forkBlock).to.be.at.least(3);
    const oldBranch = await dumpMirror(db);

    // New branch from the fork: other transactions, more blocks than the old branch had.
    await chain.revert(snapshot);
    await deposit(chain, await chain.signer(8), usdc(333));
    await distributeYield(chain, usdc(20));
    await socialVaultActivity(chain, await chain.signer(9), await (await chain.signer(5)).getAddress());
    await chain.mine(3);
    await waitForHead(db, chain);

    const mirrored = await dumpMirror(db);
    expect(mirrored).to.deep.equal(await cleanReindex(chain));
    expect(mirrored).to.not.deep.equal(oldBranch);
    const replaced = await db.prisma.vaultTransaction.count({
      where: { owner: (await (await chain.signer(5)).getAddress()).toLowerCase() },
    });
    expect(replaced, "the old branch's deposit is gone").to.equal(0);
  });

  it("notices at start that the blocks it indexed before stopping were replaced", async () => {
    indexer = testIndexer(db, chain);
    indexer.start();
    const forkBlock = await waitForHead(db, chain);
    const snapshot = await chain.snapshot();
    await deposit(chain, await chain.signer(5), usdc(700));
    await distributeYield(chain, usdc(10));
    const oldHead = await waitForHead(db, chain);
    expect(oldHead - forkBlock).to.be.at.least(3);
    await indexer.stop();

    await chain.revert(snapshot);
    await socialVaultActivity(chain, await chain.signer(9), await (await chain.signer(5)).getAddress());
    await deposit(chain, await chain.signer(8), usdc(50));

    indexer = testIndexer(db, chain);
    indexer.start();
    await waitForHead(db, chain);
    expect(await dumpMirror(db)).to.deep.equal(await cleanReindex(chain));
    const events = await db.prisma.domainEvent.findMany({ where: { type: "vault.yield_distributed" } });
    expect(
      events.map((e) => (e.data as { totalYield: string }).totalYield),
      "the replaced distribution's event is gone",
    ).to.deep.equal(["50.00"]);
  });
});
