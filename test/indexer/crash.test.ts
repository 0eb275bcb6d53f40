import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { type Database, openDatabase } from "../../core/db.js";
import { deposit, everyKindOfActivity } from "../helpers/activity.js";
import { startTestChain, type TestChain, usdc } from "../helpers/chain.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";
import { cleanReindex, dumpMirror, waitFor, waitForHead } from "../helpers/mirror.js";
import { type StackProcess, startStack } from "../helpers/stack.js";

/** Keeps the rows of a dump at or below `block`: what a consistent mirror up to that block holds. */
function upTo(dump: Record<string, unknown[]>, block: number) {
  return {
    ChainLog: dump.ChainLog!.filter((row) => (row as { blockNumber: number }).blockNumber <= block),
    DomainEvent: dump.DomainEvent!.filter((row) => (row as { blockNumber: number }).blockNumber <= block),
  };
}

/**
 * One indexer process over the database: `npm run indexer` on PostgreSQL; on PGlite (one
 * process owns its directory) a child running the same indexer on that directory.
 */
function indexerProcess(chain: TestChain, target: { url?: string; dataDir?: string }): StackProcess {
  const env = { CHAIN_RPC_URL: chain.rpcUrl, INDEXER_MAX_BLOCK_RANGE: "1", INDEXER_POLL_MS: "20", LOG_LEVEL: "warn" };
  return target.url
    ? startStack({ ...env, DATABASE_URL: target.url }, "indexer")
    : startStack({ ...env, DATA_DIR: target.dataDir }, "test/helpers/indexer-process.ts");
}

describe(`indexer: crash safety (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(180_000);
  let chain: TestChain;
  let db: TestDatabase | undefined;
  const children: StackProcess[] = [];

  before(async () => {
    chain = await startTestChain();
    await everyKindOfActivity(chain, { depositor: 1, borrower: 2, vaultOwner: 3, guardian: 4 });
    for (let i = 0; i < 40; i += 1) await deposit(chain, await chain.signer(5 + (i % 10)), usdc(10 + i));
  });

  after(async () => {
    for (const child of children) await child.stop("SIGKILL");
    await db?.destroy();
    await chain?.close();
  });

  it("SIGKILL in the middle of a backfill, then a restart: no row or event missing or repeated", async () => {
    const head = await chain.provider.getBlockNumber();
    const expected = await cleanReindex(chain, { maxBlockRange: 10_000 });
    const dataDir = path.join(mkdtempSync(path.join(os.tmpdir(), "indexer-crash-")), "pglite");
    db = usingPostgres ? await createTestDatabase() : undefined;
    const target = { url: db?.url, dataDir: path.dirname(dataDir) };

    const cursorOf = async (database: Database) => {
      const { rows } = await database.sql.query<{ blockNumber: number }>(`SELECT "blockNumber" FROM "IndexerCursor"`);
      return rows[0] ? Number(rows[0].blockNumber) : -1;
    };
    const first = indexerProcess(chain, target);
    children.push(first);
    await first.ready();
    const start = chain.deployment.contracts.stakingVault!.blockNumber;
    const killAt = start + Math.floor((head - start) / 3);
    if (db) {
      await waitFor(async () => (await cursorOf(db!)) >= killAt, 60_000, "the backfill to pass a third");
    } else {
      await waitFor(
        async () =>
          first
            .output()
            .match(/indexed (\d+)/g)
            ?.some((line) => Number(line.slice(8)) >= killAt),
        60_000,
        "a third",
      );
    }
    await first.stop("SIGKILL");

    // After the crash: the committed part is exactly a clean mirror up to the cursor.
    const crashed = db ?? (await openDatabase({ pgliteDataDir: dataDir }));
    const cursor = await cursorOf(crashed);
    expect(cursor, "killed in the middle").to.be.within(killAt, head - 1);
    const partial = await dumpMirror(crashed);
    expect({ ChainLog: partial.ChainLog, DomainEvent: partial.DomainEvent }).to.deep.equal(upTo(expected, cursor));
    if (!db) await crashed.close();

    const second = indexerProcess(chain, target);
    children.push(second);
    await second.ready();
    if (db) {
      await waitForHead(db, chain, 60_000);
    } else {
      await waitFor(async () => second.output().includes(`indexed ${head}\n`), 60_000, "the restart to reach the head");
      await second.stop("SIGTERM");
    }
    const final = db ?? (await openDatabase({ pgliteDataDir: dataDir }));
    expect(await dumpMirror(final)).to.deep.equal(expected);
    if (!db) await final.close();
  });
});
