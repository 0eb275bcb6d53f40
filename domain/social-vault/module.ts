// The social vault's manifest (domain/module.ts).
import { z } from "zod";
import { address, defineEvent, integerAmount, isoTime, txHash, usdc2, userRef } from "../events/define.js";
import { defineModule } from "../module.js";

const withdrawalRef = z.object({ vault: address, requestId: integerAmount });

export const socialVaultModule = defineModule({
  name: "social-vault",
  errors: {
    SOCIAL_VAULT_EXISTS: 409,
    SOCIAL_VAULT_NOT_FOUND: 404,
    INVALID_GUARDIAN: 400,
    GUARDIAN_EXISTS: 409,
    GUARDIAN_LIMIT_REACHED: 409,
    GUARDIAN_NOT_FOUND: 404,
    WITHDRAWAL_NOT_FOUND: 404,
    NOT_ENOUGH_GUARDIANS: 409,
    WITHDRAWAL_EXPIRED: 409,
    DAILY_LIMIT_EXCEEDED: 400,
    VAULT_LOCKED: 400,
    NOT_GUARDIAN: 403,
    TIMELOCK_ACTIVE: 409,
  },
  tables: { SocialVaultState: "state", SocialVaultGuardian: "state", SocialVaultWithdrawal: "state" },
  consumers: ["guardian-alerts"],
  contracts: {
    socialVaultFactory: { relay: ["createVault"] },
    // Clones of one implementation, at the addresses the factory gives: relayed to the vaults the mirror knows.
    socialVault: {
      relay: [
        "depositWithPermit",
        "deposit",
        "withdraw",
        "requestWithdrawal",
        "approveWithdrawal",
        "executeWithdrawal",
        "cancelWithdrawal",
        "lock",
        "duressLock",
        "requestUnlock",
        "approveUnlock",
        "unlock",
        "addGuardian",
        "removeGuardian",
        "acceptGuardianRemoval",
        "revokeGuardianRemoval",
        "setDuressCommitment",
        "approveRecovery",
        "cancelRecovery",
        "finalizeRecovery",
      ],
    },
  },
  routeTag: "Social vault",
  events: {
    "social_vault.withdrawal_requested": defineEvent({
      source: "chain",
      webhook: true,
      description: "A withdrawal above the daily limit waits for guardian approvals and its timelock.",
      data: z.object({
        withdrawalId: z.string(),
        amount: usdc2,
        recipient: address,
        requiredApprovals: z.number().int(),
        executeAfter: isoTime,
        expiresAt: isoTime,
      }),
      raw: withdrawalRef.extend({ amount: integerAmount }),
    }),
    "social_vault.withdrawal_approved": defineEvent({
      source: "chain",
      webhook: true,
      description: "A guardian approved a pending withdrawal.",
      data: z.object({ withdrawalId: z.string(), approver: z.string(), approverAddress: address, totalApprovals: z.number().int() }),
      raw: withdrawalRef,
    }),
    "social_vault.withdrawal_executed": defineEvent({
      source: "chain",
      webhook: true,
      description: "An approved withdrawal was executed after its timelock.",
      data: z.object({ withdrawalId: z.string(), amount: usdc2, recipient: address, txHash }),
      raw: withdrawalRef.extend({ amount: integerAmount }),
    }),
    "social_vault.locked": defineEvent({
      source: "chain",
      webhook: true,
      description: "The vault was locked (the owner's duress PIN, or a guardian); its open withdrawal requests were closed.",
      data: z.object({ vaultOwner: z.string().nullable(), vaultAddress: address, lockedAt: isoTime }),
    }),
    "social_vault.guardian_alert": defineEvent({
      source: "service",
      webhook: { as: "social_vault.locked" },
      description:
        "The silent alert of a lock, one per guardian who is a platform user (addressed to the guardian, never to the owner): the vault was locked, maybe under duress.",
      data: z.object({
        vaultAddress: address,
        vaultOwner: userRef,
        guardianAddress: address,
        reason: z.literal("locked"),
        lockedAt: isoTime,
      }),
    }),
    "user.guardian_added": defineEvent({
      source: "chain",
      webhook: true,
      description: "A guardian was added to a social vault; it becomes active at activeAt.",
      data: z.object({ vaultAddress: address, guardianAddress: address, guardianUserId: userRef, activeAt: isoTime }),
    }),
  },
});
