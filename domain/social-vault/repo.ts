// Guardians as the chain knows them, read from the indexer's mirror (SocialVaultState,
// SocialVaultGuardian). The API writes none of these rows; the indexer is their only writer.
import { getAddress } from "ethers";
import { MIRRORED_CHAIN_ID } from "../../core/chain-identity.js";
import { shortAddress } from "../../core/text.js";
import { Prisma } from "../../generated/prisma/client.js";
import type { Db, Tx } from "../db.js";
import { VOUCHER_MIN_ACCOUNT_DAYS, VOUCHER_MIN_SCORE } from "../trust-score/rules.js";
import { withWallet } from "../users/repo.js";

export interface GuardianView {
  /** The guardian's user id when the address is a platform user's managed wallet, else the address. */
  id: string;
  walletAddress: string;
  displayName: string;
  /** `pending` until the vault's timelock since it was added has passed (it has no power before). */
  status: "active" | "pending";
  addedAt: string;
  /** When a submitted removal of this active guardian may be completed (null: none submitted). */
  removableAt: string | null;
}

/**
 * The guardians of the social vault owned by `ownerWallet`, oldest first: every guardian still
 * listed on chain (a submitted removal keeps it listed, and active, until it is accepted).
 */
export async function guardiansOfOwner(db: Tx, ownerWallet: string, now: Date): Promise<GuardianView[]> {
  const rows = await db.$queryRaw<{ guardian: string; activeAt: Date; removalValidAt: Date | null; addedAt: Date | null }[]>`
    SELECT g."guardian", g."activeAt", g."removalValidAt",
            (SELECT min(b."timestamp") FROM "ChainLog" l
               JOIN "ChainBlock" b ON b."chainId" = l."chainId" AND b."blockNumber" = l."blockNumber"
              WHERE l."chainId" = g."chainId" AND l."txHash" = g."addedTxHash" AND l."address" = g."vault"
                AND l."eventName" = 'SocialVaultGuardianAdded') AS "addedAt"
       FROM "SocialVaultState" s
       JOIN "SocialVaultGuardian" g ON g."chainId" = s."chainId" AND g."vault" = s."address"
      WHERE s."chainId" = ${MIRRORED_CHAIN_ID} AND s."owner" = ${ownerWallet.toLowerCase()} AND NOT g."removed"
      ORDER BY "addedAt", g."guardian"`;
  if (rows.length === 0) return [];
  const users = await db.user.findMany({
    where: { walletAddress: { in: rows.map((row) => getAddress(row.guardian)) }, deletedAt: null },
    select: { id: true, displayName: true, walletAddress: true },
  });
  const userByWallet = new Map(users.map(withWallet).map((user) => [user.walletAddress.toLowerCase(), user]));
  return rows.map((row) => {
    const user = userByWallet.get(row.guardian);
    return {
      id: user?.id ?? row.guardian,
      walletAddress: getAddress(row.guardian),
      displayName: user?.displayName ?? shortAddress(getAddress(row.guardian)),
      status: row.activeAt <= now ? "active" : "pending",
      addedAt: (row.addedAt ?? row.activeAt).toISOString(),
      removableAt: row.removalValidAt?.toISOString() ?? null,
    };
  });
}

/**
 * Users whose stored count of guardians that count (the Trust Score's social input) differs from
 * the mirror at `now`: guardians become active by time, removals and reorgs take them away, and a
 * voucher's standing changes, so the count is reconciled rather than incremented. A guardian counts
 * while active and a voucher of standing (D-88): the managed wallet of another live user whose
 * account is VOUCHER_MIN_ACCOUNT_DAYS old and whose score is at least VOUCHER_MIN_SCORE; any other
 * address guards the vault but vouches for nothing. `userIds` narrows the check.
 */
export async function guardianCountDrift(db: Tx, now: Date, userIds?: string[]): Promise<{ userId: string; active: number }[]> {
  const ids = userIds ?? null;
  const joinedBefore = new Date(now.getTime() - VOUCHER_MIN_ACCOUNT_DAYS * 86_400_000);
  return db.$queryRaw<{ userId: string; active: number }[]>`
    WITH counted AS (
       SELECT u."id" AS "userId",
              count(g."guardian") FILTER (WHERE NOT g."removed" AND g."activeAt" <= ${now} AND EXISTS (
                SELECT 1 FROM "User" v
                 WHERE lower(v."walletAddress") = g."guardian" AND v."id" <> u."id" AND v."deletedAt" IS NULL
                   AND v."createdAt" <= ${joinedBefore} AND v."trustScore" >= ${VOUCHER_MIN_SCORE}))::int AS "active"
         FROM "User" u
         JOIN "SocialVaultState" s ON s."chainId" = ${MIRRORED_CHAIN_ID} AND s."owner" = lower(u."walletAddress")
         LEFT JOIN "SocialVaultGuardian" g ON g."chainId" = s."chainId" AND g."vault" = s."address"
        WHERE u."deletedAt" IS NULL AND (${ids}::text[] IS NULL OR u."id" = ANY(${ids}::text[]))
        GROUP BY u."id"
     )
     SELECT coalesce(c."userId", i."userId") AS "userId", coalesce(c."active", 0) AS "active"
       FROM counted c
       FULL JOIN (SELECT "userId", "activeGuardians" FROM "TrustScoreInput"
                   WHERE "activeGuardians" > 0 AND (${ids}::text[] IS NULL OR "userId" = ANY(${ids}::text[]))) i
         ON i."userId" = c."userId"
      WHERE coalesce(c."active", 0) <> coalesce(i."activeGuardians", 0)
      ORDER BY 1`;
}

/** Whether `address` is a social vault the factory created (the relay forwards users' calls only to those). */
export async function isSocialVault(db: Pick<Db, "prisma">, address: string): Promise<boolean> {
  const rows = await db.prisma.$queryRaw<{ one: number }[]>`
    SELECT 1 AS "one" FROM "SocialVaultState" WHERE "chainId" = ${MIRRORED_CHAIN_ID} AND "address" = ${address.toLowerCase()}`;
  return rows.length > 0;
}

export interface SocialVaultRecord {
  address: string;
  owner: string;
  dailyLimit: bigint;
  timelockDuration: number;
  requiredSignatures: number;
  hasDuressPin: boolean;
  locked: boolean;
  lockedAt: Date | null;
  /** When this lock's unlock was asked for (null: not asked, or not locked). */
  unlockRequestedAt: Date | null;
  /** The guardians (lower-case addresses) who approved this lock's unlock. */
  unlockApprovers: string[];
  balance: bigint;
  /** The pending recovery's new owner (lower-case; null: none) and when it can be finalized (D-106). */
  recoveryOwner: string | null;
  recoveryExecutableAt: Date | null;
  createdAt: Date;
  createdTxHash: string;
  /** Guardians active at the `now` of the read. */
  activeGuardians: number;
}

/** `where`: a condition on the vault `s`. */
async function vaultRows(db: Pick<Db, "prisma">, where: Prisma.Sql, now: Date): Promise<SocialVaultRecord[]> {
  const rows = await db.prisma.$queryRaw<(Omit<SocialVaultRecord, "unlockApprovers"> & { unlockApprovers: string })[]>`
    SELECT s."address", s."owner", s."dailyLimit", s."timelockDuration", s."requiredSignatures",
            s."hasDuressPin", s."locked", s."lockedAt", s."unlockRequestedAt", s."unlockApprovers", s."balance",
            s."recoveryOwner", s."recoveryExecutableAt", s."createdAt", s."createdTxHash",
            (SELECT count(*)::int FROM "SocialVaultGuardian" g
              WHERE g."chainId" = s."chainId" AND g."vault" = s."address" AND NOT g."removed" AND g."activeAt" <= ${now.toISOString()}::timestamp(3)) AS "activeGuardians"
       FROM "SocialVaultState" s
      WHERE s."chainId" = ${MIRRORED_CHAIN_ID} AND ${where}`;
  return rows.map((row) => ({
    address: row.address,
    owner: row.owner,
    dailyLimit: row.dailyLimit,
    timelockDuration: row.timelockDuration,
    requiredSignatures: row.requiredSignatures,
    hasDuressPin: row.hasDuressPin,
    locked: row.locked,
    lockedAt: row.lockedAt,
    unlockRequestedAt: row.unlockRequestedAt,
    unlockApprovers: row.unlockApprovers.split(" ").filter(Boolean),
    balance: row.balance,
    recoveryOwner: row.recoveryOwner,
    recoveryExecutableAt: row.recoveryExecutableAt,
    createdAt: row.createdAt,
    createdTxHash: row.createdTxHash,
    activeGuardians: row.activeGuardians,
  }));
}

/** The social vault a wallet owns, as the mirror holds it, with its active guardians at `now`. */
export async function vaultOfOwner(db: Pick<Db, "prisma">, ownerWallet: string, now: Date): Promise<SocialVaultRecord | null> {
  return (await vaultRows(db, Prisma.sql`s."owner" = ${ownerWallet.toLowerCase()}`, now))[0] ?? null;
}

/** The social vault at `address`, as the mirror holds it, or null. */
export async function vaultAt(db: Pick<Db, "prisma">, address: string, now: Date): Promise<SocialVaultRecord | null> {
  return (await vaultRows(db, Prisma.sql`s."address" = ${address.toLowerCase()}`, now))[0] ?? null;
}

/** The social vaults at `addresses` the mirror knows (in no particular order). */
export async function vaultsAt(db: Pick<Db, "prisma">, addresses: string[], now: Date): Promise<SocialVaultRecord[]> {
  return addresses.length === 0
    ? []
    : vaultRows(db, Prisma.sql`s."address" = ANY(${addresses.map((address) => address.toLowerCase())}::text[])`, now);
}

/** A vault a wallet guards, with that guardian's own standing in it. */
export interface GuardedVault {
  vault: string;
  owner: string;
  activeAt: Date;
  removalValidAt: Date | null;
}

/** The vaults that list `guardianWallet` as a guardian (pending, active, or with a submitted removal), oldest first. */
export async function vaultsGuardedBy(db: Pick<Db, "prisma">, guardianWallet: string): Promise<GuardedVault[]> {
  return db.prisma.$queryRaw<GuardedVault[]>`
    SELECT g."vault", s."owner", g."activeAt", g."removalValidAt"
       FROM "SocialVaultGuardian" g
       JOIN "SocialVaultState" s ON s."chainId" = g."chainId" AND s."address" = g."vault"
      WHERE g."chainId" = ${MIRRORED_CHAIN_ID} AND g."guardian" = ${guardianWallet.toLowerCase()} AND NOT g."removed"
      ORDER BY g."activeAt", g."vault"`;
}

/** The guardians of `vault` active at `at` and still listed (the lock's silent alert goes to them). */
export async function activeGuardiansOf(db: Tx, vault: string, at: Date): Promise<string[]> {
  const rows = await db.$queryRaw<{ guardian: string }[]>`
    SELECT "guardian" FROM "SocialVaultGuardian"
      WHERE "chainId" = ${MIRRORED_CHAIN_ID} AND "vault" = ${vault.toLowerCase()} AND NOT "removed" AND "activeAt" <= ${at.toISOString()}::timestamp(3)
      ORDER BY "guardian"`;
  return rows.map((row) => row.guardian);
}

export interface WithdrawalRow {
  vault: string;
  requestId: bigint;
  amount: bigint;
  recipient: string;
  executeAfter: Date;
  expiresAt: Date;
  requiredApprovals: number;
  approvals: number;
  approvers: string[];
  status: string;
  requestedAt: Date;
  requestTxHash: string;
  closedAt: Date | null;
  closedTxHash: string | null;
  owner: string;
}

/** One withdrawal request as the mirror holds it (its vault's owner too), or null. */
export async function withdrawalOf(db: Pick<Db, "prisma">, vault: string, requestId: bigint): Promise<WithdrawalRow | null> {
  const rows = await withdrawalRows(
    db,
    Prisma.sql`w."vault" = ${vault.toLowerCase()} AND w."requestId" = ${requestId.toString()}::numeric`,
  );
  return rows[0] ?? null;
}

/** The open requests (pending, or approved and waiting for the timelock) of `vaults`, oldest first. */
export async function openWithdrawalsOf(db: Pick<Db, "prisma">, vaults: string[]): Promise<WithdrawalRow[]> {
  if (vaults.length === 0) return [];
  return withdrawalRows(db, Prisma.sql`w."vault" = ANY(${vaults.map((vault) => vault.toLowerCase())}::text[]) AND w."status" = 'pending'`);
}

/** Every request of `vault`, newest first (at most `limit`). */
export async function withdrawalHistoryOf(db: Pick<Db, "prisma">, vault: string, limit = 1_000): Promise<WithdrawalRow[]> {
  return withdrawalRows(
    db,
    Prisma.sql`w."vault" = ${vault.toLowerCase()}`,
    Prisma.sql`ORDER BY w."requestedAt" DESC, w."requestId" DESC LIMIT ${limit}::int`,
  );
}

/** `where`: a condition on the request `w`; `order`: its ORDER BY (and LIMIT). */
async function withdrawalRows(
  db: Pick<Db, "prisma">,
  where: Prisma.Sql,
  order = Prisma.sql`ORDER BY w."vault", w."requestId"`,
): Promise<WithdrawalRow[]> {
  // requestId is a numeric(78, 0): read as its text, the same whichever runs the statement
  // (Prisma would read a Decimal, the plain driver a string).
  const rows = await db.prisma.$queryRaw<(Omit<WithdrawalRow, "requestId" | "approvers"> & { requestId: string; approvers: string })[]>`
    SELECT w."vault", w."requestId"::text AS "requestId", w."amount", w."recipient", w."executeAfter", w."expiresAt",
            w."requiredApprovals", w."approvals", w."approvers", w."status", w."requestedAt", w."closedAt", w."closedTxHash",
            w."requestTxHash", s."owner"
       FROM "SocialVaultWithdrawal" w
       JOIN "SocialVaultState" s ON s."chainId" = w."chainId" AND s."address" = w."vault"
      WHERE w."chainId" = ${MIRRORED_CHAIN_ID} AND ${where}
      ${order}`;
  return rows.map((row) => ({
    vault: row.vault,
    requestId: BigInt(row.requestId),
    amount: row.amount,
    recipient: getAddress(row.recipient),
    executeAfter: row.executeAfter,
    expiresAt: row.expiresAt,
    requiredApprovals: row.requiredApprovals,
    approvals: row.approvals,
    approvers: row.approvers.split(" ").filter(Boolean),
    status: row.status,
    requestedAt: row.requestedAt,
    requestTxHash: row.requestTxHash,
    closedAt: row.closedAt,
    closedTxHash: row.closedTxHash,
    owner: row.owner,
  }));
}
