import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { bootDatabase, DatabaseUnavailableError } from "../../core/boot.js";
import type { Config } from "../../core/config.js";
import { type Database, openDatabase } from "../../core/db.js";
import type { Logger } from "../../core/logger.js";
import { applyMigrations, migrationsCurrent, readMigrationsList } from "../../core/migrations.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";

// How a process's start brings its database up to date (D-87): one SELECT when nothing is
// pending; otherwise the schema engine in a thread of its own, which a PGlite folder is handed to.
describe(`bootDatabase (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(60_000);
  const all = readMigrationsList();
  const last = all.migrationDirectories.at(-1)!.path;
  let target: TestDatabase | undefined;
  let booted: Database | undefined;
  const said: string[] = [];
  const logger = { info: (fields: { applied: string[] }, message: string) => said.push(`${message}: ${fields.applied.join(",")}`) };

  /** A database with every migration but the last applied; its Config for bootDatabase. */
  async function oneMigrationBehind(): Promise<Config> {
    if (usingPostgres) {
      target = await createTestDatabase({ migrate: false });
      await applyMigrations(target.migrationAdapter(), { ...all, migrationDirectories: all.migrationDirectories.slice(0, -1) });
      return { database: { url: target.url, pgliteDir: "unused" } } as unknown as Config;
    }
    const pgliteDir = path.join(mkdtempSync(path.join(os.tmpdir(), "boot-db-")), "pglite");
    const db = await openDatabase({ pgliteDataDir: pgliteDir });
    await applyMigrations(db.migrationAdapter(), { ...all, migrationDirectories: all.migrationDirectories.slice(0, -1) });
    await db.close();
    return { database: { url: undefined, pgliteDir } } as unknown as Config;
  }

  afterEach(async () => {
    await booted?.close();
    await target?.destroy();
    booted = undefined;
    target = undefined;
    said.length = 0;
  });

  it("applies what is pending in its thread and hands back an open, current database; then finds nothing to do", async () => {
    const config = await oneMigrationBehind();
    booted = await bootDatabase(config, logger as unknown as Logger);
    expect(said).to.deep.equal([`migrations applied: ${last}`]);
    expect(await migrationsCurrent(booted.sql.query)).to.equal(true);
    await booted.close();
    booted = await bootDatabase(config, logger as unknown as Logger);
    expect(said).to.deep.equal([`migrations applied: ${last}`, "database schema up to date: "]);
  });

  if (!usingPostgres) {
    it("creates a new PGlite folder in the migrations' thread, then opens it once", async () => {
      const pgliteDir = path.join(mkdtempSync(path.join(os.tmpdir(), "boot-db-")), "pglite");
      booted = await bootDatabase({ database: { url: undefined, pgliteDir } } as unknown as Config, logger as unknown as Logger);
      expect(said).to.deep.equal([`migrations applied: ${all.migrationDirectories.map((entry) => entry.path).join(",")}`]);
      expect(await booted.prisma.chainIdentity.count()).to.equal(0);
    });
  }

  it("reports the engine's refusal from its thread as one line", async () => {
    const config = await oneMigrationBehind();
    const db = usingPostgres ? target! : await openDatabase({ pgliteDataDir: config.database.pgliteDir });
    // A failed attempt of the pending migration: the engine refuses to go on (P3009).
    await db.sql.query(
      `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count) VALUES ('failed', 'x', $1, now(), 0)`,
      [last],
    );
    if (!usingPostgres) await db.close();
    const error = await bootDatabase(config, logger as unknown as Logger).then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(error).to.be.instanceOf(DatabaseUnavailableError);
    expect((error as Error).message).to.match(/^database: migrations failed \(/);
    expect((error as Error).message).to.not.include("\n");
  });
});
