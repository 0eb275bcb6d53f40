// A holder's staking-vault deposits and withdrawals as the chain knows them (the indexer's
// VaultTransaction rows, read-only here), in the spec's Vault transaction shape.
import { MIRRORED_CHAIN_ID_SQL } from "../../core/chain-identity.js";
import { formatUsdc2, rateNumber } from "../../core/money.js";
import type { Db } from "../db.js";

export function createVaultRepo({ db }: { db: Db }) {
  return {
    /** Newest first; `id` is `<txHash>-<logIndex>`, unique on the chain. */
    historyOf: (ownerWallet: string) => vaultHistoryOf(db, ownerWallet),
  };
}

export type VaultRepo = ReturnType<typeof createVaultRepo>;

/** tmUSDC has 18 decimals, USDC 6: shares / 10^12 are micro-tmUSDC. */
const SHARE_TO_MICRO = 10n ** 12n;

/** The exchange rate of one transaction (USDC per tmUSDC) to 6 decimals, computed in integers. */
function exchangeRate(assets: bigint, shares: bigint): number {
  if (shares === 0n) return 0;
  return rateNumber((assets * SHARE_TO_MICRO * 1_000_000n) / shares, 6);
}

async function vaultHistoryOf({ prisma }: Db, ownerWallet: string) {
  const rows = await prisma.$queryRawUnsafe<
    { txHash: string; logIndex: number; type: string; assets: bigint; shares: string; timestamp: Date }[]
  >(
    `SELECT "txHash", "logIndex", "type", "assets", "shares"::text AS "shares", "timestamp"
       FROM "VaultTransaction" WHERE "chainId" = ${MIRRORED_CHAIN_ID_SQL} AND "owner" = $1
      ORDER BY "blockNumber" DESC, "logIndex" DESC`,
    ownerWallet.toLowerCase(),
  );
  return rows.map((row) => {
    const assets = BigInt(row.assets);
    const shares = BigInt(row.shares);
    return {
      id: `${row.txHash}-${row.logIndex}`,
      type: row.type as "deposit" | "withdraw",
      usdcAmount: formatUsdc2(assets),
      tmUSDCAmount: formatUsdc2(shares / SHARE_TO_MICRO),
      exchangeRate: exchangeRate(assets, shares),
      timestamp: row.timestamp.toISOString(),
      txHash: row.txHash,
    };
  });
}
