import { randomBytes } from "node:crypto";
import pg from "pg";
import { type Database, openDatabase } from "../../core/db.js";
import { applyMigrations } from "../../core/migrations.js";

/**
 * A migrated, empty database for one test suite: an in-memory PGlite, or, when
 * DATABASE_URL is set, a throw-away PostgreSQL database created next to it and
 * dropped afterwards (so suites never see each other's rows).
 */
export interface TestDatabase extends Database {
  /** The connection URL of the throw-away PostgreSQL database (undefined on PGlite). */
  url: string | undefined;
  destroy(): Promise<void>;
}

export const usingPostgres = Boolean(process.env.DATABASE_URL);

function databaseUrlWithName(baseUrl: string, name: string): string {
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function createTestDatabase(options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const migrate = options.migrate ?? true;
  const baseUrl = process.env.DATABASE_URL;
  if (!baseUrl) {
    const db = await openDatabase({ pgliteDataDir: "memory://" });
    if (migrate) await applyMigrations(db.migrationAdapter());
    return { ...db, url: undefined, destroy: () => db.close() };
  }
  const name = `t_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = databaseUrlWithName(baseUrl, name);
  const db = await openDatabase({ databaseUrl: url });
  if (migrate) await applyMigrations(db.migrationAdapter());
  return {
    ...db,
    url,
    destroy: async () => {
      await db.close();
      const cleanup = new pg.Client({ connectionString: baseUrl });
      await cleanup.connect();
      await cleanup.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await cleanup.end();
    },
  };
}
