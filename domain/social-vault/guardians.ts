// A social vault's guardians: the vaults a user guards, the owner's list, adding a guardian
// (active after the timelock), removing one (at once while pending, after the timelock when active).

import { getAddress } from "ethers";
import type { OperationKey } from "../idempotency/operation-key.js";
import { receiptEvent, requireReceiptEvent } from "../transactions/receipts.js";
import { liveUsersByWallet, type UserRecord } from "../users/repo.js";
import type { SocialVaultContext } from "./context.js";
import { recoveryView } from "./recovery.js";
import { guardiansOfOwner, openWithdrawalsOf, vaultsAt, vaultsGuardedBy } from "./repo.js";
import { unlockView, withdrawalView } from "./views.js";

export function createVaultGuardians({ deps, vaultContract, refuseLocked, listedGuardian, ownVault, send }: SocialVaultContext) {
  return {
    /**
     * What waits for a guardian: the vaults whose guardian the caller's wallet is, each with the
     * caller's standing (pending until active, removableAt once a removal was submitted), its
     * lock and unlock request, and its open withdrawal requests with whether the caller approved.
     */
    async guarding(user: UserRecord) {
      const wallet = user.walletAddress.toLowerCase();
      const now = deps.clock.now();
      const guarded = await vaultsGuardedBy(deps.db, wallet);
      if (guarded.length === 0) return [];
      const [vaults, open, owners] = await Promise.all([
        vaultsAt(
          deps.db,
          guarded.map((entry) => entry.vault),
          now,
        ),
        openWithdrawalsOf(
          deps.db,
          guarded.map((entry) => entry.vault),
        ),
        liveUsersByWallet(
          deps.db.prisma,
          guarded.map((entry) => entry.owner),
        ),
      ]);
      const ownerByWallet = new Map(owners.map((owner) => [owner.walletAddress.toLowerCase(), owner]));
      return guarded.map((entry) => {
        const vault = vaults.find((row) => row.address === entry.vault)!;
        const owner = ownerByWallet.get(entry.owner);
        return {
          vaultAddress: entry.vault,
          owner: { id: owner?.id ?? getAddress(entry.owner), displayName: owner?.displayName ?? getAddress(entry.owner) },
          guardianStatus: entry.activeAt <= now ? ("active" as const) : ("pending" as const),
          activeAt: entry.activeAt.toISOString(),
          removableAt: entry.removalValidAt?.toISOString() ?? null,
          isLocked: vault.locked,
          unlock: unlockView(vault, wallet),
          recovery: recoveryView(vault),
          withdrawals: open
            .filter((row) => row.vault === entry.vault && row.expiresAt > now)
            .map((row) => ({ ...withdrawalView(row, now), approvedByYou: row.approvers.includes(wallet) })),
        };
      });
    },

    /** The vault's guardians, oldest first: `pending` until the vault's timelock since they were added, then `active`. */
    async guardians(user: UserRecord) {
      await ownVault(user);
      return guardiansOfOwner(deps.db.prisma, user.walletAddress, deps.clock.now());
    },

    /**
     * Adds a guardian by wallet address (a platform user's managed wallet or any other): pending
     * until the vault's timelock has passed, so a hijacked session cannot install its own guardians
     * and use them at once.
     */
    async addGuardian(user: UserRecord, walletAddress: string, operation: OperationKey) {
      const vault = await ownVault(user);
      refuseLocked(vault);
      const guardian = getAddress(walletAddress.toLowerCase());
      const contract = vaultContract(vault.address);
      const sent = await send(user, "social_vault.add_guardian", operation, vault.address, {
        data: contract.interface.encodeFunctionData("addGuardian", [guardian]),
      });
      const added = requireReceiptEvent<{ activeAt: bigint }>(contract, sent, "SocialVaultGuardianAdded").args;
      const view = (await guardiansOfOwner(deps.db.prisma, user.walletAddress, deps.clock.now())).find(
        (entry) => entry.walletAddress === guardian,
      )!;
      return { ...view, activeAt: new Date(Number(added.activeAt) * 1_000).toISOString(), txHash: sent.txHash };
    },

    /**
     * Removes a guardian (by its id: a user id, or the address): a pending one at once; an active
     * one in two steps: the first call submits the removal (the guardian keeps its power until the
     * vault's timelock has passed, as a coerced owner could otherwise strip the vault's protection
     * in one step), a call after `removableAt` completes it (TIMELOCK_ACTIVE before). Its approvals
     * of open requests stop counting then: an approved request may be pending again.
     */
    async removeGuardian(user: UserRecord, guardianId: string, operation: OperationKey) {
      const vault = await ownVault(user);
      refuseLocked(vault);
      const target = await listedGuardian(user, guardianId);
      const contract = vaultContract(vault.address);
      const step = target.removableAt ? "acceptGuardianRemoval" : "removeGuardian";
      const sent = await send(
        user,
        `social_vault.${step === "removeGuardian" ? "remove_guardian" : "accept_guardian_removal"}`,
        operation,
        vault.address,
        {
          data: contract.interface.encodeFunctionData(step, [target.walletAddress]),
        },
      );
      // Only an active guardian's removal is submitted (and waits); a pending one is removed at once.
      const submitted = receiptEvent<{ validAt: bigint }>(contract, sent, "SocialVaultGuardianRemovalSubmitted");
      const validAt = submitted ? Number(submitted.args.validAt) : null;
      return {
        guardianId: target.id,
        walletAddress: target.walletAddress,
        status: validAt === null ? ("removed" as const) : ("removal_pending" as const),
        removableAt: validAt === null ? null : new Date(validAt * 1_000).toISOString(),
        txHash: sent.txHash,
      };
    },

    /** Withdraws a submitted removal: the guardian stays, active, with nothing pending (CONFLICT when none was submitted). */
    async keepGuardian(user: UserRecord, guardianId: string, operation: OperationKey) {
      const vault = await ownVault(user);
      const target = await listedGuardian(user, guardianId);
      const contract = vaultContract(vault.address);
      const sent = await send(user, "social_vault.keep_guardian", operation, vault.address, {
        data: contract.interface.encodeFunctionData("revokeGuardianRemoval", [target.walletAddress]),
      });
      return { ...target, removableAt: null, txHash: sent.txHash };
    },
  };
}
