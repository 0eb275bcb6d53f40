// Replacing a lost or stolen owner key (D-106, Argent's recovery): the guardians approve a new
// owner, a majority of the active ones starts the recovery (the vault locks), and after the
// vault's timelock anyone finalizes it. The old key objects, but only with a guardian's consent
// does its objection cancel. Each step is the caller's own transaction; the pending recovery and
// the owner it ends with come from the mirror.
import { getAddress, ZeroAddress } from "ethers";
import { AppError } from "../errors.js";
import type { OperationKey } from "../idempotency/operation-key.js";
import { receiptEvent, requireReceiptEvent } from "../transactions/receipts.js";
import type { UserRecord } from "../users/repo.js";
import type { SocialVaultContext } from "./context.js";
import { type SocialVaultRecord, vaultAt, vaultOfOwner } from "./repo.js";

/** More than half of the active guardians (the contract's `_recoveryThreshold`). */
export const recoveryThresholdOf = (activeGuardians: number) => Math.floor(activeGuardians / 2) + 1;

/** The pending recovery as the API shows it, or null. */
export function recoveryView(vault: SocialVaultRecord) {
  if (!vault.recoveryOwner || !vault.recoveryExecutableAt) return null;
  return { newOwnerAddress: getAddress(vault.recoveryOwner), executableAt: vault.recoveryExecutableAt.toISOString() };
}

export function createVaultRecovery({ deps, vaultContract, ownVault, send, platformContractOf }: SocialVaultContext) {
  async function vaultNamed(vaultAddress: string) {
    const vault = await vaultAt(deps.db, vaultAddress, deps.clock.now());
    if (!vault) throw new AppError("SOCIAL_VAULT_NOT_FOUND", "No such social vault");
    return vault;
  }

  /** The refusal of an owner the vault would be lost to or that the factory refuses at the end, judged before sending. */
  async function refuseNewOwner(vault: SocialVaultRecord, newOwner: string) {
    const address = newOwner.toLowerCase();
    const reason =
      address === ZeroAddress
        ? "the zero address"
        : address === vault.address || platformContractOf.has(address)
          ? "a contract that cannot use the vault"
          : address === vault.owner
            ? "the owner's own key"
            : (await vaultOfOwner(deps.db, address, deps.clock.now()))
              ? "the owner of another social vault (one vault per owner)"
              : null;
    if (reason) {
      throw new AppError("VALIDATION_ERROR", `The new owner cannot be ${reason}`, { field: "newOwnerAddress", reason });
    }
  }

  return {
    /**
     * A guardian's approval of handing the vault at `vaultAddress` to `newOwnerAddress`, with their
     * own token. The approval that makes a majority starts the recovery: `status` is `started`, the
     * vault is locked (its guardians alerted as on any lock) and `executableAt` says when it can be
     * finalized; before, `collecting`.
     */
    async approveRecovery(guardian: UserRecord, vaultAddress: string, newOwnerAddress: string, operation: OperationKey) {
      const vault = await vaultNamed(vaultAddress);
      await refuseNewOwner(vault, newOwnerAddress);
      const newOwner = getAddress(newOwnerAddress.toLowerCase());
      const contract = vaultContract(vault.address);
      const sent = await send(guardian, "social_vault.approve_recovery", operation, vault.address, {
        data: contract.interface.encodeFunctionData("approveRecovery", [newOwner]),
      });
      const { approvals } = requireReceiptEvent<{ approvals: bigint }>(contract, sent, "SocialVaultRecoveryApproved").args;
      const started = receiptEvent<{ executableAt: bigint }>(contract, sent, "SocialVaultRecoveryStarted")?.args;
      if (started && deps.alerts) await deps.alerts.take(deps.clock.now(), deps.userWrite.eventIds(sent, deps.alerts.consumer.types));
      return {
        vaultAddress: vault.address,
        newOwnerAddress: newOwner,
        approvalsReceived: Number(approvals),
        // A recovery cannot change the active guardians (a lock stops additions and removals), so the read before sending holds.
        approvalsRequired: recoveryThresholdOf(vault.activeGuardians),
        status: started ? ("started" as const) : ("collecting" as const),
        executableAt: started ? new Date(Number(started.executableAt) * 1_000).toISOString() : null,
        txHash: sent.txHash,
      };
    },

    /**
     * An objection to the pending recovery: by the owner (their own vault, or `vaultAddress`) or by
     * a guardian of `vaultAddress`. It is `cancelled` once the owner and a guardian objected, else
     * `objected`.
     */
    async cancelRecovery(user: UserRecord, vaultAddress: string | undefined, operation: OperationKey) {
      const vault = vaultAddress ? await vaultNamed(vaultAddress) : await ownVault(user);
      if (!vault.recoveryOwner) throw new AppError("CONFLICT", "No recovery is pending", { field: "vault", reason: "no recovery" });
      const contract = vaultContract(vault.address);
      const sent = await send(user, "social_vault.cancel_recovery", operation, vault.address, {
        data: contract.interface.encodeFunctionData("cancelRecovery"),
      });
      const cancelled = receiptEvent(contract, sent, "SocialVaultRecoveryCancelled") !== undefined;
      return { vaultAddress: vault.address, status: cancelled ? ("cancelled" as const) : ("objected" as const), txHash: sent.txHash };
    },

    /** Finalizes the pending recovery of `vaultAddress` once its timelock passed (any user may send it). */
    async finalizeRecovery(user: UserRecord, vaultAddress: string, operation: OperationKey) {
      const vault = await vaultNamed(vaultAddress);
      if (!vault.recoveryOwner) throw new AppError("CONFLICT", "No recovery is pending", { field: "vault", reason: "no recovery" });
      // The factory keeps one vault per owner: the guardians then approve another address.
      if (await vaultOfOwner(deps.db, vault.recoveryOwner, deps.clock.now())) {
        throw new AppError("SOCIAL_VAULT_EXISTS", "The new owner has a social vault of its own: the guardians approve another address");
      }
      const contract = vaultContract(vault.address);
      const sent = await send(user, "social_vault.finalize_recovery", operation, vault.address, {
        data: contract.interface.encodeFunctionData("finalizeRecovery"),
      });
      const { newOwner } = requireReceiptEvent<{ newOwner: string }>(contract, sent, "SocialVaultRecovered").args;
      const after = (await vaultAt(deps.db, vault.address, deps.clock.now()))!;
      return { vaultAddress: vault.address, ownerAddress: getAddress(newOwner), isLocked: after.locked, txHash: sent.txHash };
    },
  };
}
