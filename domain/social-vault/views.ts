// How the social vault's mirrored rows read in the API and the export (service-spec part 2):
// money as two-decimal strings, times as ISO 8601, a request's status at `now`.
import { getAddress } from "ethers";
import { formatUsdc2 } from "../../core/money.js";
import type { Db } from "../db.js";
import { withdrawalIdOf } from "./ids.js";
import {
  guardiansOfOwner,
  type SocialVaultRecord,
  vaultOfOwner,
  vaultsGuardedBy,
  type WithdrawalRow,
  withdrawalHistoryOf,
} from "./repo.js";

/** SocialVault.OWNER_UNLOCK_DELAY: without guardian approvals the owner alone unlocks 30 days after asking. */
const OWNER_UNLOCK_DELAY_S = 30 * 86_400;

/** A withdrawal's states (part 3, and `expired` past its execution window: D-71). */
export type WithdrawalStatus = "pending" | "approved" | "executed" | "cancelled" | "expired";

/**
 * A request's status at `now`: the mirror keeps an open request `pending` until the chain closes
 * it; the view calls it `approved` once its approvals are in, and `expired` once its execution
 * window has passed (the contract refuses to execute it from then on, and marks it expired when
 * its slot is reused or the vault is locked).
 */
export function statusOf(row: WithdrawalRow, now: Date): WithdrawalStatus {
  if (row.status !== "pending") return row.status as WithdrawalStatus;
  if (row.expiresAt <= now) return "expired";
  return row.approvals >= row.requiredApprovals ? "approved" : "pending";
}

/** A withdrawal request as the API shows it (part 2). */
export function withdrawalView(row: WithdrawalRow, now: Date) {
  const status = statusOf(row, now);
  return {
    withdrawalId: withdrawalIdOf(row.vault, row.requestId),
    amount: formatUsdc2(row.amount),
    recipient: row.recipient,
    status,
    approvalsRequired: row.requiredApprovals,
    approvalsReceived: row.approvals,
    executeAfter: row.executeAfter.toISOString(),
    expiresAt: row.expiresAt.toISOString(),
  };
}

/** A request with its history (the owner's list and detail, the export). */
export function withdrawalRecordView(row: WithdrawalRow, now: Date, guardianIdOf: (address: string) => string) {
  return {
    ...withdrawalView(row, now),
    approvers: row.approvers.map(guardianIdOf),
    requestedAt: row.requestedAt.toISOString(),
    requestTxHash: row.requestTxHash,
    closedAt: row.closedAt?.toISOString() ?? null,
    closedTxHash: row.closedTxHash,
  };
}

/** A locked vault's unlock request as a guardian sees it (null when not locked or not asked for). */
export function unlockView(vault: SocialVaultRecord, guardianWallet = "") {
  if (!vault.locked || !vault.unlockRequestedAt) return null;
  const requested = vault.unlockRequestedAt.getTime();
  return {
    requestedAt: vault.unlockRequestedAt.toISOString(),
    approvalsReceived: vault.unlockApprovers.length,
    approvalsRequired: vault.requiredSignatures,
    guardiansCanUnlockAt: new Date(requested + vault.timelockDuration * 1_000).toISOString(),
    ownerCanUnlockAt: new Date(requested + OWNER_UNLOCK_DELAY_S * 1_000).toISOString(),
    approvedByYou: vault.unlockApprovers.includes(guardianWallet.toLowerCase()),
  };
}

/** A guardian's id as the owner's list shows it (a user id, else the address), by address. */
export async function guardianIdsOf(db: Pick<Db, "prisma">, ownerWallet: string, now: Date) {
  const guardians = await guardiansOfOwner(db.prisma, ownerWallet, now);
  const idOf = new Map(guardians.map((g) => [g.walletAddress.toLowerCase(), g.id]));
  return (address: string) => idOf.get(address.toLowerCase()) ?? getAddress(address);
}

/** The export's social vault part: the user's vault (null without one) with every request, and the vaults they guard. */
export async function socialVaultExport(db: Pick<Db, "prisma">, wallet: string, now: Date) {
  const [vault, guarding] = await Promise.all([vaultOfOwner(db, wallet, now), vaultsGuardedBy(db, wallet)]);
  const withdrawals = vault ? await withdrawalHistoryOf(db, vault.address) : [];
  const idOf = await guardianIdsOf(db, wallet, now);
  return {
    vault: vault && {
      vaultAddress: vault.address,
      dailyLimit: formatUsdc2(vault.dailyLimit),
      timelockDuration: vault.timelockDuration,
      requiredSignatures: vault.requiredSignatures,
      balance: formatUsdc2(vault.balance),
      isLocked: vault.locked,
      lockedAt: vault.lockedAt?.toISOString() ?? null,
      hasDuressPin: vault.hasDuressPin,
      createdAt: vault.createdAt.toISOString(),
      createdTxHash: vault.createdTxHash,
    },
    withdrawals: withdrawals.map((row) => withdrawalRecordView(row, now, idOf)),
    guarding: guarding.map((entry) => ({
      vaultAddress: entry.vault,
      activeAt: entry.activeAt.toISOString(),
      removableAt: entry.removalValidAt?.toISOString() ?? null,
    })),
  };
}

export type SocialVaultExport = Awaited<ReturnType<typeof socialVaultExport>>;
