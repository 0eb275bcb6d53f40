// The social vault for its owner: created through the factory as the user's own transaction (a
// clone per user), configured once, deposits, and instant withdrawals within the rolling daily
// limit. Every write is the user's own transaction through the relay (domain/transactions), so a
// wallet calling the contracts directly takes the same paths; figures come from the chain's
// receipt and the mirror. Money in bigint micro-USDC, formatted only in the views.
import { createHmac } from "node:crypto";
import { AbiCoder, type Contract, getAddress, keccak256, ZeroAddress } from "ethers";
import type { Clock } from "../../core/clock.js";
import { formatUsdc2, microFromNumber } from "../../core/money.js";
import { platformContractAt } from "../../core/platform-abi.js";
import type { Db } from "../db.js";
import { AppError } from "../errors.js";
import type { OperationKey } from "../idempotency/operation-key.js";
import { receiptEvent, requireReceiptEvent } from "../transactions/receipts.js";
import type { UserCallData } from "../transactions/user-transactions.js";
import type { UserWrite } from "../transactions/user-write.js";
import { type UserRecord, withWallet } from "../users/repo.js";
import {
  guardiansOfOwner,
  openWithdrawalsOf,
  type SocialVaultRecord,
  vaultAt,
  vaultOfOwner,
  vaultsAt,
  vaultsGuardedBy,
  withdrawalHistoryOf,
  withdrawalOf,
} from "./repo.js";
import { guardianIdsOf, unlockView, type WithdrawalStatus, withdrawalRecordView, withdrawalView } from "./views.js";

export type { WithdrawalStatus };

export interface SocialVaultServiceDeps {
  db: Db;
  clock: Pick<Clock, "now">;
  factory: Contract;
  /** The one path of a user's money write (domain/transactions/user-write.ts). */
  userWrite: Pick<UserWrite, "send">;
  /** Records the guardians' silent alerts of mirrored locks (run after a lock, so they exist when it answers). */
  alerts?: { run(now: Date): Promise<number> };
  /** The user's managed wallet's private key (the duress key is keyed by it: see duressKeyOf). */
  privateKeyOf(walletIndex: number): string;
  /** Every contract of the deployment by its key (usdc, stakingVault, loanBook, forwarder, ...): never a recipient. */
  platformContracts: Record<string, string>;
}

/**
 * The smallest deposit or withdrawal, 0.01 USDC (the smallest amount the API shows): less is a
 * transaction the service pays gas for that moves nothing visible. A withdrawal of the vault's
 * whole balance is allowed below it, so a vault can always be emptied.
 */
export const MIN_AMOUNT_MICRO = 10_000n;

/**
 * The duress key for `pin`: HMAC-SHA256 keyed by the owner's managed-wallet key over the vault and
 * the PIN. The contract keeps only keccak256 of it, so the PIN is never stored, and without the
 * wallet's key its 10^4-10^6 values cannot be tried against the commitment.
 */
export function duressKeyOf(privateKey: string, vault: string, pin: string): string {
  return `0x${createHmac("sha256", Buffer.from(privateKey.slice(2), "hex"))
    .update(`trustmint-duress:${vault.toLowerCase()}:${pin}`)
    .digest("hex")}`;
}

export const duressCommitmentOf = (duressKey: string) => keccak256(AbiCoder.defaultAbiCoder().encode(["bytes32"], [duressKey]));

/** A social vault contract's revert as the spec's error (part 7, and the codes D-71 adds). */
function socialVaultRevert(revert: { name: string; args: unknown[] }) {
  const args = revert.args as bigint[];
  switch (revert.name) {
    case "SocialVaultIsLocked":
      return new AppError("VAULT_LOCKED", "Your social vault is locked");
    case "SocialVaultDailyLimitExceeded":
      return new AppError("DAILY_LIMIT_EXCEEDED", `Above what remains of today's limit: ${formatUsdc2(args[1]!)} USDC`, {
        field: "amount",
        reason: `at most ${formatUsdc2(args[1]!)} USDC now`,
      });
    case "SocialVaultInsufficientBalance":
      return new AppError("INSUFFICIENT_BALANCE", `Your social vault holds ${formatUsdc2(args[0]!)} USDC`, {
        field: "amount",
        reason: "more than the vault's balance",
      });
    case "SocialVaultFactoryVaultExists":
      return new AppError("SOCIAL_VAULT_EXISTS", "You already have a social vault; it is configured once");
    case "SocialVaultInvalidTimelockDuration":
      return new AppError("VALIDATION_ERROR", "timelockDuration must be from 3600 to 604800 seconds", {
        field: "timelockDuration",
        reason: "3600 to 604800",
      });
    case "SocialVaultInvalidGuardian":
      return new AppError("INVALID_GUARDIAN", "A guardian must be another wallet than yours and than the vault", {
        field: "walletAddress",
        reason: "your own wallet or the vault",
      });
    case "SocialVaultGuardianAlreadyAdded":
      return new AppError("GUARDIAN_EXISTS", "This wallet is already a guardian of your vault", {
        field: "walletAddress",
        reason: "already a guardian",
      });
    case "SocialVaultGuardianLimitReached":
      return new AppError("GUARDIAN_LIMIT_REACHED", `A vault has at most ${args[0]} guardians, pending ones included`);
    case "SocialVaultGuardianNotFound":
      return new AppError("GUARDIAN_NOT_FOUND", "No such guardian of your vault");
    case "SocialVaultGuardianRemovalPending":
      return new AppError("CONFLICT", "This guardian's removal is already waiting for the vault's timelock", {
        field: "guardianId",
        reason: "removal pending",
      });
    case "SocialVaultNotGuardian":
      return new AppError("NOT_GUARDIAN", "You are not an active guardian of this vault");
    case "SocialVaultTimelockActive":
      return new AppError("TIMELOCK_ACTIVE", `The timelock runs until ${new Date(Number(args[0]!) * 1_000).toISOString()}`);
    case "SocialVaultWithdrawalNotApproved":
      return new AppError("CONFLICT", `This withdrawal has ${args[1]} of ${args[2]} approvals`, {
        field: "withdrawalId",
        reason: "not approved",
      });
    case "SocialVaultWithdrawalPastExpiry":
      return new AppError("WITHDRAWAL_EXPIRED", "This withdrawal's execution window has passed: request it again", {
        field: "withdrawalId",
        reason: "expired",
      });
    case "SocialVaultNoPendingRemoval":
      return new AppError("CONFLICT", "This guardian's removal was not submitted", { field: "guardianId", reason: "no removal" });
    case "SocialVaultWithdrawalNotOpen":
      return new AppError("CONFLICT", "This withdrawal is no longer open (executed, cancelled or expired)", {
        field: "withdrawalId",
        reason: "closed",
      });
    case "SocialVaultAlreadyApproved":
      return new AppError("CONFLICT", "You already approved this withdrawal", { field: "withdrawalId", reason: "already approved" });
    case "SocialVaultNotEnoughGuardians":
      return new AppError("NOT_ENOUGH_GUARDIANS", `Your vault needs ${args[1]} guardians to approve; it has ${args[0]}`);
    case "SocialVaultWithdrawalNotFound":
      return new AppError("WITHDRAWAL_NOT_FOUND", "No such withdrawal");
    case "SocialVaultInvalidDuressKey":
      // Nothing more: not whether a PIN is set, nor how close the guess was.
      return new AppError("FORBIDDEN", "The PIN was not accepted");
    case "SocialVaultNotLocked":
      return new AppError("CONFLICT", "Your social vault is not locked", { field: "vault", reason: "not locked" });
    case "SocialVaultUnlockNotRequested":
      return new AppError("CONFLICT", "No unlock was requested: the owner or a guardian asks for it first", {
        field: "vault",
        reason: "not requested",
      });
    case "SocialVaultUnlockAlreadyApproved":
      return new AppError("CONFLICT", "You already approved this unlock", { field: "vault", reason: "already approved" });
    case "SocialVaultUnlockNotApproved":
      return new AppError(
        "CONFLICT",
        `The unlock has ${args[0]} of ${args[1]} guardian approvals; without them the owner alone waits 30 days`,
        {
          field: "vault",
          reason: "not approved",
        },
      );
    case "SocialVaultInvalidRequiredSignatures":
      return new AppError("VALIDATION_ERROR", "requiredSignatures must be from 1 to 10", {
        field: "requiredSignatures",
        reason: "1 to 10",
      });
    default:
      return undefined;
  }
}

export function createSocialVaultService(deps: SocialVaultServiceDeps) {
  const { factory } = deps;
  /** A clone of the social vault at `address` (all share the implementation's ABI). */
  const vaultContract = (address: string) => platformContractAt("socialVault", address, factory.runner ?? undefined);
  const platformContractOf = new Map(Object.entries(deps.platformContracts).map(([key, address]) => [address.toLowerCase(), key]));

  /**
   * The refusal of a recipient the USDC would be lost to or stuck in, or null: the zero address
   * (the contract's own refusal would come back as a failed transaction), the vault itself, and
   * the platform's contracts, none of which pays USDC sent to it out to anyone. Judged before
   * anything is sent, after part 7's conditions (refuseOverLimit).
   */
  function recipientRefusal(recipient: string, vaultAddress: string): AppError | null {
    const address = recipient.toLowerCase();
    const contract = platformContractOf.get(address);
    const reason =
      address === ZeroAddress
        ? "the zero address: the USDC would be lost"
        : address === vaultAddress.toLowerCase()
          ? "your social vault itself"
          : contract
            ? `a platform contract (${contract}): the USDC would be lost`
            : null;
    return reason ? new AppError("VALIDATION_ERROR", `The recipient cannot be ${reason}`, { field: "recipient", reason }) : null;
  }

  function refuseLocked(vault: SocialVaultRecord) {
    if (vault.locked) throw new AppError("VAULT_LOCKED", "Your social vault is locked");
  }

  /**
   * DAILY_LIMIT_EXCEEDED, then INSUFFICIENT_BALANCE, for an instant withdrawal, on the contract's
   * own figure of the rolling window. The send leaves them to the contract (atomic with the
   * transfer); this read serves only a withdrawal refused for another reason first, so that
   * part 7's code answers it.
   */
  async function refuseOverLimit(vault: SocialVaultRecord, amount: bigint) {
    const remaining = (await vaultContract(vault.address).remainingDailyLimit()) as bigint;
    if (amount > remaining) throw socialVaultRevert({ name: "SocialVaultDailyLimitExceeded", args: [amount, remaining] })!;
    if (amount > vault.balance) throw socialVaultRevert({ name: "SocialVaultInsufficientBalance", args: [vault.balance, amount] })!;
  }

  /** Refuses an amount below MIN_AMOUNT_MICRO (AMOUNT_TOO_SMALL), unless it is `whole` (the vault's whole balance). */
  function checkMinimum(amount: bigint, what: string, whole?: bigint) {
    if (amount >= MIN_AMOUNT_MICRO || amount === whole) return;
    const minimum = `${formatUsdc2(MIN_AMOUNT_MICRO)} USDC${whole === undefined ? "" : " or the vault's whole balance"}`;
    throw new AppError("AMOUNT_TOO_SMALL", `The minimum ${what} is ${minimum}`, { field: "amount", reason: `at least ${minimum}` });
  }

  /** A withdrawal by its public id (`<vault>-<requestId>`), of `vault` when given; 404 otherwise. */
  async function withdrawalByPublicId(withdrawalId: string, vault?: string) {
    const match = /^(0x[0-9a-f]{40})-(\d{1,20})$/.exec(withdrawalId.toLowerCase());
    const row = match ? await withdrawalOf(deps.db, match[1]!, BigInt(match[2]!)) : null;
    if (!row || (vault && row.vault !== vault.toLowerCase())) throw new AppError("WITHDRAWAL_NOT_FOUND", "No such withdrawal");
    return row;
  }

  /** A guardian of the user's vault by its listed id (a user id, or the address); 404 otherwise. */
  async function listedGuardian(user: UserRecord, guardianId: string) {
    const listed = await guardiansOfOwner(deps.db.prisma, user.walletAddress, deps.clock.now());
    const target = listed.find((entry) => entry.id === guardianId || entry.walletAddress.toLowerCase() === guardianId.toLowerCase());
    if (!target) throw new AppError("GUARDIAN_NOT_FOUND", "No such guardian of your vault");
    return target;
  }

  async function ownVault(user: UserRecord) {
    const vault = await vaultOfOwner(deps.db, user.walletAddress, deps.clock.now());
    if (!vault) throw new AppError("SOCIAL_VAULT_NOT_FOUND", "You have no social vault yet: create it with POST /v1/social-vault");
    return vault;
  }

  /** Sends `call` as the user's own transaction; answers after the receipt and the mirror. */
  const send = (user: UserRecord, purpose: string, operation: OperationKey, to: string, call: UserCallData) =>
    deps.userWrite.send({ user, purpose, operation, to, call, reverts: socialVaultRevert });

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

    /** Deposits `amount` micro-USDC from the user's managed wallet into their vault (a permit, no approval transaction). */
    async deposit(user: UserRecord, amount: bigint, operation: OperationKey) {
      const vault = await ownVault(user);
      refuseLocked(vault);
      checkMinimum(amount, "deposit");
      const contract = vaultContract(vault.address);
      const sent = await send(user, "social_vault.deposit", operation, vault.address, {
        permit: { spender: vault.address, value: amount },
        data: (permit) =>
          contract.interface.encodeFunctionData("depositWithPermit", [amount, permit.deadline, permit.v, permit.r, permit.s]),
      });
      const after = (await vaultOfOwner(deps.db, user.walletAddress, deps.clock.now()))!;
      return { amount: formatUsdc2(amount), newBalance: formatUsdc2(after.balance), txHash: sent.txHash };
    },

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
      const { id } = requireReceiptEvent<{ id: bigint }>(contract, sent.receipt, "SocialVaultWithdrawalRequested").args;
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
        deps.db.prisma.user.findMany({
          where: { walletAddress: { in: guarded.map((entry) => getAddress(entry.owner)) }, deletedAt: null },
          select: { id: true, displayName: true, walletAddress: true },
        }),
      ]);
      const ownerByWallet = new Map(owners.map(withWallet).map((owner) => [owner.walletAddress.toLowerCase(), owner]));
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
          withdrawals: open
            .filter((row) => row.vault === entry.vault && row.expiresAt > now)
            .map((row) => ({ ...withdrawalView(row, now), approvedByYou: row.approvers.includes(wallet) })),
        };
      });
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
      const { lockedAt } = requireReceiptEvent<{ lockedAt: bigint }>(contract, sent.receipt, "SocialVaultLocked").args;
      // The alerts job records them too; here they exist when the lock answers.
      await deps.alerts?.run(deps.clock.now());
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
      const { totalApprovals } = requireReceiptEvent<{ totalApprovals: bigint }>(contract, sent.receipt, "SocialVaultUnlockApproved").args;
      return { vaultAddress: vault.address, approvalsReceived: Number(totalApprovals), txHash: sent.txHash };
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
      const added = requireReceiptEvent<{ activeAt: bigint }>(contract, sent.receipt, "SocialVaultGuardianAdded").args;
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
      const submitted = receiptEvent<{ validAt: bigint }>(contract, sent.receipt, "SocialVaultGuardianRemovalSubmitted");
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
      const withdrawn = requireReceiptEvent<{ remainingDailyLimit: bigint }>(contract, sent.receipt, "SocialVaultWithdrawn").args;
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

export type SocialVaultService = ReturnType<typeof createSocialVaultService>;
