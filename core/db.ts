import { mkdirSync } from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { PGlite } from "@electric-sql/pglite";
import type { SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import type pg from "pg";
import type { from as copyFrom } from "pg-copy-streams";
import { Prisma, PrismaClient } from "../generated/prisma/client.js";

export type DatabaseKind = "pglite" | "postgres";

/** One SQL statement's answer. */
export interface SqlResult<Row> {
  rows: Row[];
  rowCount: number;
}

export type SqlQuery = <Row = Record<string, unknown>>(text: string, params?: unknown[]) => Promise<SqlResult<Row>>;

/**
 * How the plain driver reads a value, the same on pg and PGlite and as Prisma's raw statements do,
 * so a statement reads the same whichever runs it: an int8 as a bigint, a `timestamp` (the
 * service's are UTC, Prisma's convention) as a Date. A `numeric(78, 0)` stays its text (Prisma
 * reads a Decimal): callers read it with `BigInt(String(value))`.
 */
const PARSERS: Record<number, (text: string) => unknown> = {
  20: (text) => BigInt(text),
  1114: (text) => new Date(`${text.replace(" ", "T")}Z`),
  1184: (text) => new Date(text),
};

/** Bulk-loads rows into a table with COPY (PostgreSQL): no ON CONFLICT, so only for rows that cannot exist yet. */
export type CopyRows = (table: string, columns: string[], rows: unknown[][]) => Promise<number>;

/**
 * The plain driver beside Prisma: the indexer's set-based writes (`INSERT ... SELECT FROM
 * unnest(...)`, COPY), which Prisma's per-row API would turn into thousands of statements per
 * batch, and the hot statements of `rawTxOf`.
 */
export interface SqlExecutor {
  query: SqlQuery;
  /** `copy` is offered on PostgreSQL; PGlite has no COPY FROM STDIN and callers fall back to INSERT. */
  transaction<T>(work: (query: SqlQuery, copy?: CopyRows) => Promise<T>): Promise<T>;
}

/** A value in COPY's text format. */
function copyField(value: unknown): string {
  if (value === null || value === undefined) return "\\N";
  if (typeof value === "boolean") return value ? "t" : "f";
  const text = String(value);
  return /[\\\t\n\r]/.test(text) ? text.replace(/\\/g, "\\\\").replace(/\t/g, "\\t").replace(/\n/g, "\\n").replace(/\r/g, "\\r") : text;
}

async function copyRows(
  copy: typeof copyFrom,
  client: pg.PoolClient,
  table: string,
  columns: string[],
  rows: unknown[][],
): Promise<number> {
  if (rows.length === 0) return 0;
  const stream = client.query(copy(`COPY "${table}" (${columns.map((c) => `"${c}"`).join(", ")}) FROM STDIN`));
  function* chunks() {
    let chunk = "";
    for (const row of rows) {
      chunk += `${row.map(copyField).join("\t")}\n`;
      if (chunk.length > 1 << 20) {
        yield chunk;
        chunk = "";
      }
    }
    if (chunk) yield chunk;
  }
  await pipeline(Readable.from(chunks()), stream);
  return Number(stream.rowCount ?? rows.length);
}

/**
 * A repository's plain SQL: tagged statements (`tx.$queryRaw\`...\``, fragments with `Prisma.sql`
 * and `Prisma.join`), run by a Prisma transaction or by the plain driver (`rawTxOf`). Both read
 * values alike (an int8 as a bigint, a `timestamp` as a UTC Date: `PARSERS`) and send a Date
 * alike (UTC), so a statement never defends itself against the one that runs it.
 */
export type RawTx = Pick<Prisma.TransactionClient, "$queryRaw" | "$executeRaw">;

/**
 * The raw statements on the plain driver, for hot statements with large parameters and results
 * (an outbox page, the queue's claim), where Prisma's client costs about twice the driver's:
 * `db.plain` outside a transaction, `plainTransaction` inside one.
 */
export function rawTxOf(query: SqlQuery): RawTx {
  // A Date goes as UTC text, as Prisma sends it (pg would send the process's local time).
  const run = (strings: TemplateStringsArray | Prisma.Sql, values: unknown[]) => {
    const statement = strings instanceof Prisma.Sql ? strings : Prisma.sql(strings, ...(values as Prisma.Sql[]));
    return query(
      statement.text,
      statement.values.map((value) => (value instanceof Date ? value.toISOString() : value)),
    );
  };
  const raw = {
    $queryRaw: async (strings: TemplateStringsArray | Prisma.Sql, ...values: unknown[]) => (await run(strings, values)).rows,
    $executeRaw: async (strings: TemplateStringsArray | Prisma.Sql, ...values: unknown[]) => (await run(strings, values)).rowCount,
  };
  // Awaited like Prisma's, never chained as a PrismaPromise (no $transaction([...]) of them).
  return raw as unknown as RawTx;
}

/** A transaction of the plain driver, its statements as `RawTx`'s. */
export const plainTransaction = <T>(db: Pick<Database, "sql">, work: (tx: RawTx) => Promise<T>): Promise<T> =>
  db.sql.transaction((query) => work(rawTxOf(query)));

export interface Database {
  kind: DatabaseKind;
  /** The PostgreSQL server's URL (absent for PGlite), for sessions of their own (advisory locks). */
  connectionString?: string;
  prisma: PrismaClient;
  sql: SqlExecutor;
  /** Tagged statements on the plain driver, outside a transaction (`rawTxOf(sql.query)`). */
  plain: RawTx;
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

/** PGlite's (Emscripten's) errno for "no space left on device". */
const PGLITE_ENOSPC = 51;

/**
 * Why a database did not open, in words: the driver's message, or for PGlite's file system errors,
 * which carry only an errno, what that number means.
 */
export function openFailureReason(error: unknown): string {
  const e = error as { code?: string; message?: string; errno?: number; cause?: { message?: string } } | undefined;
  const said = e?.cause?.message ?? e?.message ?? e?.code;
  if (said) return String(said);
  if (e?.errno === PGLITE_ENOSPC) return "no space left on the device";
  if (typeof e?.errno === "number") return `file system error ${e.errno}`;
  return String(error);
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const database = options.databaseUrl ? await openPostgres(options.databaseUrl) : await openPglite(options.pgliteDataDir ?? "memory://");
  return { ...database, plain: rawTxOf(database.sql.query) };
}

/**
 * Each driver's modules are loaded by the database that uses them: PGlite's start never loads pg
 * (about 80 ms and 4 MB), PostgreSQL's never loads PGlite (D-87).
 */
async function openPostgres(connectionString: string): Promise<Omit<Database, "plain">> {
  const [{ default: pg }, { PrismaPg }, { from: copyFrom }] = await Promise.all([
    import("pg"),
    import("@prisma/adapter-pg"),
    import("pg-copy-streams"),
  ]);
  const factory = new PrismaPg({ connectionString, connectionTimeoutMillis: 5_000 });
  const prisma = new PrismaClient({ adapter: factory });
  const pool = new pg.Pool({
    connectionString,
    connectionTimeoutMillis: 5_000,
    max: 4,
    types: {
      getTypeParser: ((oid: number, format?: "text" | "binary") =>
        PARSERS[oid] ?? pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  // An idle client that loses its connection must not crash the process; the next query reconnects.
  pool.on("error", () => {});
  const database: Omit<Database, "plain"> = {
    kind: "postgres",
    connectionString,
    prisma,
    sql: {
      query: async <Row>(text: string, params?: unknown[]) => {
        const result = await pool.query(text, params);
        return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 };
      },
      transaction: async (work) => {
        const client = await pool.connect();
        try {
          await client.query("BEGIN");
          const result = await work(
            async <Row>(text: string, params?: unknown[]) => {
              const answer = await client.query(text, params);
              return { rows: answer.rows as Row[], rowCount: answer.rowCount ?? 0 };
            },
            (table, columns, rows) => copyRows(copyFrom, client, table, columns, rows),
          );
          await client.query("COMMIT");
          return result;
        } catch (error) {
          await client.query("ROLLBACK").catch(() => {});
          throw error;
        } finally {
          client.release();
        }
      },
    },
    migrationAdapter: () => new PrismaPg({ connectionString, connectionTimeoutMillis: 5_000 }),
    ping: async () => {
      await prisma.$queryRaw`SELECT 1`;
    },
    close: async () => {
      await prisma.$disconnect();
      await pool.end();
    },
  };
  await database.ping();
  return database;
}

/**
 * PostgreSQL's default shared_buffers (128 MB) became resident memory of the process as soon as
 * PGlite started (its WebAssembly memory); the sandbox's data fits in far less, and its files stay
 * in the OS's cache anyway. 16 MB took about 120 MB off the process (D-87).
 */
const PGLITE_SETTINGS = ["-c", "shared_buffers=16MB"];

async function openPglite(dataDir: string): Promise<Omit<Database, "plain">> {
  if (!dataDir.startsWith("memory://")) mkdirSync(path.resolve(dataDir), { recursive: true });
  const [{ PGlite: Engine }, { PrismaPGlite }] = await Promise.all([import("@electric-sql/pglite"), import("pglite-prisma-adapter")]);
  const pglite = await Engine.create(dataDir, { startParams: [...Engine.defaultStartParams, ...PGLITE_SETTINGS] });
  const prisma = new PrismaClient({ adapter: new PrismaPGlite(pglite) });
  const query = async <Row>(on: Pick<PGlite, "query">, text: string, params?: unknown[]) => {
    const result = await on.query<Row>(text, params, { parsers: PARSERS });
    return { rows: result.rows, rowCount: result.affectedRows ?? result.rows.length };
  };
  return {
    kind: "pglite",
    prisma,
    sql: {
      query: (text, params) => query(pglite, text, params),
      transaction: (work) => pglite.transaction((tx) => work((text, params) => query(tx, text, params))),
    },
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
