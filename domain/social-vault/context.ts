// What every part of the social vault service shares: its dependencies, the contract's reverts as
// the spec's codes, the duress key, and the checks and lookups each write starts with.
import { createHmac } from "node:crypto";
import { AbiCoder, type Contract, keccak256, ZeroAddress } from "ethers";
import type { Clock } from "../../core/clock.js";
import { formatUsdc2 } from "../../core/money.js";
import { platformContractAt } from "../../core/platform-abi.js";
import type { Db } from "../db.js";
import { AppError } from "../errors.js";
import type { OperationKey } from "../idempotency/operation-key.js";
import type { UserCallData } from "../transactions/user-transactions.js";
import type { UserWrite } from "../transactions/user-write.js";
import type { UserRecord } from "../users/repo.js";
import type { GuardianAlerts } from "./alerts.js";
import { guardiansOfOwner, type SocialVaultRecord, vaultOfOwner, withdrawalOf } from "./repo.js";

export interface SocialVaultServiceDeps {
  db: Db;
  clock: Pick<Clock, "now">;
  factory: Contract;
  /** The one path of a user's money write (domain/transactions/user-write.ts). */
  userWrite: Pick<UserWrite, "send" | "eventIds">;
  /** Records the guardians' silent alerts of mirrored locks (run after a lock, so they exist when it answers). */
  alerts?: Pick<GuardianAlerts, "take" | "consumer">;
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
export function socialVaultRevert(revert: { name: string; args: unknown[] }) {
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
      // The contract names the most it takes now: the active guardians (D-104).
      return new AppError("VALIDATION_ERROR", `requiredSignatures must be from 1 to ${args[1]}, your active guardians`, {
        field: "requiredSignatures",
        reason: `1 to ${args[1]}`,
      });
    case "SocialVaultDuressCommitmentSpent":
      // That PIN's key locked the vault under duress and is public now (D-104).
      return new AppError("VALIDATION_ERROR", "This PIN already locked your vault under duress: choose another", {
        field: "duressPin",
        reason: "used for a duress lock",
      });
    case "SocialVaultInvalidNewOwner":
      return new AppError("VALIDATION_ERROR", "The new owner cannot be the vault, its owner or one of its guardians", {
        field: "newOwnerAddress",
        reason: "the vault, its owner or a guardian",
      });
    case "SocialVaultNoRecovery":
      return new AppError("CONFLICT", "No recovery is pending", { field: "vault", reason: "no recovery" });
    case "SocialVaultRecoveryAlreadyVoted":
      return new AppError("CONFLICT", "You already gave this approval or objection", { field: "vault", reason: "already given" });
    case "SocialVaultRecoveryPending":
      // The guardians are replacing the owner's key (D-106): only the recovery's own end unlocks.
      return new AppError("CONFLICT", "A recovery of this vault is pending: it unlocks only through the recovery", {
        field: "vault",
        reason: "recovery pending",
      });
    default:
      return undefined;
  }
}

/** The checks, lookups and the send that the service's parts share. */
export function socialVaultContext(deps: SocialVaultServiceDeps) {
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
    deps,
    factory,
    vaultContract,
    recipientRefusal,
    platformContractOf,
    refuseLocked,
    refuseOverLimit,
    checkMinimum,
    withdrawalByPublicId,
    listedGuardian,
    ownVault,
    send,
  };
}

export type SocialVaultContext = ReturnType<typeof socialVaultContext>;
