import { type Database, plainTransaction, type RawTx, rawTxOf } from "../core/db.js";
import type { Prisma } from "../generated/prisma/client.js";

export { plainTransaction, type RawTx, rawTxOf };

/** A transaction (or the client itself) of the service's database: repositories take one to join the caller's work. */
export type Tx = Prisma.TransactionClient;

/** What repositories and services need of the database: Prisma, and plain SQL for hot set-based statements. */
export type Db = Pick<Database, "prisma" | "sql" | "plain">;
