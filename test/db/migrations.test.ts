import { expect } from "chai";
import { openDatabase } from "../../core/db.js";
import { applyMigrations, diffMigrationsToSchema, readMigrationsList } from "../../core/migrations.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";

describe(`migrations (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(60_000);
  let db: TestDatabase;

  before(async () => {
    db = await createTestDatabase();
  });
  after(async () => {
    await db?.destroy();
  });

  it("schema.prisma and prisma/migrations agree (run `npm run db:new -- <name>` when this fails)", async () => {
    const scratch = await openDatabase({ pgliteDataDir: "memory://" });
    try {
      const drift = await diffMigrationsToSchema(scratch.migrationAdapter());
      expect(drift, `schema.prisma has changes no migration covers:\n${drift}`).to.equal("");
    } finally {
      await scratch.close();
    }
  });

  it("has no semicolon in a migration's comments (the schema engine splits statements at every one, on PostgreSQL)", () => {
    for (const directory of readMigrationsList().migrationDirectories) {
      const content = directory.migrationFile.content;
      const sql = content.tag === "ok" ? content.value : "";
      const commented = sql.split("\n").filter((line) => /^\s*--.*;/.test(line));
      expect(commented, directory.path).to.deep.equal([]);
    }
  });

  it("records every migration in Prisma's _prisma_migrations table", async () => {
    const rows = await db.prisma.$queryRawUnsafe<{ migration_name: string; finished_at: Date | null }[]>(
      `SELECT migration_name, finished_at FROM "_prisma_migrations" ORDER BY migration_name`,
    );
    const expected = readMigrationsList().migrationDirectories.map((entry) => entry.path);
    expect(rows.map((row) => row.migration_name)).to.deep.equal(expected);
    expect(rows.every((row) => row.finished_at !== null)).to.equal(true);
  });

  it("applies nothing the second time", async () => {
    expect(await applyMigrations(db.migrationAdapter())).to.deep.equal([]);
  });

  it("leaves a working schema behind", async () => {
    await db.prisma.indexerCursor.create({ data: { chainId: 31337, blockNumber: 7, blockHash: "0xabc" } });
    const cursor = await db.prisma.indexerCursor.findUnique({ where: { chainId: 31337 } });
    expect(cursor?.blockNumber).to.equal(7);
  });
});
