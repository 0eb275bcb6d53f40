// The embedded chain is new at every start: the rows a database took from the old one are reset
// (core/chain-identity.ts), every one of them, so a fact of the new chain at the same block and
// log index cannot collide with the old chain's.
import { expect } from "chai";
import { ensureChainIdentity } from "../../core/chain-identity.js";
import type { Deployment } from "../../core/deployments.js";
import { createLogger } from "../../core/logger.js";
import { CHAIN_DERIVED_TABLES } from "../../domain/modules.js";
import { LOG_TABLES } from "../../indexer/store.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";

const deployment = (genesisHash: string): Deployment => ({
  chainId: 31337,
  genesisHash,
  deployer: "0x0000000000000000000000000000000000000001",
  deployedAt: "2026-06-01T00:00:00.000Z",
  contracts: {},
});

describe(`the embedded chain's reset (${usingPostgres ? "PostgreSQL" : "PGlite"})`, () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase();
  });
  after(async () => {
    await db?.destroy();
  });

  it("clears every table keyed by the chain (all with a chainId column), so the new chain's first payment event is written", async () => {
    const logger = createLogger("silent");
    await ensureChainIdentity(db, deployment("0xaaaa"), { embedded: true, logger, chainTables: CHAIN_DERIVED_TABLES });
    const paymentEvent = (txHash: string) =>
      db.sql.query(
        `INSERT INTO "PaymentChainEvent" ("chainId", "blockNumber", "logIndex", "txHash", "kind", "ref", "payer", "merchant", "amount", "paymentAmount", "fee", "totalRefunded", "timestamp")
         VALUES (31337, 5, 0, $1, 'paid', '0x01', '0x02', '0x03', 1, 1, 0, 0, now())`,
        [txHash],
      );
    await paymentEvent("0xold");
    // npm start again on the same DATA_DIR: a new embedded chain.
    await ensureChainIdentity(db, deployment("0xbbbb"), { embedded: true, logger, chainTables: CHAIN_DERIVED_TABLES });
    await paymentEvent("0xnew");

    // Every table with a chainId column is reset, but the identity itself (upserted) and the
    // outbox, whose chain events have their own delete.
    const { rows } = await db.sql.query<{ table: string }>(
      `SELECT table_name AS "table" FROM information_schema.columns
        WHERE column_name = 'chainId' AND table_schema = current_schema() AND table_name NOT IN ('ChainIdentity', 'DomainEvent', '_prisma_migrations')`,
    );
    expect(rows.map((row) => row.table).filter((table) => !(CHAIN_DERIVED_TABLES as readonly string[]).includes(table))).to.deep.equal([]);
  });

  it("a reorganisation trims every table keyed by block (the indexer's LOG_TABLES: every table with a blockNumber column but the cursor, the outbox and the sent transactions)", async () => {
    const { rows } = await db.sql.query<{ table: string }>(
      `SELECT table_name AS "table" FROM information_schema.columns
        WHERE column_name = 'blockNumber' AND table_schema = current_schema()
          AND table_name NOT IN ('IndexerCursor', 'DomainEvent', 'ChainTransaction')`,
    );
    expect(rows.map((row) => row.table).sort()).to.deep.equal([...LOG_TABLES].sort());
  });
});
