import type { Database, SqlQuery } from "../core/db.js";
import { Prisma } from "../generated/prisma/client.js";

/** A transaction (or the client itself) of the service's database: repositories take one to join the caller's work. */
export type Tx = Prisma.TransactionClient;

/** What repositories and services need of the database: Prisma, and plain SQL for hot set-based statements. */
export type Db = Pick<Database, "prisma" | "sql">;

/** The raw statements of a transaction: a Prisma transaction has them, and so has a plain SQL one (rawTxOf). */
export type RawTx = Pick<Tx, "$queryRaw" | "$executeRaw" | "$queryRawUnsafe" | "$executeRawUnsafe">;

/**
 * Prisma's raw statements over a transaction of `db.sql`, for hot transactions with large
 * parameters and results (an outbox fan-out's pages), where Prisma's client costs about twice
 * the driver's. Values come as the driver reads them, not as Prisma does: an int8 as text (pg)
 * or a number (PGlite), a `timestamp` in the process's time zone; such statements read them as
 * text or epoch ms.
 */
export function rawTxOf(query: SqlQuery): RawTx {
  const statementOf = (strings: TemplateStringsArray | Prisma.Sql, values: unknown[]) =>
    strings instanceof Prisma.Sql ? strings : Prisma.sql(strings, ...(values as Prisma.Sql[]));
  const raw = {
    $queryRaw: async (strings: TemplateStringsArray | Prisma.Sql, ...values: unknown[]) => {
      const statement = statementOf(strings, values);
      return (await query(statement.text, statement.values)).rows;
    },
    $executeRaw: async (strings: TemplateStringsArray | Prisma.Sql, ...values: unknown[]) => {
      const statement = statementOf(strings, values);
      return (await query(statement.text, statement.values)).rowCount;
    },
    $queryRawUnsafe: async (text: string, ...values: unknown[]) => (await query(text, values)).rows,
    $executeRawUnsafe: async (text: string, ...values: unknown[]) => (await query(text, values)).rowCount,
  };
  // Awaited like Prisma's, never chained as a PrismaPromise (no $transaction([...]) of them).
  return raw as unknown as RawTx;
}
