import { z } from "zod";
import { LOAN_STATUSES } from "../../domain/loans/repo.js";
import { ACTIVITY_TYPES } from "../../domain/xp/activity.js";
import { listQuery } from "../http/pagination.js";
import { socialVaultExport } from "../social-vault/schemas.js";

// One schema per route part: they validate, type the handlers and generate the OpenAPI document.

export const userId = z.string().min(1).max(64).describe("User identifier");
export const isoDate = z.string().describe("ISO 8601 UTC timestamp");
export const walletAddress = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/)
  .describe("0x-prefixed address of the user's wallet: a managed one, or their own (custody self)");

export const settings = z
  .object({
    notifications: z.boolean().describe("push notifications"),
    emailAlerts: z.boolean().describe("e-mail notifications"),
    language: z.string().describe("preferred language (BCP 47 tag)"),
    publicTrustScore: z.boolean().describe("whether other users may read your Trust Score details (default false)"),
  })
  .meta({ id: "UserSettings" });

export const privateUser = z
  .object({
    id: z.string(),
    email: z.string().describe("visible only to the user; empty when the identity provider gave none"),
    displayName: z.string(),
    walletAddress,
    custody: z
      .enum(["managed", "self"])
      .describe(
        "who holds the wallet's key: the service (managed: it signs your writes) or you (self: signed in with it, Sign-In with Ethereum)",
      ),
    trustScore: z.number().int(),
    level: z.string(),
    xp: z.number().int(),
    plan: z.enum(["free", "pro", "enterprise"]),
    createdAt: isoDate,
    settings,
  })
  .meta({ id: "User" });

export const publicUser = z
  .object({
    id: z.string(),
    displayName: z.string(),
    walletAddress,
    trustScore: z.number().int(),
    level: z.string(),
    badges: z.array(z.string()).describe("badge identifiers"),
    createdAt: isoDate,
  })
  .meta({ id: "PublicUser" });

export const userIdParams = z.object({ userId });

const language = z
  .string()
  .regex(/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/, "must be a language tag such as en or pt-BR")
  .max(35);

/** A name shown to people: at least one non-space character (surrounding spaces are dropped), at most `max`. */
export const visibleName = (max: number) =>
  z
    .string()
    .max(max)
    .regex(/\S/, "must contain a non-space character")
    .transform((value) => value.trim());

/** Any subset of the fields; an empty body (or empty settings) changes nothing and answers the current values. */
export const patchMeBody = z.strictObject({
  displayName: visibleName(50).optional(),
  settings: z
    .strictObject({
      notifications: z.boolean().optional(),
      emailAlerts: z.boolean().optional(),
      language: language.optional(),
      publicTrustScore: z.boolean().optional(),
    })
    .optional(),
});

export const patchMeResponse = z.object({ id: z.string(), displayName: z.string(), settings, updatedAt: isoDate });

export const xpResponse = z
  .object({
    userId: z.string(),
    xp: z.number().int(),
    level: z.string(),
    nextLevel: z.string(),
    xpToNextLevel: z.number().int(),
    progressPercent: z.number().int(),
    badges: z.array(z.object({ id: z.string(), name: z.string(), earnedAt: isoDate })),
  })
  .meta({ id: "UserXp" });

/** Page size: default 20 as the spec's other lists, at most 100. */
export const activityQuery = listQuery({ type: z.enum(ACTIVITY_TYPES).optional() });

export const activityEntry = z
  .object({
    id: z.string(),
    type: z.enum(ACTIVITY_TYPES),
    description: z.string(),
    xpEarned: z.number().int(),
    timestamp: isoDate,
  })
  .meta({ id: "ActivityEntry" });

export const guardian = z
  .object({
    id: z.string(),
    walletAddress: z.string(),
    displayName: z.string(),
    status: z.enum(["active", "pending"]),
    addedAt: isoDate,
  })
  .meta({ id: "Guardian" });

/** A loan in the export: the spec's Loan fields the chain knows, plus interest, extensions and closedAt. */
export const exportedLoan = z.object({
  id: z.string(),
  status: z.enum(LOAN_STATUSES),
  amount: z.number(),
  netAmount: z.number(),
  insuranceFee: z.number(),
  interest: z.number(),
  duration: z.number().int(),
  totalRepayment: z.number(),
  purpose: z.string().nullable(),
  amountPaid: z.number(),
  remainingBalance: z.number(),
  extensions: z.number().int(),
  createdAt: isoDate,
  fundedAt: isoDate.nullable(),
  dueDate: isoDate.nullable(),
  cancelledAt: isoDate.nullable(),
  txHash: z.string().nullable(),
});

/** The spec's Vault transaction. */
export const vaultTransaction = z.object({
  id: z.string(),
  type: z.enum(["deposit", "withdraw"]),
  usdcAmount: z.string(),
  tmUSDCAmount: z.string(),
  exchangeRate: z.number(),
  timestamp: isoDate,
  txHash: z.string(),
});

export const exportResponse = z.object({
  profile: privateUser.extend({ updatedAt: isoDate, badges: z.array(z.string()) }),
  activity: z.array(activityEntry),
  loans: z.array(exportedLoan),
  vaultHistory: z.array(vaultTransaction),
  guardians: z.array(guardian),
  socialVault: socialVaultExport.describe("your social vault, its requests, and the vaults you guard (null without a wallet)"),
  apiKeys: z.array(
    z.object({
      id: z.string(),
      name: z.string(),
      prefix: z.string(),
      createdAt: isoDate,
      lastUsedAt: isoDate.nullable(),
      revokedAt: isoDate.nullable(),
    }),
  ),
  exportedAt: isoDate,
});

export const DELETE_CONFIRMATION = "DELETE_MY_ACCOUNT";
export const deleteMeBody = z.strictObject({
  confirmation: z.literal(DELETE_CONFIRMATION, { error: `must be ${DELETE_CONFIRMATION}` }),
});
export const deleteMeExtra = z.object({ deletionDate: isoDate });
