// What the service reads of the indexer's own state: its cursor on a chain (how far the mirror
// has indexed, and its last beat), for the writes' wait on the mirror and for /health.
import type { Db } from "../db.js";

/** The indexer's cursor on the chain, or null before its first batch. */
export const indexerCursorOf = (db: Pick<Db, "prisma">, chainId: number) => db.prisma.indexerCursor.findUnique({ where: { chainId } });
