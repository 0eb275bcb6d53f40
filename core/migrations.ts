import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { Worker } from "node:worker_threads";
import type { SqlDriverAdapter, SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import { bindMigrationAwareSqlAdapterFactory } from "@prisma/driver-adapter-utils";
import type { MigrationList, SchemaEngine } from "@prisma/schema-engine-wasm";
import type { SqlQuery } from "./db.js";
import { ROOT } from "./paths.js";

// Prisma's schema engine in WebAssembly: `migrate deploy` / `migrate diff`
// without the native binary the CLI would download. It keeps Prisma's own
// `_prisma_migrations` table, so `prisma migrate deploy` stays interchangeable.

export const PRISMA_DIR = path.join(ROOT, "prisma");
export const SCHEMA_PATH = path.join(PRISMA_DIR, "schema.prisma");
export const MIGRATIONS_DIR = path.join(PRISMA_DIR, "migrations");
const NO_FILTERS = { externalTables: [], externalEnums: [] };

export function readMigrationsList(migrationsDir = MIGRATIONS_DIR): MigrationList {
  const directories = existsSync(migrationsDir)
    ? readdirSync(migrationsDir, { withFileTypes: true })
        .filter((entry) => entry.isDirectory())
        .map((entry) => entry.name)
        .sort()
    : [];
  return {
    baseDir: migrationsDir,
    shadowDbInitScript: "",
    lockfile: { path: "migration_lock.toml", content: 'provider = "postgresql"\n' },
    migrationDirectories: directories.map((name) => {
      const file = path.join(migrationsDir, name, "migration.sql");
      return {
        path: name,
        migrationFile: existsSync(file)
          ? { path: "migration.sql", content: { tag: "ok" as const, value: readFileSync(file, "utf8") } }
          : { path: "migration.sql", content: { tag: "error" as const, value: "migration.sql is missing" } },
      };
    }),
  };
}

/**
 * Runs the schema engine on connections of its own, closed when it is done. The engine takes a
 * session-level advisory lock on PostgreSQL and never releases it; closing its connections does.
 * (Left to the pool's idle timeout, the lock outlived the migration by 10 s, which is exactly the
 * engine's lock timeout: two processes started together, `npm run api` and `npm run worker`, had
 * the second fail with P1002.)
 */
async function withEngine<T>(adapterFactory: SqlMigrationAwareDriverAdapterFactory, run: (engine: SchemaEngine) => Promise<T>): Promise<T> {
  const schema = readFileSync(SCHEMA_PATH, "utf8");
  const opened: SqlDriverAdapter[] = [];
  const track = async (connecting: Promise<SqlDriverAdapter>) => {
    const adapter = await connecting;
    opened.push(adapter);
    return adapter;
  };
  const tracked: SqlMigrationAwareDriverAdapterFactory = {
    provider: adapterFactory.provider,
    adapterName: adapterFactory.adapterName,
    connect: () => track(adapterFactory.connect()),
    connectToShadowDb: () => track(adapterFactory.connectToShadowDb()),
  };
  // Imported when needed: the module instantiates its WebAssembly as it loads (about 100 MB), and a
  // start on a current database never needs it (migrationsCurrent).
  const { SchemaEngine: Engine } = await import("@prisma/schema-engine-wasm");
  const engine = await Engine.new(
    { datamodels: [["schema.prisma", schema]] },
    () => {}, // engine log lines: not needed, errors arrive as rejections
    bindMigrationAwareSqlAdapterFactory(tracked),
  );
  try {
    return await run(engine);
  } finally {
    engine.free();
    await Promise.all(opened.map((adapter) => adapter.dispose().catch(() => {})));
  }
}

/** Applies every migration of `list` not yet recorded in `_prisma_migrations`; returns their names. */
export async function applyMigrations(
  adapterFactory: SqlMigrationAwareDriverAdapterFactory,
  list: MigrationList = readMigrationsList(),
): Promise<string[]> {
  return withEngine(adapterFactory, async (engine) => {
    const result = await engine.applyMigrations({ migrationsList: list, filters: NO_FILTERS });
    return result.appliedMigrationNames;
  });
}

/** Where the migrations' thread connects: PostgreSQL, or a PGlite folder no other PGlite has open. */
export interface MigrationTarget {
  databaseUrl?: string | undefined;
  pgliteDataDir?: string;
}

export type MigrationThreadAnswer = { applied: string[] } | { error: string; opening: boolean };

/** The migrations' thread could not open the database (its message is the driver's reason). */
export class MigrationTargetError extends Error {
  override name = "MigrationTargetError";
}

/**
 * applyMigrations in a thread of its own (core/migrations-thread.ts), resolved once the thread has
 * ended and closed the database. The schema engine's module instantiates its WebAssembly when it
 * loads and never frees it: applied in this thread, a first start kept a few hundred MB for the
 * process's life (D-87).
 */
export function applyMigrationsInThread(target: MigrationTarget): Promise<string[]> {
  const file = import.meta.url.endsWith(".ts") ? "./migrations-thread.ts" : "./migrations-thread.js";
  return new Promise((resolve, reject) => {
    let answer: MigrationThreadAnswer | undefined;
    const worker = new Worker(new URL(file, import.meta.url), { workerData: target });
    worker.on("message", (message: MigrationThreadAnswer) => {
      answer = message;
    });
    worker.on("error", reject);
    worker.on("exit", (code) => {
      if (answer && "applied" in answer) resolve(answer.applied);
      else if (answer) reject(answer.opening ? new MigrationTargetError(answer.error) : new Error(answer.error));
      else reject(new Error(`the migrations' thread exited with code ${code}`));
    });
  });
}

/**
 * True when the database has applied exactly the migrations of `list`, each finished and unchanged
 * (Prisma's checksum: the SHA-256 of migration.sql), with no failed or rolled-back attempt: one
 * SELECT, so a start on a current database skips the schema engine, whose WebAssembly took about
 * 1.5 s and a few hundred MB to find nothing to apply (D-87). Anything else (a new database, a new
 * or edited migration, a failed one) is the engine's to apply or to refuse, as before.
 */
export async function migrationsCurrent(query: SqlQuery, list: MigrationList = readMigrationsList()): Promise<boolean> {
  const checksums = new Map(
    list.migrationDirectories.map(({ path: name, migrationFile: { content } }) => [
      name,
      content.tag === "ok" ? createHash("sha256").update(content.value).digest("hex") : undefined,
    ]),
  );
  let applied: { migration_name: string; checksum: string; finished_at: unknown; rolled_back_at: unknown }[];
  try {
    applied = (
      await query<(typeof applied)[number]>(`SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations"`)
    ).rows;
  } catch {
    return false; // no bookkeeping table yet: a new database
  }
  return (
    applied.length === checksums.size &&
    applied.every((row) => row.finished_at !== null && row.rolled_back_at === null && checksums.get(row.migration_name) === row.checksum)
  );
}

/**
 * SQL that takes a database at the state of the migrations to the state of
 * `schema.prisma`; empty when they agree. The engine replays the migrations on a
 * shadow database that `scratch` provides (an in-memory PGlite does).
 */
export async function diffMigrationsToSchema(scratch: SqlMigrationAwareDriverAdapterFactory): Promise<string> {
  return withEngine(scratch, async (engine) => {
    const schema = readFileSync(SCHEMA_PATH, "utf8");
    const result = await engine.diff({
      from: { tag: "migrations", ...readMigrationsList() },
      to: { tag: "schemaDatamodel", files: [{ path: "schema.prisma", content: schema }] },
      script: true,
      exitCode: null,
      filters: NO_FILTERS,
    });
    const sql = (result.stdout ?? "").trim();
    // The engine answers an empty diff with a comment line only.
    return sql === "-- This is an empty migration." ? "" : sql;
  });
}
