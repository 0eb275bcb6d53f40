// The money sandbox of run-and-sandbox.md section 3 (never in production): test USDC for a
// user's managed wallet. It moves money on chain through the one transaction sender, so it
// takes an Idempotency-Key like every money write.
import type { Contract } from "ethers";
import { formatUsdc2, rateNumber } from "../../core/money.js";
import { AppError } from "../errors.js";
import type { OperationKey } from "../idempotency/operation-key.js";
import { chainFailure } from "../transactions/failures.js";
import type { TransactionSender } from "../transactions/sender.js";
import type { UserRecord } from "../users/repo.js";

/** Most test USDC one faucet call gives (run-and-sandbox.md: more than 0 and at most 10,000). */
export const FAUCET_MAX_USDC = 10_000;
/**
 * Least test USDC one faucet call gives, 0.01 USDC (the smallest amount the API shows): less is a
 * transaction the service pays gas for that mints nothing visible.
 */
export const FAUCET_MIN_MICRO = 10_000n;
/** Most yield one sandbox distribution adds: plenty to move the rate, far from any overflow. */
export const YIELD_MAX_USDC = 1_000_000;
/** Whose Idempotency-Keys the anonymous sandbox routes use (they have no user). */
export const SANDBOX_SCOPE = "sandbox";

export interface SandboxDeps {
  sender: Pick<TransactionSender, "send">;
  /** MockUSDC, read-only (balances); null where the chain has real USDC and no faucet. */
  usdc: Contract | null;
  /** The staking vault, read-only (supply, rate, total yield). */
  vault: Contract;
  /** The paying account, which holds MockUSDC's faucet role and the vault's yield role outside production. */
  operator: string;
}

export function createSandboxService({ sender, usdc, vault, operator }: SandboxDeps) {
  return {
    /**
     * Adds `amount` micro-USDC of yield to the staking vault: mints it to the paying account,
     * approves the vault and distributes it, three transactions under one idempotency key (each
     * step its own purpose), so a retry resumes where an interrupted call stopped.
     */
    async distributeYield(amount: bigint, operation: OperationKey) {
      if (!usdc) throw new AppError("SERVICE_UNAVAILABLE", "This chain has real USDC (USDC_ADDRESS): there is no test yield");
      // Checked first, so no test USDC is minted for a distribution the vault would refuse.
      if (((await vault.totalSupply()) as bigint) === 0n) {
        throw new AppError("CONFLICT", "The vault has no deposits yet: yield would go to nobody", {
          field: "amount",
          reason: "no tmUSDC in circulation",
        });
      }
      const vaultAddress = await vault.getAddress();
      const usdcAddress = await usdc.getAddress();
      const step = (purpose: string, to: string, data: string) =>
        sender
          .send({ purpose: `sandbox.yield.${purpose}`, userId: SANDBOX_SCOPE, ...operation, to, data })
          .catch((error) => chainFailure(error));
      await step("mint", usdcAddress, usdc.interface.encodeFunctionData("mint", [operator, amount]));
      await step("approve", usdcAddress, usdc.interface.encodeFunctionData("approve", [vaultAddress, amount]));
      const sent = await step("distribute", vaultAddress, vault.interface.encodeFunctionData("distributeYield", [amount]));
      const at = { blockTag: sent.blockNumber };
      return {
        totalYield: formatUsdc2((await vault.totalYield(at)) as bigint),
        newExchangeRate: rateNumber((await vault.exchangeRate(at)) as bigint),
        txHash: sent.txHash,
      };
    },

    /** Mints `amount` micro-USDC of test USDC to the user's managed wallet. */
    async faucet(user: UserRecord, amount: bigint, operation: OperationKey) {
      if (amount < FAUCET_MIN_MICRO) {
        const minimum = `${formatUsdc2(FAUCET_MIN_MICRO)} USDC`;
        throw new AppError("AMOUNT_TOO_SMALL", `The faucet gives at least ${minimum}`, { field: "amount", reason: `at least ${minimum}` });
      }
      if (!usdc) throw new AppError("SERVICE_UNAVAILABLE", "This chain has real USDC (USDC_ADDRESS): there is no faucet");
      const wallet = user.walletAddress;
      const data = usdc.interface.encodeFunctionData("mint", [wallet, amount]);
      const sent = await sender
        .send({ purpose: "sandbox.faucet", userId: user.id, ...operation, to: await usdc.getAddress(), data })
        .catch((error) => chainFailure(error));
      const balance = (await usdc.balanceOf(wallet, { blockTag: sent.blockNumber })) as bigint;
      return { walletAddress: wallet, amount: formatUsdc2(amount), balance: formatUsdc2(balance), txHash: sent.txHash };
    },
  };
}

export type SandboxService = ReturnType<typeof createSandboxService>;
