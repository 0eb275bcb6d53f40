// Locking a social vault: the duress lock (the PIN's key, never stored), unlocking with the
// guardians' approvals, and setting the duress PIN.
import { AppError } from "../errors.js";
import type { OperationKey } from "../idempotency/operation-key.js";
import { requireReceiptEvent } from "../transactions/receipts.js";
import type { UserRecord } from "../users/repo.js";
import { duressCommitmentOf, duressKeyOf, type SocialVaultContext } from "./context.js";
import { vaultAt, vaultOfOwner } from "./repo.js";
import { unlockView } from "./views.js";

export function createVaultLocks({ deps, vaultContract, refuseLocked, ownVault, send }: SocialVaultContext) {
  return {
    /**
     * The duress lock: the PIN gives the duress key (duressKeyOf), which the contract checks against
     * its commitment; the lock cancels every open request, and each guardian gets a
     * `social_vault.guardian_alert` event of their own (alerts.ts; the notifications deliver it
     * silently). The key is spent by the contract: after an unlock the owner sets a new PIN
     * (setDuressPin).
     */
    async lock(user: UserRecord, duressPin: string, operation: OperationKey) {
      const vault = await ownVault(user);
      refuseLocked(vault);
      const contract = vaultContract(vault.address);
      const key = duressKeyOf(deps.privateKeyOf(user.walletIndex), vault.address, duressPin);
      const sent = await send(user, "social_vault.lock", operation, vault.address, {
        data: contract.interface.encodeFunctionData("duressLock", [key]),
      });
      const { lockedAt } = requireReceiptEvent<{ lockedAt: bigint }>(contract, sent, "SocialVaultLocked").args;
      // The alerts' page job records them too; here they exist when the lock answers.
      if (deps.alerts) await deps.alerts.take(deps.clock.now(), deps.userWrite.eventIds(sent, deps.alerts.consumer.types));
      return {
        status: "locked" as const,
        lockedAt: new Date(Number(lockedAt) * 1_000).toISOString(),
        guardiansNotified: vault.activeGuardians > 0,
      };
    },

    /**
     * The way back from a lock: the first call asks for the unlock (`unlock_requested`, with when
     * guardians' approvals can unlock it, after the vault's timelock, and when the owner alone can,
     * after 30 days); a later call unlocks once either holds (TIMELOCK_ACTIVE before).
     */
    async unlock(user: UserRecord, operation: OperationKey) {
      const vault = await ownVault(user);
      if (!vault.locked) throw new AppError("CONFLICT", "Your social vault is not locked", { field: "vault", reason: "not locked" });
      const contract = vaultContract(vault.address);
      // The first call asks for the unlock; once it was asked for (the mirror's request of this lock), a call unlocks.
      const sent = vault.unlockRequestedAt
        ? await send(user, "social_vault.unlock", operation, vault.address, {
            data: contract.interface.encodeFunctionData("unlock"),
          })
        : await send(user, "social_vault.request_unlock", operation, vault.address, {
            data: contract.interface.encodeFunctionData("requestUnlock"),
          });
      const after = (await vaultOfOwner(deps.db, user.walletAddress, deps.clock.now()))!;
      const request = unlockView(after);
      return {
        status: after.locked ? ("unlock_requested" as const) : ("unlocked" as const),
        guardiansCanUnlockAt: request?.guardiansCanUnlockAt ?? null,
        ownerCanUnlockAt: request?.ownerCanUnlockAt ?? null,
        approvalsReceived: request?.approvalsReceived ?? 0,
        approvalsRequired: after.requiredSignatures,
        txHash: sent.txHash,
      };
    },

    /** A guardian's approval of a requested unlock of the vault at `vaultAddress`, with their own token. */
    async approveUnlock(guardian: UserRecord, vaultAddress: string, operation: OperationKey) {
      const vault = await vaultAt(deps.db, vaultAddress, deps.clock.now());
      if (!vault) throw new AppError("SOCIAL_VAULT_NOT_FOUND", "No such social vault");
      const contract = vaultContract(vault.address);
      const sent = await send(guardian, "social_vault.approve_unlock", operation, vault.address, {
        data: contract.interface.encodeFunctionData("approveUnlock"),
      });
      const { totalApprovals } = requireReceiptEvent<{ totalApprovals: bigint }>(contract, sent, "SocialVaultUnlockApproved").args;
      return { vaultAddress: vault.address, approvalsReceived: Number(totalApprovals), txHash: sent.txHash };
    },

    /**
     * Sets a new duress PIN: after an unlock (the lock spent the old one) or to change it, when the
     * current PIN is given and matches the contract's commitment (checked with a read, nothing is
     * sent on a wrong one: 403 without detail, as at the lock).
     */
    async setDuressPin(user: UserRecord, input: { duressPin: string; currentPin?: string | undefined }, operation: OperationKey) {
      const vault = await ownVault(user);
      const contract = vaultContract(vault.address);
      const privateKey = deps.privateKeyOf(user.walletIndex);
      const current = (await contract.duressCommitment()) as string;
      if (BigInt(current) !== 0n) {
        if (!input.currentPin || duressCommitmentOf(duressKeyOf(privateKey, vault.address, input.currentPin)) !== current) {
          throw new AppError("FORBIDDEN", "The PIN was not accepted");
        }
      }
      const commitment = duressCommitmentOf(duressKeyOf(privateKey, vault.address, input.duressPin));
      const sent = await send(user, "social_vault.set_duress_pin", operation, vault.address, {
        data: contract.interface.encodeFunctionData("setDuressCommitment", [commitment]),
      });
      return { hasDuressPin: true as const, txHash: sent.txHash };
    },
  };
}
