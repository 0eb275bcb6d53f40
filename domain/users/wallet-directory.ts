// Which platform user a managed wallet belongs to, for writers that see only addresses (the
// indexer). The users domain owns the User table; the indexer asks here instead of reading it.
import type { SqlQuery } from "../../core/db.js";

/** Lower-case wallet address -> user id, for the given addresses that are users' managed wallets. */
export async function usersByWallet(query: SqlQuery, wallets: Iterable<string>): Promise<Map<string, string>> {
  const list = [...new Set([...wallets].map((wallet) => wallet.toLowerCase()))];
  const users = new Map<string, string>();
  if (list.length === 0) return users;
  const { rows } = await query<{ id: string; wallet: string }>(
    `SELECT "id", lower("walletAddress") AS "wallet" FROM "User" WHERE lower("walletAddress") = ANY($1::text[])`,
    [list],
  );
  for (const row of rows) users.set(row.wallet, row.id);
  return users;
}

/**
 * Managed wallets created after `afterIndex` (wallet indexes only grow), lower-case, with the
 * highest index seen: a caller polls with the last index to learn new wallets. `through` stops at
 * an index, `limit` takes the first wallets only (the rest come at the next call).
 */
export async function managedWalletsSince(
  query: SqlQuery,
  afterIndex: number,
  { through, limit }: { through?: number; limit?: number } = {},
): Promise<{ wallets: string[]; lastIndex: number }> {
  const { rows } = await query<{ wallet: string; walletIndex: number }>(
    `SELECT lower("walletAddress") AS "wallet", "walletIndex" FROM "User"
      WHERE "walletIndex" > $1 AND "walletIndex" <= $2 AND "walletAddress" IS NOT NULL ORDER BY "walletIndex" LIMIT $3`,
    [afterIndex, through ?? 2_147_483_647, limit ?? null],
  );
  return {
    wallets: rows.map((row) => row.wallet),
    lastIndex: rows.reduce((max, row) => Math.max(max, Number(row.walletIndex)), afterIndex),
  };
}
