import { z } from "zod";
import { FAUCET_MAX_USDC, YIELD_MAX_USDC } from "../../domain/sandbox/service.js";
import { usdcAmount } from "../http/input.js";

export const tokenBody = z.strictObject({
  sub: z.string().min(1).max(255).describe("subject: the user's identity at the provider"),
  // Any string, as the run contract says: a test may want an address a real provider would not issue.
  email: z.string().max(254).optional(),
  name: z.string().min(1).max(255).optional(),
  expiresIn: z
    .number()
    .int()
    .min(1)
    .max(366 * 86_400)
    .default(3600)
    .describe("seconds"),
});

export const tokenResponse = z.object({
  accessToken: z.string(),
  tokenType: z.literal("Bearer"),
  expiresIn: z.number().int(),
});

export const jwksResponse = z.object({ keys: z.array(z.record(z.string(), z.unknown())) });

/** At most ten years at a time: beyond that a date overflows nothing but helps no test either. */
export const advanceBody = z.strictObject({
  seconds: z
    .number()
    .int()
    .min(1)
    .max(10 * 366 * 86_400),
});
export const advanceResponse = z.object({ now: z.string() });

export const snapshotResponse = z.object({
  snapshotId: z.string().describe("give it to POST /dev/chain/reorg; a snapshot is used once"),
  blockNumber: z.number().int().describe("the chain's head when it was taken: the fork point of a reorg to it"),
});
export const reorgBody = z.strictObject({
  snapshotId: z.string().min(1).max(66).describe("from POST /dev/chain/snapshot"),
  extraBlocks: z
    .number()
    .int()
    .min(1)
    .max(100)
    .default(1)
    .describe("empty blocks the new branch has beyond the old head (it must be longer to replace it), 1 to 100; default 1"),
});
export const reorgResponse = z.object({
  forkBlock: z.number().int().describe("the last block both branches share"),
  removedBlocks: z.number().int().describe("blocks of the old branch the reorganisation dropped"),
  head: z.number().int().describe("the new branch's head"),
});

export const planParams = z.object({ userId: z.string().min(1).max(64) });
export const planBody = z.strictObject({ plan: z.enum(["free", "pro", "enterprise"]) });
export const planResponse = z.object({ userId: z.string(), plan: z.enum(["free", "pro", "enterprise"]) });

export const faucetBody = z.strictObject({
  amount: usdcAmount({
    max: FAUCET_MAX_USDC,
    description:
      "USDC to mint to your managed wallet: more than 0, at most 10,000, at most 6 decimals; at least 0.01 (else 400 AMOUNT_TOO_SMALL)",
  }),
});
export const faucetResponse = z.object({
  walletAddress: z.string(),
  amount: z.string().describe("USDC minted, two decimals"),
  balance: z.string().describe("the wallet's USDC balance after the mint, two decimals (rounded down)"),
  txHash: z.string(),
});

export const yieldBody = z.strictObject({
  amount: usdcAmount({ max: YIELD_MAX_USDC, description: "USDC of yield to add to the staking vault: more than 0, at most 1,000,000" }),
});
export const yieldResponse = z.object({
  totalYield: z.string().describe("all yield distributed so far, two decimals"),
  newExchangeRate: z
    .number()
    .describe(
      "USDC per tmUSDC right after the distribution; the yield unlocks over the vault's period (7 days), raising the rate as it does",
    ),
  txHash: z.string(),
});
