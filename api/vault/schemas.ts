import { z } from "zod";
import { YIELD_PERIODS } from "../../domain/vault/yield.js";
import { usdcAmount } from "../http/input.js";
import { listQuery } from "../http/pagination.js";

// One schema per route part: they validate, type the handlers and generate the OpenAPI document.

const usdc2 = (what: string) =>
  z
    .string()
    .regex(/^-?\d+\.\d{2}$/)
    .describe(`${what}, a decimal string with two fraction digits`);
const isoDate = z.string().describe("ISO 8601 UTC timestamp");
const txHash = z
  .string()
  .regex(/^0x[0-9a-f]{64}$/)
  .describe("hash of the transaction on chain");

/** Most one request may move: far above any test balance, far below any overflow. */
export const MAX_VAULT_AMOUNT = 1_000_000_000;

export const vaultStatus = z
  .object({
    totalDeposits: usdc2("USDC the vault holds for its depositors (idle plus lent out)"),
    totalBorrowed: usdc2("USDC out on loans"),
    utilization: z.number().min(0).max(1).describe("totalBorrowed / totalDeposits"),
    currentAPY: z.number().describe("supply APY as a fraction (0.05 = 5 %)"),
    exchangeRate: z.number().describe("USDC per tmUSDC"),
    tmUSDCSupply: usdc2("tmUSDC in circulation"),
    unrealizedLosses: usdc2(
      "extension: the expected losses already out of totalDeposits and exchangeRate: the open loans' provisions, and those of loans past due (principal the insurance reserve does not cover, and interest they did not pay); a repayment gives them back",
    ).optional(),
    provisions: usdc2(
      "extension: the part of unrealizedLosses provisioned from the loans' funding, each loan's principal out at its expected-loss rate (the rest is the loans past due)",
    ).optional(),
    entryExchangeRate: z
      .number()
      .describe(
        "extension: USDC per tmUSDC a deposit pays now: exchangeRate without the unrealized losses, so no deposit buys a loss that may be reversed",
      )
      .optional(),
  })
  .meta({ id: "VaultStatus" });

export const vaultPosition = z
  .object({
    userId: z.string(),
    tmUSDCBalance: usdc2("your tmUSDC"),
    usdcValue: usdc2("what your tmUSDC redeems for now, rounded down"),
    earnedYield: usdc2("usdcValue minus your net deposits (USDC in minus USDC out); negative after a loss"),
    depositedAt: isoDate
      .nullable()
      .describe(
        "when your current holding began: your first deposit (or tmUSDC received from another wallet) since your balance was last 0; null only while you hold no tmUSDC",
      ),
    lastYieldClaim: isoDate
      .nullable()
      .describe(
        "yield accrues in the exchange rate, nothing is claimed: the latest yield distribution of the vault your holding took part in (at or after depositedAt), else depositedAt; null only while you hold no tmUSDC",
      ),
  })
  .meta({ id: "VaultPosition" });

export const depositBody = z.strictObject({
  amount: usdcAmount({
    max: MAX_VAULT_AMOUNT,
    description: "USDC to deposit from your managed wallet: more than 0, at most 6 decimals; the vault's minimum is 1 USDC",
  }),
});
export const depositResponse = z.object({
  depositAmount: usdc2("USDC deposited"),
  exchangeRate: z.number().describe("USDC per tmUSDC after the deposit"),
  tmUSDCReceived: usdc2("tmUSDC received"),
  newBalance: usdc2("your tmUSDC balance after the deposit"),
  txHash,
  xpEarned: z.number().int().describe("XP this deposit earned"),
});

export const withdrawBody = z.strictObject({
  tmUSDCAmount: usdcAmount({
    max: MAX_VAULT_AMOUNT,
    description:
      "tmUSDC to redeem: more than 0, at most 6 decimals; at least what 0.01 USDC is worth at the current rate (else 400 AMOUNT_TOO_SMALL), except your whole balance as shown, which is always allowed and redeems every share",
  }),
});
export const withdrawResponse = z.object({
  tmUSDCRedeemed: usdc2("tmUSDC redeemed"),
  exchangeRate: z.number().describe("USDC per tmUSDC after the withdrawal"),
  usdcReceived: usdc2("USDC paid to your managed wallet, rounded down"),
  remainingBalance: usdc2("your tmUSDC balance after the withdrawal"),
  txHash,
});

export const yieldHistoryQuery = z.object({
  period: z.enum(YIELD_PERIODS).default("30d").describe("7d, 30d, 90d, 1y or all (default 30d)"),
});
export const yieldHistoryResponse = z
  .object({
    period: z.enum(YIELD_PERIODS),
    totalYield: usdc2("your yield over the period"),
    averageAPY: z.number().describe("value-weighted APY over the days your position earned"),
    history: z.array(
      z.object({
        date: z
          .string()
          .regex(/^\d{4}-\d{2}-\d{2}$/)
          .describe("UTC day, YYYY-MM-DD"),
        yield: usdc2("your yield that day"),
        apy: z.number().describe("that day's yield over the value held at its start, annualised"),
      }),
    ),
  })
  .meta({ id: "YieldHistory" });

export const calculateBody = z.strictObject({
  amount: usdcAmount({ max: MAX_VAULT_AMOUNT, description: "USDC to project: more than 0, at most 6 decimals" }),
  duration: z.number().int().min(1).max(3_650).describe("days, a whole number from 1 to 3650"),
});
export const calculateResponse = z.object({
  depositAmount: usdc2("USDC projected"),
  duration: z.number().int().describe("days"),
  currentAPY: z.number().describe("supply APY as a fraction"),
  projectedYield: usdc2("yield at currentAPY, pro rata by day, rounded down"),
  projectedTotal: usdc2("depositAmount plus projectedYield"),
  disclaimer: z.string(),
});

const ratePoint = z.object({
  utilization: z.number().describe("fraction of deposits lent out"),
  borrowRate: z.number().describe("annual borrow rate, a fraction"),
  supplyAPY: z.number().describe("annual supply rate paid to depositors, a fraction"),
});
export const ratesResponse = ratePoint
  .extend({
    model: z.array(ratePoint).length(5).describe("the curve's points at utilization 0.00, 0.50, 0.80, 0.95 and 1.00"),
  })
  .meta({ id: "InterestRateModel" });

export const transactionsQuery = listQuery({});
export const vaultTransaction = z
  .object({
    id: z
      .string()
      .describe(
        "<txHash>-<type>-<n>: the transaction and the place of this deposit or withdrawal among its own of that type; kept when a reorganisation moves the transaction",
      ),
    type: z.enum(["deposit", "withdraw"]),
    usdcAmount: usdc2("USDC in or out"),
    tmUSDCAmount: usdc2("tmUSDC received or redeemed"),
    exchangeRate: z.number().describe("USDC per tmUSDC of this transaction"),
    timestamp: isoDate,
    txHash,
  })
  .meta({ id: "VaultTransaction" });
