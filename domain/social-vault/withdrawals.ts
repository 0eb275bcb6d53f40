// Withdrawals from a social vault: instant ones within the rolling daily limit, and guarded
// requests (timelock and guardians' approvals) with their lists, approval, execution and cancellation.
import { formatUsdc2 } from "../../core/money.js";
import { AppError } from "../errors.js";
import type { OperationKey } from "../idempotency/operation-key.js";
import { requireReceiptEvent } from "../transactions/receipts.js";
import type { UserRecord } from "../users/repo.js";
import type { SocialVaultContext } from "./context.js";
import { openWithdrawalsOf, vaultOfOwner, vaultsGuardedBy, withdrawalHistoryOf, withdrawalOf } from "./repo.js";
import { guardianIdsOf, withdrawalRecordView, withdrawalView } from "./views.js";

export function createVaultWithdrawals({
  deps,
  vaultContract,
  recipientRefusal,
  refuseLocked,
  refuseOverLimit,
  checkMinimum,
  withdrawalByPublicId,
  ownVault,
  send,
}: SocialVaultContext) {
  return {
    /**
     * Asks for a withdrawal above the daily limit: it needs the vault's required guardian
     * approvals and waits out its timelock (executeAfter), then the owner executes it within the
     * contract's execution window (expiresAt), after which it is `expired`. An amount the instant
     * path would send now is refused (VALIDATION_ERROR, nothing sent): it would only wait for
     * guardians and a timelock for nothing.
     */
    async requestWithdrawal(user: UserRecord, amount: bigint, recipient: string, operation: OperationKey) {
      const vault = await ownVault(user);
      refuseLocked(vault);
      checkMinimum(amount, "withdrawal", vault.balance);
      const refused = recipientRefusal(recipient, vault.address);
      if (refused) throw refused;
      const contract = vaultContract(vault.address);
      // The contract's own figure: what withdraw() would allow now (the limit less the rolling window's spending).
      const remaining = (await contract.remainingDailyLimit()) as bigint;
      if (amount <= remaining) {
        const reason = `within today's remaining limit of ${formatUsdc2(remaining)} USDC: use POST /v1/social-vault/withdraw/instant`;
        throw new AppError(
          "VALIDATION_ERROR",
          `${formatUsdc2(amount)} USDC may leave at once (today's remaining limit is ${formatUsdc2(remaining)} USDC): send it with POST /v1/social-vault/withdraw/instant; a request is for amounts above it`,
          { field: "amount", reason },
        );
      }
      const sent = await send(user, "social_vault.request_withdrawal", operation, vault.address, {
        data: contract.interface.encodeFunctionData("requestWithdrawal", [amount, recipient]),
      });
      const { id } = requireReceiptEvent<{ id: bigint }>(contract, sent, "SocialVaultWithdrawalRequested").args;
      return withdrawalView((await withdrawalOf(deps.db, vault.address, id))!, deps.clock.now());
    },

    /** The vault's open requests, oldest first, with the ids of the guardians who approved. */
    async pendingWithdrawals(user: UserRecord) {
      const vault = await ownVault(user);
      const now = deps.clock.now();
      const idOf = await guardianIdsOf(deps.db, user.walletAddress, now);
      return (await openWithdrawalsOf(deps.db, [vault.address]))
        .filter((row) => row.expiresAt > now)
        .map((row) => {
          const { expiresAt: _, ...view } = withdrawalView(row, now);
          return { ...view, approvers: row.approvers.map(idOf) };
        });
    },

    /** Every request of the owner's vault, newest first, with its status at now (expired ones too). */
    async withdrawals(user: UserRecord) {
      const vault = await ownVault(user);
      const now = deps.clock.now();
      const idOf = await guardianIdsOf(deps.db, user.walletAddress, now);
      return (await withdrawalHistoryOf(deps.db, vault.address)).map((row) => withdrawalRecordView(row, now, idOf));
    },

    /** One request, for its vault's owner or one of the vault's guardians (404 to anyone else). */
    async withdrawal(user: UserRecord, withdrawalId: string) {
      const row = await withdrawalByPublicId(withdrawalId);
      const wallet = user.walletAddress.toLowerCase();
      const guarded = row.owner !== wallet && (await vaultsGuardedBy(deps.db, wallet)).some((entry) => entry.vault === row.vault);
      if (row.owner !== wallet && !guarded) throw new AppError("WITHDRAWAL_NOT_FOUND", "No such withdrawal");
      const now = deps.clock.now();
      const idOf = await guardianIdsOf(deps.db, row.owner, now);
      return { ...withdrawalRecordView(row, now, idOf), vaultAddress: row.vault };
    },

    /** A guardian's approval, with their own token: their managed wallet sends approveWithdrawal on the owner's vault. */
    async approveWithdrawal(guardian: UserRecord, withdrawalId: string, operation: OperationKey) {
      const row = await withdrawalByPublicId(withdrawalId);
      const contract = vaultContract(row.vault);
      await send(guardian, "social_vault.approve_withdrawal", operation, row.vault, {
        data: contract.interface.encodeFunctionData("approveWithdrawal", [row.requestId]),
      });
      const after = (await withdrawalOf(deps.db, row.vault, row.requestId))!;
      const view = withdrawalView(after, deps.clock.now());
      return {
        withdrawalId: view.withdrawalId,
        approvalsReceived: view.approvalsReceived,
        approvalsRequired: view.approvalsRequired,
        status: view.status,
        canExecuteAt: view.executeAfter,
      };
    },

    /** Executes an approved request once its timelock has passed (TIMELOCK_ACTIVE before). */
    async executeWithdrawal(user: UserRecord, withdrawalId: string, operation: OperationKey) {
      const vault = await ownVault(user);
      refuseLocked(vault);
      const row = await withdrawalByPublicId(withdrawalId, vault.address);
      const contract = vaultContract(vault.address);
      const sent = await send(user, "social_vault.execute_withdrawal", operation, vault.address, {
        data: contract.interface.encodeFunctionData("executeWithdrawal", [row.requestId]),
      });
      const after = (await vaultOfOwner(deps.db, user.walletAddress, deps.clock.now()))!;
      return {
        withdrawalId,
        amount: formatUsdc2(row.amount),
        recipient: row.recipient,
        status: "executed" as const,
        txHash: sent.txHash,
        newBalance: formatUsdc2(after.balance),
      };
    },

    /** Cancels an open request of the owner's vault. */
    async cancelWithdrawal(user: UserRecord, withdrawalId: string, operation: OperationKey) {
      const vault = await ownVault(user);
      const row = await withdrawalByPublicId(withdrawalId, vault.address);
      const contract = vaultContract(vault.address);
      await send(user, "social_vault.cancel_withdrawal", operation, vault.address, {
        data: contract.interface.encodeFunctionData("cancelWithdrawal", [row.requestId]),
      });
      return { withdrawalId, status: "cancelled" as const };
    },

    /** Sends `amount` micro-USDC from the vault to `recipient` at once, within the rolling daily limit. */
    async withdrawInstant(user: UserRecord, amount: bigint, recipient: string, operation: OperationKey) {
      const vault = await ownVault(user);
      refuseLocked(vault);
      checkMinimum(amount, "withdrawal", vault.balance);
      const refused = recipientRefusal(recipient, vault.address);
      if (refused) {
        await refuseOverLimit(vault, amount);
        throw refused;
      }
      const contract = vaultContract(vault.address);
      const sent = await send(user, "social_vault.withdraw", operation, vault.address, {
        data: contract.interface.encodeFunctionData("withdraw", [amount, recipient]),
      });
      const withdrawn = requireReceiptEvent<{ remainingDailyLimit: bigint }>(contract, sent, "SocialVaultWithdrawn").args;
      const after = (await vaultOfOwner(deps.db, user.walletAddress, deps.clock.now()))!;
      return {
        amount: formatUsdc2(amount),
        recipient,
        remainingDailyLimit: formatUsdc2(withdrawn.remainingDailyLimit),
        newBalance: formatUsdc2(after.balance),
        txHash: sent.txHash,
      };
    },
  };
}
