import { expect } from "chai";
import { createLogger } from "../../core/logger.js";
import { attachIndexer, createMirrorWait } from "../../domain/transactions/read-your-writes.js";
import { createIndexer, type Indexer } from "../../indexer/indexer.js";
import { deposit } from "../helpers/activity.js";
import { startTestChain, type TestChain, usdc } from "../helpers/chain.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { waitForHead } from "../helpers/mirror.js";

// Read-your-writes in one process (D-62): a write's wait wakes the indexer, which otherwise looks
// at the head once per poll interval, and the indexer's commit releases the wait.
describe("indexer: woken by a write's wait", function () {
  this.timeout(120_000);
  let chain: TestChain;
  let db: TestDatabase;
  let indexer: Indexer;

  before(async () => {
    chain = await startTestChain();
    db = await createTestDatabase();
    indexer = createIndexer({
      db,
      rpcUrl: chain.rpcUrl,
      deployment: chain.deployment,
      logger: createLogger(process.env.TEST_LOG_LEVEL ?? "silent"),
      confirmations: 0,
      // Once caught up, it would not look at the head again within this test's time unless woken.
      pollMs: 60_000,
      maxBlockRange: 1_000,
    });
    indexer.start();
    await waitForHead(db, chain);
  });

  after(async () => {
    await indexer?.stop();
    await db?.destroy();
    await chain?.close();
  });

  it("indexes a new block at once when a write waits for it, and the commit releases the wait", async () => {
    const mirror = createMirrorWait({ db, chainId: chain.deployment.chainId, timeoutMs: 30_000 });
    const detach = attachIndexer(mirror, indexer);
    try {
      for (let round = 0; round < 3; round += 1) {
        const txHash = await deposit(chain, await chain.signer(1 + round), usdc(10));
        const receipt = (await chain.provider.getTransactionReceipt(txHash))!;
        expect(await mirror.untilIndexed(receipt.blockNumber)).to.equal(true);
        // The mirror holds the write when the wait ends.
        const { rows } = await db.sql.query<{ n: number }>(`SELECT count(*)::int AS "n" FROM "VaultTransaction" WHERE "txHash" = $1`, [
          txHash,
        ]);
        expect(rows[0]!.n).to.equal(1);
        expect(indexer.status().indexedBlock).to.be.at.least(receipt.blockNumber);
      }
    } finally {
      detach();
    }
  });

  it("without a wait to wake it, a caught-up indexer keeps to its poll interval", async () => {
    const before = indexer.status().indexedBlock;
    const txHash = await deposit(chain, await chain.signer(5), usdc(10));
    const block = (await chain.provider.getTransactionReceipt(txHash))!.blockNumber;
    // Nothing woke it: it is still asleep below the new blocks (this is what the wake saves).
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(indexer.status().indexedBlock).to.equal(before);
    expect(block).to.be.greaterThan(before);
    indexer.wake();
    await waitForHead(db, chain);
    expect(indexer.status().indexedBlock).to.be.at.least(block);
  });
});
