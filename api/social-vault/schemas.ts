import { z } from "zod";
import { usdcAmount } from "../http/input.js";

// One schema per route part: they validate, type the handlers and generate the OpenAPI document.
// Social vault money values are strings with two fraction digits (service-spec part 2).

const usdc2 = (what: string) =>
  z
    .string()
    .regex(/^-?\d+\.\d{2}$/)
    .describe(`${what}, a decimal string with two fraction digits`);
const address = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, "must be a wallet address (0x and 40 hex digits)")
  .describe("wallet address");
const txHash = z
  .string()
  .regex(/^0x[0-9a-f]{64}$/)
  .describe("hash of the transaction on chain");
/** Most one request may move: far above any test balance, far below the contracts' 96-bit amounts. */
const MAX_SOCIAL_VAULT_AMOUNT = 1_000_000_000;

/** The pending recovery of an owner's key (D-106), null when none. */
const recoveryState = z
  .object({
    newOwnerAddress: address.describe("the address the guardians hand the vault to"),
    executableAt: z.string().describe("ISO 8601: from when anyone can finalize it"),
  })
  .nullable()
  .describe("a recovery the guardians started (the vault is locked meanwhile); null: none");

export const configResponse = z
  .object({
    isConfigured: z.boolean(),
    dailyLimit: usdc2("USDC that may leave at once within a rolling day"),
    timelockDuration: z.number().int().describe("seconds a withdrawal above the daily limit waits after its approvals"),
    requiredSignatures: z.number().int().describe("guardian approvals a withdrawal above the daily limit needs"),
    guardianCount: z.number().int().describe("active guardians"),
    isLocked: z.boolean(),
    hasDuressPin: z.boolean(),
    recovery: recoveryState,
  })
  .meta({ id: "SocialVaultConfig" });

export const createBody = z.strictObject({
  dailyLimit: usdcAmount({ max: MAX_SOCIAL_VAULT_AMOUNT, description: "USDC per rolling day that may leave without approvals" }),
  timelockDuration: z.number().int().min(3_600).max(604_800).describe("seconds, 3600 (1 hour) to 604800 (7 days)"),
  requiredSignatures: z.number().int().min(1).max(10).describe("guardian approvals for a withdrawal above the daily limit, 1 to 10"),
  duressPin: z
    .string()
    .regex(/^\d{4,6}$/, "must be 4 to 6 digits")
    .describe("4 to 6 digits: entered at POST /social-vault/lock it locks the vault; kept only as the contract's keyed hash"),
});
export const createResponse = z.object({
  vaultAddress: address.describe("your social vault's contract"),
  dailyLimit: usdc2("the daily limit"),
  timelockDuration: z.number().int(),
  requiredSignatures: z.number().int(),
  txHash,
  createdAt: z.string().describe("ISO 8601 UTC timestamp (the block's)"),
});

const guardian = z.object({
  id: z.string().describe("the guardian's user id when the wallet is a platform user's, else the address"),
  walletAddress: address,
  displayName: z.string(),
  status: z.enum(["active", "pending"]).describe("pending until the vault's timelock since it was added has passed"),
  addedAt: z.string().describe("ISO 8601 UTC timestamp"),
  removableAt: z
    .string()
    .nullable()
    .describe("set once the removal of this active guardian was submitted: from then, DELETE again completes it"),
});
export const guardiansResponse = z.array(guardian);
export const addGuardianBody = z.strictObject({ walletAddress: address.describe("the guardian's wallet") });
export const addGuardianResponse = guardian.extend({
  activeAt: z.string().describe("when the guardian becomes active (now + the vault's timelock)"),
  txHash,
});
export const keepGuardianResponse = guardian.extend({ txHash });
export const guardianParams = z.object({
  guardianId: z
    .string()
    .max(80)
    .regex(/^[0-9A-Za-z_-]+$/, "must be a guardian id (a user id or a wallet address)")
    .describe("the guardian's id as listed (a user id, or the wallet address)"),
});
export const removeGuardianResponse = z.object({
  guardianId: z.string(),
  walletAddress: address,
  status: z.enum(["removed", "removal_pending"]).describe("a pending guardian goes at once; an active one after the vault's timelock"),
  removableAt: z.string().nullable().describe("when an active guardian's removal takes effect"),
  txHash,
});

const WITHDRAWAL_STATUSES = ["pending", "approved", "executed", "cancelled", "expired"] as const;
export const withdrawalIdParams = z.object({
  withdrawalId: z
    .string()
    .max(80)
    .regex(/^0x[0-9a-fA-F]{40}-\d{1,20}$/, "must be a withdrawal id (<vault address>-<request id>)")
    .describe("the withdrawal's id: its vault's address and its request id"),
});
/** Where withdrawn USDC may go: any wallet but the ones it would be lost to or stuck in. */
const recipient = address.describe(
  "where the USDC goes: not the zero address, your social vault itself or a contract of the platform (USDC, staking vault, loan book, forwarder, ...), which are 400 VALIDATION_ERROR",
);
export const requestBody = z.strictObject({
  amount: usdcAmount({
    max: MAX_SOCIAL_VAULT_AMOUNT,
    description:
      "USDC to send once approved: only above what today's rolling daily limit still allows (an amount within it is 400 VALIDATION_ERROR: use /withdraw/instant); at least 0.01 or the vault's whole balance (else 400 AMOUNT_TOO_SMALL)",
  }),
  recipient,
});
const withdrawalFields = {
  withdrawalId: z.string(),
  amount: usdc2("USDC to send"),
  recipient: address,
  status: z
    .enum(WITHDRAWAL_STATUSES)
    .describe("pending, approved (approvals in), executed, cancelled, or expired (past its execution window)"),
  approvalsRequired: z.number().int(),
  approvalsReceived: z.number().int(),
  executeAfter: z.string().describe("ISO 8601: the earliest execution (request + the vault's timelock)"),
};
export const withdrawalResponse = z.object({
  ...withdrawalFields,
  expiresAt: z.string().describe("ISO 8601: the end of the execution window (executeAfter + 7 days); past it the request is expired"),
});
const approvers = z.array(z.string()).describe("ids of the guardians who approved (user ids, or addresses)");
export const pendingWithdrawal = z.object({ ...withdrawalFields, approvers });
export const withdrawalRecord = withdrawalResponse.extend({
  approvers,
  requestedAt: z.string().describe("ISO 8601 (the request's block)"),
  requestTxHash: txHash,
  closedAt: z.string().nullable().describe("when it was executed, cancelled or marked expired on chain"),
  closedTxHash: txHash.nullable(),
});
export const withdrawalDetail = withdrawalRecord
  .extend({ vaultAddress: address.describe("the vault it leaves") })
  .meta({ id: "SocialVaultWithdrawal" });

const unlockRequest = z
  .object({
    requestedAt: z.string().describe("ISO 8601: when the unlock was asked for"),
    approvalsReceived: z.number().int(),
    approvalsRequired: z.number().int(),
    guardiansCanUnlockAt: z.string().describe("from when the approvals unlock it (the request + the vault's timelock)"),
    ownerCanUnlockAt: z.string().describe("from when the owner alone can unlock it (the request + 30 days)"),
    approvedByYou: z.boolean(),
  })
  .nullable()
  .describe("the locked vault's unlock request (null: not locked, or not asked for yet)");
export const guardingResponse = z.array(
  z.object({
    vaultAddress: address,
    owner: z.object({ id: z.string().describe("the owner's user id (or the owner's address)"), displayName: z.string() }),
    guardianStatus: z.enum(["active", "pending"]).describe("yours: pending until the vault's timelock since you were added"),
    activeAt: z.string().describe("ISO 8601: when you are (or were) active"),
    removableAt: z.string().nullable().describe("set when the owner submitted your removal: it may complete from then"),
    isLocked: z.boolean(),
    unlock: unlockRequest,
    recovery: recoveryState,
    withdrawals: z
      .array(withdrawalResponse.extend({ approvedByYou: z.boolean() }))
      .describe("the vault's open requests (pending or approved, not past their window), oldest first"),
  }),
);
export const duressPinBody = z.strictObject({
  duressPin: z
    .string()
    .regex(/^\d{4,6}$/, "must be 4 to 6 digits")
    .describe("the new duress PIN, 4 to 6 digits"),
  currentPin: z
    .string()
    .regex(/^\d{4,6}$/, "must be 4 to 6 digits")
    .optional()
    .describe("the PIN now set, required unless the vault has none (after a duress lock spent it)"),
});
export const duressPinResponse = z.object({ hasDuressPin: z.literal(true), txHash });
export const approveResponse = z.object({
  withdrawalId: z.string(),
  approvalsReceived: z.number().int(),
  approvalsRequired: z.number().int(),
  status: z.enum(WITHDRAWAL_STATUSES),
  canExecuteAt: z.string().describe("ISO 8601: when the owner may execute it (once approved)"),
});
export const executeResponse = z.object({
  withdrawalId: z.string(),
  amount: usdc2("USDC sent"),
  recipient: address,
  status: z.literal("executed"),
  txHash,
  newBalance: usdc2("the vault's balance after it"),
});
export const cancelWithdrawalResponse = z.object({ withdrawalId: z.string(), status: z.literal("cancelled") });

export const lockBody = z.strictObject({
  duressPin: z
    .string()
    .regex(/^\d{4,6}$/, "must be 4 to 6 digits")
    .describe("the duress PIN set at creation"),
});
export const lockResponse = z.object({
  status: z.literal("locked"),
  lockedAt: z.string().describe("ISO 8601 UTC timestamp (the block's)"),
  guardiansNotified: z.boolean().describe("whether the vault has active guardians, who are alerted silently"),
});

export const unlockResponse = z.object({
  status: z.enum(["unlock_requested", "unlocked"]),
  guardiansCanUnlockAt: z.string().nullable().describe("from when the guardians' approvals unlock it (the request + the vault's timelock)"),
  ownerCanUnlockAt: z.string().nullable().describe("from when the owner alone can unlock it (the request + 30 days)"),
  approvalsReceived: z.number().int().describe("guardians who approved the unlock so far"),
  approvalsRequired: z.number().int(),
  txHash,
});
export const approveUnlockBody = z.strictObject({ vaultAddress: address.describe("the vault you guard") });
export const approveUnlockResponse = z.object({ vaultAddress: address, approvalsReceived: z.number().int(), txHash });

export const approveRecoveryBody = z.strictObject({
  vaultAddress: address.describe("the vault you guard"),
  newOwnerAddress: address.describe("the owner's new wallet: not the vault, its owner, a guardian or another vault's owner"),
});
export const approveRecoveryResponse = z.object({
  vaultAddress: address,
  newOwnerAddress: address,
  approvalsReceived: z.number().int().describe("active guardians who back this new owner"),
  approvalsRequired: z.number().int().describe("more than half of the active guardians"),
  status: z.enum(["collecting", "started"]).describe("started: the vault is locked and the recovery waits for executableAt"),
  executableAt: z.string().nullable().describe("ISO 8601, once started: from when anyone can finalize it"),
  txHash,
});
export const cancelRecoveryBody = z.strictObject({
  vaultAddress: address.optional().describe("the vault (a guardian names it; the owner may leave it out)"),
});
export const cancelRecoveryResponse = z.object({
  vaultAddress: address,
  status: z.enum(["objected", "cancelled"]).describe("cancelled once the owner and a guardian objected"),
  txHash,
});
export const finalizeRecoveryBody = z.strictObject({ vaultAddress: address.describe("the vault whose recovery is due") });
export const finalizeRecoveryResponse = z.object({
  vaultAddress: address,
  ownerAddress: address.describe("the vault's owner from now on"),
  isLocked: z.boolean().describe("false when the guardians behind it reach the approvals an unlock requires"),
  txHash,
});

export const depositBody = z.strictObject({
  amount: usdcAmount({
    max: MAX_SOCIAL_VAULT_AMOUNT,
    description: "USDC to move from your managed wallet into the vault: at least 0.01 (else 400 AMOUNT_TOO_SMALL)",
  }),
});
export const depositResponse = z.object({
  amount: usdc2("USDC deposited"),
  newBalance: usdc2("the vault's balance after it"),
  txHash,
});

export const instantBody = z.strictObject({
  amount: usdcAmount({
    max: MAX_SOCIAL_VAULT_AMOUNT,
    description:
      "USDC to send at once: at most what remains of the rolling daily limit (else 400 DAILY_LIMIT_EXCEEDED); at least 0.01 or the vault's whole balance (else 400 AMOUNT_TOO_SMALL)",
  }),
  recipient,
});
export const instantResponse = z.object({
  amount: usdc2("USDC sent"),
  recipient: address,
  remainingDailyLimit: usdc2("what may still leave at once: the daily limit less the instant withdrawals of the last 24 hours"),
  newBalance: usdc2("the vault's balance after it"),
  txHash,
});

/** The export's social vault part (GET /v1/users/me/export). */
export const socialVaultExport = z
  .object({
    vault: z
      .object({
        vaultAddress: address,
        dailyLimit: usdc2("the daily limit"),
        timelockDuration: z.number().int(),
        requiredSignatures: z.number().int(),
        balance: usdc2("the vault's balance"),
        isLocked: z.boolean(),
        lockedAt: z.string().nullable(),
        hasDuressPin: z.boolean(),
        createdAt: z.string(),
        createdTxHash: txHash,
      })
      .nullable()
      .describe("your social vault (null without one)"),
    withdrawals: z.array(withdrawalRecord).describe("every withdrawal request of your vault, newest first"),
    guarding: z
      .array(z.object({ vaultAddress: address, activeAt: z.string(), removableAt: z.string().nullable() }))
      .describe("the vaults whose guardian you are"),
  })
  .nullable();
