// The staking vault's manifest (domain/module.ts).
import { z } from "zod";
import { address, defineEvent, integerAmount, txHash, usdc2, userRef } from "../events/define.js";
import { defineModule } from "../module.js";

export const vaultModule = defineModule({
  name: "vault",
  errors: { AMOUNT_TOO_SMALL: 400, INSUFFICIENT_LIQUIDITY: 400, VAULT_PAUSED: 503 },
  tables: { VaultTransaction: "log", YieldDistribution: "log", VaultPosition: "state" },
  contracts: { stakingVault: { relay: ["depositWithPermit", "deposit", "redeem", "withdraw"] }, interestRateModel: {} },
  routeTag: "Vault",
  events: {
    "vault.deposit": defineEvent({
      source: "chain",
      webhook: true,
      description: "USDC deposited into the staking vault (through the API or by a wallet).",
      data: z.object({ userId: userRef, walletAddress: address, usdcAmount: usdc2, tmUSDCReceived: usdc2, txHash }),
      raw: z.object({ assets: integerAmount, shares: integerAmount }),
    }),
    "vault.withdraw": defineEvent({
      source: "chain",
      webhook: true,
      description: "tmUSDC redeemed for USDC.",
      data: z.object({ userId: userRef, walletAddress: address, tmUSDCRedeemed: usdc2, usdcReceived: usdc2, txHash }),
      raw: z.object({ assets: integerAmount, shares: integerAmount }),
    }),
    "vault.yield_distributed": defineEvent({
      source: "chain",
      webhook: { everyone: true },
      description: "Yield added to the vault; the exchange rate rose.",
      data: z.object({ amount: usdc2, totalYield: usdc2, newExchangeRate: z.number(), txHash }),
      raw: z.object({ amount: integerAmount, totalYield: integerAmount, exchangeRate: integerAmount }),
    }),
  },
});
