import { getAddress } from "ethers";
import { formatUsdc2 } from "../../core/money.js";
import { withdrawalIdOf } from "../../domain/social-vault/ids.js";
import { entity, type GuardianRow, type WithdrawalRow } from "../state.js";
import { type Context, event, type Handler, handlersOf, type IndexedLog, iso, touched } from "./context.js";

// A clone's logs carry no vault argument: the vault is the log's address.
const vaultKey = (log: IndexedLog) => entity.socialVault(log.address);
const withdrawalKey = (log: IndexedLog, id: bigint) => entity.withdrawal(log.address, id);
const ownerOf = (ctx: Context, log: IndexedLog) => ctx.state.vaults.get(vaultKey(log))?.owner ?? null;

/** The factory: a new clone's row (its initializer's logs are applied after it, see `applyLogs`). */
export const socialVaultFactoryHandlers = handlersOf("socialVaultFactory", {
  SocialVaultCreated: {
    entities: ({ vault }) => [entity.socialVault(vault)],
    apply(ctx, { owner, vault, dailyLimit, timelockDuration, requiredSignatures }, log) {
      const key = entity.socialVault(vault);
      if (!ctx.state.inScope(key)) return;
      const existing = ctx.state.vaults.get(key);
      // USDC sent to the address before its creation is its balance from the start (D-93).
      const early = ctx.state.early.get(key) ?? 0n;
      ctx.state.early.delete(key);
      ctx.state.vaults.set(key, {
        address: vault,
        owner,
        dailyLimit,
        timelockDuration: Number(timelockDuration),
        requiredSignatures: Number(requiredSignatures),
        hasDuressPin: existing?.hasDuressPin ?? false,
        locked: false,
        lockedAt: null,
        unlockRequestedAt: null,
        unlockApprovers: [],
        balance: (existing?.balance ?? 0n) + early,
        recoveryOwner: null,
        recoveryExecutableAt: null,
        createdAt: log.timestamp,
        createdTxHash: log.txHash,
        updatedBlock: log.blockNumber,
      });
      ctx.state.touch(key);
    },
  },
});

function closeWithdrawal(ctx: Context, log: IndexedLog, id: bigint, status: WithdrawalRow["status"]): void {
  const row = touched(ctx, ctx.state.withdrawals, withdrawalKey(log, id), log.blockNumber);
  if (row) {
    row.status = status;
    row.closedAt = log.timestamp;
    row.closedTxHash = log.txHash;
  }
}

/** A withdrawal request that ends without paying out. */
const closing = (status: "cancelled" | "expired"): Handler<{ id: bigint }> => ({
  entities: ({ id }, log) => [withdrawalKey(log, id)],
  apply: (ctx, { id }, log) => closeWithdrawal(ctx, log, id, status),
});

/** An event whose guardian argument names the only row it changes. */
const guardianChange = <Args extends { guardian: string }>(change: (row: GuardianRow, args: Args) => void): Handler<Args> => ({
  entities: ({ guardian }, log) => [entity.guardian(log.address, guardian)],
  apply(ctx, args, log) {
    const row = touched(ctx, ctx.state.guardians, entity.guardian(log.address, args.guardian), log.blockNumber);
    if (row) change(row, args);
  },
});

/** An event that changes the vault's own row. */
const vaultChange = <Args>(apply: Handler<Args>["apply"]): Handler<Args> => ({ entities: (_args, log) => [vaultKey(log)], apply });

/** A clone: withdrawal requests and their approvals, lock, configuration, guardians. */
export const socialVaultHandlers = handlersOf("socialVault", {
  SocialVaultWithdrawalRequested: {
    entities: ({ id }, log) => [withdrawalKey(log, id)],
    apply(ctx, { id, amount, recipient, executeAfter, expiresAt, requiredApprovals }, log) {
      const key = withdrawalKey(log, id);
      if (ctx.state.inScope(key)) {
        ctx.state.withdrawals.set(key, {
          vault: log.address,
          requestId: id,
          amount,
          recipient,
          executeAfter: Number(executeAfter),
          expiresAt: Number(expiresAt),
          requiredApprovals: Number(requiredApprovals),
          approvals: 0,
          approvers: [],
          status: "pending",
          requestedAt: log.timestamp,
          requestTxHash: log.txHash,
          closedTxHash: null,
          closedAt: null,
          updatedBlock: log.blockNumber,
        });
        ctx.state.touch(key);
      }
      event(ctx, log, "social_vault.withdrawal_requested", ownerOf(ctx, log), () => ({
        withdrawalId: withdrawalIdOf(log.address, id),
        amount: formatUsdc2(amount),
        // As the API shows it (checksummed); the mirror's rows keep the lower-case form.
        recipient: getAddress(recipient),
        requiredApprovals: Number(requiredApprovals),
        executeAfter: iso(Number(executeAfter)),
        expiresAt: iso(Number(expiresAt)),
        raw: { vault: log.address, requestId: id, amount },
      }));
    },
  },
  SocialVaultWithdrawalApproved: {
    entities: ({ id }, log) => [withdrawalKey(log, id)],
    apply(ctx, { id, guardian, totalApprovals }, log) {
      const row = touched(ctx, ctx.state.withdrawals, withdrawalKey(log, id), log.blockNumber);
      if (row) {
        row.approvals = Number(totalApprovals);
        if (!row.approvers.includes(guardian)) row.approvers.push(guardian);
      }
      event(
        ctx,
        log,
        "social_vault.withdrawal_approved",
        ownerOf(ctx, log),
        (userOf) => ({
          withdrawalId: withdrawalIdOf(log.address, id),
          approver: userOf(guardian) ?? guardian,
          approverAddress: guardian,
          totalApprovals: Number(totalApprovals),
          raw: { vault: log.address, requestId: id },
        }),
        [guardian],
      );
    },
  },
  SocialVaultWithdrawalApprovalRevoked: {
    entities: ({ id }, log) => [withdrawalKey(log, id)],
    apply(ctx, { id, guardian, totalApprovals }, log) {
      const row = touched(ctx, ctx.state.withdrawals, withdrawalKey(log, id), log.blockNumber);
      if (row) {
        row.approvals = Number(totalApprovals);
        row.approvers = row.approvers.filter((g) => g !== guardian);
      }
    },
  },
  SocialVaultWithdrawalExecuted: {
    entities: ({ id }, log) => [withdrawalKey(log, id)],
    apply(ctx, { id, amount, recipient }, log) {
      closeWithdrawal(ctx, log, id, "executed");
      event(ctx, log, "social_vault.withdrawal_executed", ownerOf(ctx, log), () => ({
        withdrawalId: withdrawalIdOf(log.address, id),
        amount: formatUsdc2(amount),
        recipient: getAddress(recipient),
        txHash: log.txHash,
        raw: { vault: log.address, requestId: id, amount },
      }));
    },
  },
  SocialVaultWithdrawalCancelled: closing("cancelled"),
  SocialVaultWithdrawalExpired: closing("expired"),
  SocialVaultLocked: vaultChange((ctx, { lockedAt }, log) => {
    const row = touched(ctx, ctx.state.vaults, vaultKey(log), log.blockNumber);
    if (row) {
      row.locked = true;
      row.lockedAt = Number(lockedAt);
      row.unlockRequestedAt = null;
      row.unlockApprovers = [];
    }
    const owner = ownerOf(ctx, log);
    event(ctx, log, "social_vault.locked", owner, (userOf) => ({
      vaultOwner: owner ? (userOf(owner) ?? owner) : null,
      vaultAddress: log.address,
      lockedAt: iso(Number(lockedAt)),
    }));
  }),
  SocialVaultUnlocked: vaultChange((ctx, _args, log) => {
    const row = touched(ctx, ctx.state.vaults, vaultKey(log), log.blockNumber);
    if (row) {
      row.locked = false;
      row.lockedAt = null;
      row.unlockRequestedAt = null;
      row.unlockApprovers = [];
    }
  }),
  SocialVaultUnlockRequested: vaultChange((ctx, _args, log) => {
    const row = touched(ctx, ctx.state.vaults, vaultKey(log), log.blockNumber);
    if (row) {
      row.unlockRequestedAt = log.timestamp;
      row.unlockApprovers = [];
    }
  }),
  SocialVaultUnlockApproved: vaultChange((ctx, { guardian }: { guardian: string }, log) => {
    const row = touched(ctx, ctx.state.vaults, vaultKey(log), log.blockNumber);
    if (row && !row.unlockApprovers.includes(guardian)) row.unlockApprovers.push(guardian);
  }),
  SocialVaultDuressCommitmentSet: vaultChange((ctx, { commitment }, log) => {
    const row = touched(ctx, ctx.state.vaults, vaultKey(log), log.blockNumber);
    if (row) row.hasDuressPin = BigInt(commitment) !== 0n;
  }),
  SocialVaultConfigUpdated: vaultChange((ctx, { parameter, value }, log) => {
    const row = touched(ctx, ctx.state.vaults, vaultKey(log), log.blockNumber);
    if (!row) return;
    // ISocialVault.ConfigParameter: DailyLimit, TimelockDuration, RequiredSignatures.
    if (parameter === 0n) row.dailyLimit = value;
    else if (parameter === 1n) row.timelockDuration = Number(value);
    else if (parameter === 2n) row.requiredSignatures = Number(value);
  }),
  // A recovery (D-106): the guardians' approvals are the contract's (recoveryApprovalOf); the mirror keeps the
  // pending recovery and the owner it ends with.
  SocialVaultRecoveryStarted: vaultChange((ctx, { newOwner, executableAt }, log) => {
    const row = touched(ctx, ctx.state.vaults, vaultKey(log), log.blockNumber);
    if (row) {
      row.recoveryOwner = newOwner;
      row.recoveryExecutableAt = Number(executableAt);
    }
  }),
  SocialVaultRecoveryCancelled: vaultChange((ctx, _args, log) => {
    const row = touched(ctx, ctx.state.vaults, vaultKey(log), log.blockNumber);
    if (row) {
      row.recoveryOwner = null;
      row.recoveryExecutableAt = null;
    }
  }),
  SocialVaultRecovered: vaultChange((ctx, { newOwner }, log) => {
    const row = touched(ctx, ctx.state.vaults, vaultKey(log), log.blockNumber);
    if (row) {
      row.owner = newOwner;
      row.recoveryOwner = null;
      row.recoveryExecutableAt = null;
    }
  }),
  SocialVaultGuardianAdded: {
    entities: ({ guardian }, log) => [entity.guardian(log.address, guardian)],
    apply(ctx, { guardian, activeAt }, log) {
      const key = entity.guardian(log.address, guardian);
      if (ctx.state.inScope(key)) {
        ctx.state.guardians.set(key, {
          vault: log.address,
          guardian,
          activeAt: Number(activeAt),
          removalValidAt: null,
          removed: false,
          addedTxHash: log.txHash,
          updatedBlock: log.blockNumber,
        });
        ctx.state.touch(key);
      }
      event(
        ctx,
        log,
        "user.guardian_added",
        ownerOf(ctx, log),
        (userOf) => ({
          vaultAddress: log.address,
          guardianAddress: guardian,
          guardianUserId: userOf(guardian),
          activeAt: iso(Number(activeAt)),
        }),
        [guardian],
      );
    },
  },
  SocialVaultGuardianRemovalSubmitted: guardianChange((row, { validAt }) => {
    row.removalValidAt = Number(validAt);
  }),
  SocialVaultGuardianRemovalRevoked: guardianChange((row) => {
    row.removalValidAt = null;
  }),
  SocialVaultGuardianRemoved: guardianChange((row) => {
    row.removed = true;
    row.removalValidAt = null;
  }),
});
