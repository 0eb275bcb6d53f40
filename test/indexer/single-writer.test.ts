import { expect } from "chai";
import { deposit, distributeYield, everyKindOfActivity } from "../helpers/activity.js";
import { startTestChain, type TestChain, usdc } from "../helpers/chain.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";
import { cleanReindex, dumpMirror, testIndexer, waitFor, waitForHead } from "../helpers/mirror.js";
import { type StackProcess, startStack } from "../helpers/stack.js";

const WRITER = "indexer is the writer for this chain";
const STANDBY = "standing by to take over";

describe(`indexer: one writer per chain (${usingPostgres ? "PostgreSQL, two processes" : "PGlite, two indexers in one process"})`, function () {
  this.timeout(180_000);
  let chain: TestChain;
  let db: TestDatabase;
  const children: StackProcess[] = [];

  before(async () => {
    chain = await startTestChain();
    db = await createTestDatabase();
    await everyKindOfActivity(chain, { depositor: 1, borrower: 2, vaultOwner: 3, guardian: 4 });
  });

  after(async () => {
    for (const child of children) await child.stop("SIGKILL");
    await db?.destroy();
    await chain?.close();
  });

  if (usingPostgres) {
    it("one process writes, the other waits and takes over within seconds when the writer is killed", async () => {
      const env = { CHAIN_RPC_URL: chain.rpcUrl, DATABASE_URL: db.url, LOG_LEVEL: "info", INDEXER_POLL_MS: "20" };
      const a = startStack(env, "indexer");
      children.push(a);
      await a.ready();
      await waitFor(async () => a.output().includes(WRITER), 30_000, "the first process to become the writer");
      const b = startStack(env, "indexer");
      children.push(b);
      await b.ready();
      await waitFor(async () => b.output().includes(STANDBY), 30_000, "the second process to stand by");
      await waitForHead(db, chain);
      await deposit(chain, await chain.signer(6), usdc(123));
      await waitForHead(db, chain);
      expect(b.output(), "the standby never wrote").to.not.include(WRITER);

      await a.stop("SIGKILL");
      const killedAt = Date.now();
      await waitFor(async () => b.output().includes(WRITER), 15_000, "the standby to take over");
      const takeoverMs = Date.now() - killedAt;
      expect(takeoverMs).to.be.below(5_000);
      console.log(`        (takeover ${takeoverMs} ms after SIGKILL)`);

      await deposit(chain, await chain.signer(7), usdc(77));
      await distributeYield(chain, usdc(5));
      await waitForHead(db, chain);
      expect(await dumpMirror(db)).to.deep.equal(await cleanReindex(chain));
    });
  } else {
    it("one indexer writes, the other waits and takes over when the writer stops", async () => {
      const a = testIndexer(db, chain);
      const b = testIndexer(db, chain);
      try {
        a.start();
        await waitForHead(db, chain);
        b.start();
        await deposit(chain, await chain.signer(6), usdc(123));
        await waitForHead(db, chain);
        expect(b.status().indexedBlock, "the standby never wrote").to.equal(-1);

        await a.stop();
        await waitFor(async () => b.status().indexedBlock >= 0, 5_000, "the standby to take over");
        await deposit(chain, await chain.signer(7), usdc(77));
        await distributeYield(chain, usdc(5));
        await waitForHead(db, chain);
        expect(await dumpMirror(db)).to.deep.equal(await cleanReindex(chain));
      } finally {
        await a.stop();
        await b.stop();
      }
    });
  }
});
