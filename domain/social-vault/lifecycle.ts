// The social vault's life: part 7's conditions of a refused write, the configuration, the vault's
// creation through the factory (a clone per user, configured once) and deposits.

import { formatUsdc2, microFromNumber } from "../../core/money.js";
import type { OperationKey } from "../idempotency/operation-key.js";
import type { UserRecord } from "../users/repo.js";
import { duressCommitmentOf, duressKeyOf, type SocialVaultContext } from "./context.js";
import { recoveryView } from "./recovery.js";
import { vaultOfOwner } from "./repo.js";

export function createVaultLifecycle({
  deps,
  factory,
  vaultContract,
  refuseLocked,
  refuseOverLimit,
  checkMinimum,
  ownVault,
  send,
}: SocialVaultContext) {
  return {
    /**
     * Part 7's social vault conditions of a write that failed its schema (a route's `areaRules`),
     * on what was sent: VAULT_LOCKED, then, for an amount that is one, AMOUNT_TOO_SMALL and, for
     * an instant withdrawal, DAILY_LIMIT_EXCEEDED and INSUFFICIENT_BALANCE: the order the writes
     * follow. Nothing without a vault (SOCIAL_VAULT_NOT_FOUND is no part 7 code).
     */
    async areaRules(user: UserRecord, sent: { amount?: unknown }, write: "deposit" | "instant" | "request" | "other") {
      const vault = await vaultOfOwner(deps.db, user.walletAddress, deps.clock.now());
      if (!vault) return;
      refuseLocked(vault);
      const amount = typeof sent.amount === "number" ? microFromNumber(sent.amount) : null;
      if (write === "other" || amount === null || amount === 0n) return;
      checkMinimum(amount, write === "deposit" ? "deposit" : "withdrawal", write === "deposit" ? undefined : vault.balance);
      if (write === "instant") await refuseOverLimit(vault, amount);
    },

    /** The caller's vault configuration (isConfigured false before creation). */
    async config(user: UserRecord) {
      const vault = await vaultOfOwner(deps.db, user.walletAddress, deps.clock.now());
      if (!vault) {
        return {
          isConfigured: false,
          dailyLimit: "0.00",
          timelockDuration: 0,
          requiredSignatures: 0,
          guardianCount: 0,
          isLocked: false,
          hasDuressPin: false,
          recovery: null,
        };
      }
      return {
        isConfigured: true,
        dailyLimit: formatUsdc2(vault.dailyLimit),
        timelockDuration: vault.timelockDuration,
        requiredSignatures: vault.requiredSignatures,
        guardianCount: vault.activeGuardians,
        isLocked: vault.locked,
        hasDuressPin: vault.hasDuressPin,
        recovery: recoveryView(vault),
      };
    },

    /**
     * Creates the user's vault through the factory (a clone at an address fixed by the owner), with
     * the duress PIN's commitment: the PIN itself is never stored, logged or returned.
     */
    async create(
      user: UserRecord,
      input: { dailyLimit: bigint; timelockDuration: number; requiredSignatures: number; duressPin: string },
      operation: OperationKey,
    ) {
      const address = ((await factory.predictVault(user.walletAddress)) as string).toLowerCase();
      const commitment = duressCommitmentOf(duressKeyOf(deps.privateKeyOf(user.walletIndex), address, input.duressPin));
      const sent = await send(user, "social_vault.create", operation, factory.target as string, {
        data: factory.interface.encodeFunctionData("createVault", [
          input.dailyLimit,
          input.timelockDuration,
          input.requiredSignatures,
          commitment,
        ]),
      });
      const block = await sent.receipt.getBlock();
      return {
        vaultAddress: address,
        dailyLimit: formatUsdc2(input.dailyLimit),
        timelockDuration: input.timelockDuration,
        requiredSignatures: input.requiredSignatures,
        txHash: sent.txHash,
        createdAt: new Date(block.timestamp * 1_000).toISOString(),
      };
    },

    /** Deposits `amount` micro-USDC from the user's managed wallet into their vault (the relay's standing allowance: D-86). */
    async deposit(user: UserRecord, amount: bigint, operation: OperationKey) {
      const vault = await ownVault(user);
      refuseLocked(vault);
      checkMinimum(amount, "deposit");
      const contract = vaultContract(vault.address);
      const sent = await send(user, "social_vault.deposit", operation, vault.address, {
        pulls: { spender: vault.address, value: amount },
        data: contract.interface.encodeFunctionData("deposit", [amount]),
      });
      const after = (await vaultOfOwner(deps.db, user.walletAddress, deps.clock.now()))!;
      return { amount: formatUsdc2(amount), newBalance: formatUsdc2(after.balance), txHash: sent.txHash };
    },
  };
}
