import { type Database, type RawTx, rawTxOf } from "../core/db.js";
import type { Prisma } from "../generated/prisma/client.js";

export { type RawTx, rawTxOf };

/** A transaction (or the client itself) of the service's database: repositories take one to join the caller's work. */
export type Tx = Prisma.TransactionClient;

/** What repositories and services need of the database: Prisma, and plain SQL for hot set-based statements. */
export type Db = Pick<Database, "prisma" | "sql">;

/** A transaction of the plain driver, its statements as `RawTx`'s. */
export const plainTransaction = <T>(db: Db, work: (tx: RawTx) => Promise<T>): Promise<T> =>
  db.sql.transaction((query) => work(rawTxOf(query)));
