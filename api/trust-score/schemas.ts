import { z } from "zod";
import { isoDate, userId } from "../users/schemas.js";

export const trustUserParams = z.object({ userId });

const tierName = z.enum(["New", "Building", "Established", "Trusted", "Elite"]);

export const breakdown = z
  .object({
    seniority: z.number().int().describe("+1 per full month of account age, max 12"),
    repaymentHistory: z.number().int().describe("+2 per on-time repayment, max 40"),
    transactionVolume: z.number().int().describe("4 points per factor of ten of the whole-USDC volume, max 20"),
    socialNetwork: z.number().int().describe("+5 per active guardian, at most 3 count, max 15"),
    levelBonus: z.number().int().describe("by XP level, max 13"),
  })
  .meta({ id: "TrustScoreBreakdown" });

export const trustScore = z
  .object({
    userId: z.string(),
    score: z.number().int(),
    tier: tierName,
    breakdown,
    borrowingPower: z.object({
      maxAmount: z.number().describe("USDC"),
      maxDuration: z.number().int().describe("days"),
      interestRate: z.number().describe("fraction per loan, as the Loan's interestRate: 0.05 (New) down to 0.01 (Elite)"),
    }),
    lastUpdated: isoDate,
  })
  .meta({ id: "TrustScore" });

export const historyQuery = z.object({ period: z.enum(["7d", "30d", "90d", "1y", "all"]).default("30d") });

export const historyResponse = z
  .object({
    userId: z.string(),
    period: z.enum(["7d", "30d", "90d", "1y", "all"]),
    history: z.array(
      z.object({
        date: z.string().describe("YYYY-MM-DD (UTC)"),
        score: z.number().int(),
        change: z.number().int(),
        reason: z.string(),
      }),
    ),
  })
  .meta({ id: "TrustScoreHistory" });

export const simulateBody = z.strictObject({
  actions: z
    .array(
      z.strictObject({
        type: z.enum(["repayment", "add_guardian", "level_up", "deposit"]),
        count: z.number().int().min(1).max(1_000_000_000).describe("how many; for deposit, the amount in whole USDC"),
      }),
    )
    .min(1)
    .max(20),
});

export const simulateResponse = z.object({
  currentScore: z.number().int(),
  projectedScore: z.number().int(),
  breakdown: z
    .record(z.string(), z.string().regex(/^[+-]\d+$/))
    .describe("signed points per action: repayments, guardian, levelUp, deposit, modifiers"),
  newTier: tierName,
  newBorrowingPower: z.object({ maxAmount: z.number(), maxDuration: z.number().int() }),
});

export const tiersResponse = z.array(
  z.object({
    tier: tierName,
    minScore: z.number().int(),
    maxScore: z.number().int(),
    borrowingPower: z.object({ maxAmount: z.number(), maxDuration: z.number().int() }),
  }),
);

export const modifiersResponse = z.object({
  userId: z.string(),
  baseScore: z.number().int(),
  finalScore: z.number().int(),
  modifiers: z.array(
    z.object({
      type: z.enum(["late_payment", "default", "on_time_bonus"]),
      impact: z.number().int().describe("points this modifier added (negative: took) when applied in order"),
      reason: z.string(),
      appliedAt: isoDate,
      expiresAt: isoDate.nullable(),
    }),
  ),
});
