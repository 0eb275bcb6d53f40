import { expect } from "chai";
import { ensureChainIdentity } from "../../core/chain-identity.js";
import { createSharedClock, type SharedClock } from "../../core/clock.js";
import { openDatabase } from "../../core/db.js";
import type { Deployment } from "../../core/deployments.js";
import { createLogger } from "../../core/logger.js";
import { CHAIN_DERIVED_TABLES } from "../../domain/modules.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";
import { until } from "../helpers/waiting.js";

const HOUR_MS = 3_600_000;
const FIXED_NOW = Date.parse("2026-06-01T00:00:00.000Z");

describe(`shared service clock (${usingPostgres ? "PostgreSQL" : "PGlite"})`, () => {
  let db: TestDatabase;
  const clocks: SharedClock[] = [];
  const clock = async (database: Parameters<typeof createSharedClock>[0] = db) => {
    const created = await createSharedClock(database, { refreshMs: 10, base: () => FIXED_NOW });
    clocks.push(created);
    return created;
  };

  // One database for the suite (each in-memory PGlite is a WebAssembly instance; fewer is kinder
  // to V8, see docs/decisions.md "Test runs and PGlite"), the shared offset cleared between tests.
  before(async () => {
    db = await createTestDatabase();
  });
  afterEach(async () => {
    for (const c of clocks.splice(0)) c.stop();
    await db.sql.query(`DELETE FROM "ServiceClock"`);
  });
  after(async () => {
    await db?.destroy();
  });

  it("starts at real time, and an advance made through one clock reaches the others", async () => {
    const api = await clock();
    const worker = await clock();
    expect(api.now().getTime()).to.equal(FIXED_NOW);
    await api.advance(3_600);
    expect(api.now().getTime()).to.equal(FIXED_NOW + HOUR_MS);
    await until(() => worker.now().getTime() === FIXED_NOW + HOUR_MS, "the worker's clock to follow");
    expect(worker.nowSeconds()).to.equal(Math.floor((FIXED_NOW + HOUR_MS) / 1000));
    // A clock created later (a restarted process) starts where the deployment is.
    expect((await clock()).offsetSeconds()).to.equal(3_600);
  });

  it("counts concurrent advances from two processes both", async () => {
    const a = await clock();
    const b = await clock();
    await Promise.all([a.advance(60), b.advance(120), a.advance(30)]);
    await until(() => a.offsetSeconds() === 210 && b.offsetSeconds() === 210, "both clocks at +210 s");
  });

  // PGlite lives in one process: the cases above are the whole story there.
  if (usingPostgres) {
    it("reaches a process with its own connection to the same PostgreSQL database", async () => {
      const other = await openDatabase({ databaseUrl: db.url! });
      try {
        const api = await clock();
        const worker = await clock(other);
        await api.advance(86_400);
        await until(() => worker.offsetSeconds() === 86_400, "the other connection's clock");
      } finally {
        for (const c of clocks.splice(0)) c.stop();
        await other.close();
      }
    });
  }

  it("is reset with the other chain-derived rows when a new embedded chain replaces the old one", async () => {
    const deployment = (genesisHash: string): Deployment => ({
      chainId: 31337,
      genesisHash,
      deployer: "0x0000000000000000000000000000000000000001",
      deployedAt: new Date(FIXED_NOW).toISOString(),
      contracts: {},
    });
    const logger = createLogger("silent");
    await ensureChainIdentity(db, deployment("0xaaaa"), { embedded: true, logger, chainTables: CHAIN_DERIVED_TABLES });
    await (await clock()).advance(600);
    expect((await clock()).offsetSeconds()).to.equal(600);
    // npm start with the embedded chain: a new chain (new genesis) at every start.
    await ensureChainIdentity(db, deployment("0xbbbb"), { embedded: true, logger, chainTables: CHAIN_DERIVED_TABLES });
    expect((await clock()).offsetSeconds()).to.equal(0);
  });
});
