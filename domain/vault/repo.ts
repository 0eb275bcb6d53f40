// A holder's staking-vault position and history as the chain knows them: the indexer's
// VaultTransaction, VaultPosition and YieldDistribution rows, read-only here.
import { MIRRORED_CHAIN_ID } from "../../core/chain-identity.js";
import { formatUsdc2, rateNumber } from "../../core/money.js";
import { Prisma } from "../../generated/prisma/client.js";
import type { Db, Tx } from "../db.js";
import { aheadOf, type Listing, sqlBeside, sqlWindow } from "../pagination.js";

// Shares and rates are numeric(78, 0), read as `::text` (Prisma reads a numeric as a Decimal, the
// plain driver as its text) and turned into bigints here; every other column comes as its type.

/** tmUSDC has 18 decimals, USDC 6: shares / 10^12 are micro-tmUSDC. */
export const SHARES_PER_MICRO = 10n ** 12n;
/** exchangeRate() is micro-USDC per 10^18 shares scaled by 10^18 / 10^6: value = shares * rate / 10^30. */
export const RATE_SCALE = 10n ** 30n;

export interface VaultTransactionRow {
  txHash: string;
  logIndex: number;
  /** Its place among the transaction's vault events of its type (D-91). */
  ordinal: number;
  blockNumber: number;
  type: "deposit" | "withdraw";
  assets: bigint;
  shares: bigint;
  timestamp: Date;
}

export interface PositionRow {
  shares: bigint;
  deposited: bigint;
  withdrawn: bigint;
  /** When the current holding began (the indexer's `heldSince`); null while no shares are held. */
  heldSince: Date | null;
  /** The vault's latest yield distribution at or after heldSince: the latest the holding took part in. */
  lastDistributionAt: Date | null;
}

/** A rate the vault had at a point of time (after a yield distribution), scaled like exchangeRate(). */
export interface RatePoint {
  blockNumber: number;
  logIndex: number;
  rate: bigint;
  timestamp: Date;
}

export function createVaultRepo({ db }: { db: Db }) {
  const { prisma } = db;
  return {
    /** Newest first; `id` is `<txHash>-<type>-<ordinal>`, unique on the chain and kept across reorganisations (D-91). */
    historyOf: async (ownerWallet: string) => (await transactionsOf(db, ownerWallet)).map(transactionView),

    /** The holder's transactions for `paginate`, newest first. */
    listing(ownerWallet: string): Listing<ChainPlace, ReturnType<typeof transactionView>> {
      const owner = ownerWallet.toLowerCase();
      const placeSql = (place: ChainPlace) => [Prisma.sql`${place.blockNumber}::int`, Prisma.sql`${place.logIndex}::int`] as const;
      return {
        async placeOf(id) {
          const parts = /^(0x[0-9a-f]{64})-(deposit|withdraw)-(\d{1,6})$/.exec(id);
          if (!parts) return null;
          const [row] = await prisma.$queryRaw<ChainPlace[]>`
            SELECT "blockNumber", "logIndex" FROM "VaultTransaction"
             WHERE "chainId" = ${MIRRORED_CHAIN_ID} AND "owner" = ${owner} AND "txHash" = ${parts[1]} AND "type" = ${parts[2]} AND "ordinal" = ${Number(parts[3])}`;
          return row ?? null;
        },
        read: async (window) => (await transactionsOf(db, owner, sqlWindow(CHAIN_ORDER, window, placeSql))).map(transactionView),
        async count(ahead) {
          const beside = ahead ? sqlBeside(CHAIN_ORDER, placeSql(ahead.place), aheadOf(ahead.inclusive)) : Prisma.sql`true`;
          const [row] = await prisma.$queryRaw<{ total: number }[]>`
            SELECT count(*)::int AS "total" FROM "VaultTransaction" WHERE "chainId" = ${MIRRORED_CHAIN_ID} AND "owner" = ${owner} AND ${beside}`;
          return row?.total ?? 0;
        },
      };
    },

    /** The holder's transactions oldest first, with the block order (yield history). */
    chronologicalOf: async (ownerWallet: string) => (await transactionsOf(db, ownerWallet)).reverse(),

    /** The holder's position and the last distribution it took part in, in one read (one snapshot of the mirror). */
    async positionOf(ownerWallet: string): Promise<PositionRow | null> {
      const [row] = await prisma.$queryRaw<(Omit<PositionRow, "shares"> & { shares: string })[]>`
        SELECT p."shares"::text AS "shares", p."deposited", p."withdrawn", p."heldSince",
                (SELECT max(y."timestamp") FROM "YieldDistribution" y
                  WHERE y."chainId" = p."chainId" AND y."timestamp" >= p."heldSince") AS "lastDistributionAt"
           FROM "VaultPosition" p
          WHERE p."chainId" = ${MIRRORED_CHAIN_ID} AND p."owner" = ${ownerWallet.toLowerCase()}`;
      return row ? { ...row, shares: BigInt(row.shares) } : null;
    },

    /** The rates after each yield distribution, oldest first. */
    async ratePoints(): Promise<RatePoint[]> {
      const rows = await prisma.$queryRaw<(Omit<RatePoint, "rate"> & { rate: string })[]>`
        SELECT "blockNumber", "logIndex", "exchangeRate"::text AS "rate", "timestamp" FROM "YieldDistribution"
          WHERE "chainId" = ${MIRRORED_CHAIN_ID} ORDER BY "blockNumber", "logIndex"`;
      return rows.map((row) => ({ ...row, rate: BigInt(row.rate) }));
    },
  };
}

export type VaultRepo = ReturnType<typeof createVaultRepo>;

/**
 * What the owner holds of its own USDC in the vault now (cost basis) and the most it ever held at
 * once (the mirror's peakCostBasis), in micro-USDC, in the caller's transaction; 0 without a position.
 * `chainId`: a chain fact's own (default: the mirrored chain's).
 */
export async function heldInVault(tx: Tx, ownerWallet: string, chainId?: number): Promise<{ held: bigint; peak: bigint }> {
  const [row] = await tx.$queryRaw<{ held: bigint; peak: bigint }[]>`
    SELECT "costBasis" AS "held", "peakCostBasis" AS "peak" FROM "VaultPosition"
     WHERE "chainId" = ${chainId ?? MIRRORED_CHAIN_ID} AND "owner" = ${ownerWallet.toLowerCase()}`;
  return { held: row?.held ?? 0n, peak: row?.peak ?? 0n };
}

/** The holder's transactions newest first: all, or a window of them. */
async function transactionsOf({ prisma }: Db, ownerWallet: string, window?: ReturnType<typeof sqlWindow>) {
  // `type` is a text column of deposit | withdraw (the indexer's).
  const rows = await prisma.$queryRaw<(Omit<VaultTransactionRow, "shares"> & { shares: string })[]>`
    SELECT "txHash", "logIndex", "ordinal", "blockNumber", "type", "assets", "shares"::text AS "shares", "timestamp"
       FROM "VaultTransaction" WHERE "chainId" = ${MIRRORED_CHAIN_ID} AND "owner" = ${ownerWallet.toLowerCase()}
        AND ${window?.where ?? Prisma.sql`true`} ${window?.tail ?? Prisma.sql`ORDER BY "blockNumber" DESC, "logIndex" DESC`}`;
  const ordered = window?.reversed ? rows.reverse() : rows;
  return ordered.map((row): VaultTransactionRow => ({ ...row, shares: BigInt(row.shares) }));
}

/** A transaction's place in the holder's list: its place on the chain. */
type ChainPlace = { blockNumber: number; logIndex: number };
const CHAIN_ORDER = [Prisma.sql`"blockNumber"`, Prisma.sql`"logIndex"`] as const;

/** The rate of one transaction (USDC per tmUSDC) to 6 decimals, computed in integers. */
function transactionRate(assets: bigint, shares: bigint): number {
  if (shares === 0n) return 0;
  return rateNumber((assets * SHARES_PER_MICRO * 1_000_000n) / shares, 6);
}

/** The spec's Vault transaction. */
function transactionView(row: VaultTransactionRow) {
  return {
    id: `${row.txHash}-${row.type}-${row.ordinal}`,
    type: row.type,
    usdcAmount: formatUsdc2(row.assets),
    tmUSDCAmount: formatUsdc2(row.shares / SHARES_PER_MICRO),
    exchangeRate: transactionRate(row.assets, row.shares),
    timestamp: row.timestamp.toISOString(),
    txHash: row.txHash,
  };
}
