import { mkdirSync } from "node:fs";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PrismaPg } from "@prisma/adapter-pg";
import type { SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { PrismaClient } from "../generated/prisma/client.js";

export type DatabaseKind = "pglite" | "postgres";

export interface Database {
  kind: DatabaseKind;
  prisma: PrismaClient;
  /** A migration-aware adapter factory for Prisma's schema engine (migrations, diff). */
  migrationAdapter(): SqlMigrationAwareDriverAdapterFactory;
  /** Cheap liveness probe for /health. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  /** postgresql://... selects PostgreSQL; otherwise the embedded PGlite is used. */
  databaseUrl?: string | undefined;
  /** PGlite data folder, or "memory://" for a throw-away in-memory database. */
  pgliteDataDir?: string;
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (options.databaseUrl) return openPostgres(options.databaseUrl);
  return openPglite(options.pgliteDataDir ?? "memory://");
}

async function openPostgres(connectionString: string): Promise<Database> {
  const factory = new PrismaPg({ connectionString, connectionTimeoutMillis: 5_000 });
  const prisma = new PrismaClient({ adapter: factory });
  const database: Database = {
    kind: "postgres",
    prisma,
    migrationAdapter: () => new PrismaPg({ connectionString, connectionTimeoutMillis: 5_000 }),
    ping: async () => {
      await prisma.$queryRawUnsafe("SELECT 1");
    },
    close: () => prisma.$disconnect(),
  };
  await database.ping();
  return database;
}

async function openPglite(dataDir: string): Promise<Database> {
  if (!dataDir.startsWith("memory://")) mkdirSync(path.resolve(dataDir), { recursive: true });
  const pglite = await PGlite.create(dataDir);
  const prisma = new PrismaClient({ adapter: new PrismaPGlite(pglite) });
  return {
    kind: "pglite",
    prisma,
    migrationAdapter: () => new PrismaPGlite(pglite),
    ping: async () => {
      await pglite.query("SELECT 1");
    },
    close: async () => {
      await prisma.$disconnect();
      await pglite.close();
    },
  };
}
