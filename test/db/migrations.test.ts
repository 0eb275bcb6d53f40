import { expect } from "chai";
import { openDatabase } from "../../core/db.js";
import { applyMigrations, diffMigrationsToSchema, migrationsCurrent, readMigrationsList } from "../../core/migrations.js";
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

  it("tells a current database by one SELECT (npm start then skips the schema engine), and nothing else as current", async () => {
    const list = readMigrationsList();
    expect(await migrationsCurrent(db.sql.query, list)).to.equal(true);
    const [first, ...rest] = list.migrationDirectories;
    const sql = first!.migrationFile.content.tag === "ok" ? first!.migrationFile.content.value : "";
    const edited = { ...first!, migrationFile: { path: "migration.sql", content: { tag: "ok" as const, value: `${sql}\n-- edited\n` } } };
    expect(await migrationsCurrent(db.sql.query, { ...list, migrationDirectories: [edited, ...rest] }), "an edited migration").to.equal(
      false,
    );
    const later = {
      path: "29991231000000_later",
      migrationFile: { path: "migration.sql", content: { tag: "ok" as const, value: "SELECT 1" } },
    };
    const withLater = { ...list, migrationDirectories: [...list.migrationDirectories, later] };
    expect(await migrationsCurrent(db.sql.query, withLater), "a new migration").to.equal(false);
    // A failed attempt (no finished_at) is the engine's to report; rolled back afterwards.
    await db.sql
      .transaction(async (query) => {
        await query(
          `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count) VALUES ('failed', 'x', $1, now(), 0)`,
          [later.path],
        );
        expect(await migrationsCurrent(query, withLater), "a failed migration").to.equal(false);
        throw new Error("rollback");
      })
      .catch((error: Error) => expect(error.message).to.equal("rollback"));
    const empty = await openDatabase({ pgliteDataDir: "memory://" });
    try {
      expect(await migrationsCurrent(empty.sql.query, list), "a new database").to.equal(false);
    } finally {
      await empty.close();
    }
  });

  it("leaves a working schema behind", async () => {
    await db.prisma.indexerCursor.create({ data: { chainId: 31337, blockNumber: 7, blockHash: "0xabc" } });
    const cursor = await db.prisma.indexerCursor.findUnique({ where: { chainId: 31337 } });
    expect(cursor?.blockNumber).to.equal(7);
  });
});
