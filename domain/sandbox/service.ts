// The money sandbox of run-and-sandbox.md section 3 (never in production): test USDC for a
// user's managed wallet. It moves money on chain through the one transaction sender, so it
// takes an Idempotency-Key like every money write.
import type { Contract } from "ethers";
import { formatUsdc2 } from "../../core/money.js";
import { AppError } from "../errors.js";
import type { TransactionSender } from "../transactions/sender.js";
import { TransactionPendingError, TransactionRevertedError } from "../transactions/sender.js";
import type { UserRecord } from "../users/repo.js";

/** Most test USDC one faucet call gives (run-and-sandbox.md: more than 0 and at most 10,000). */
export const FAUCET_MAX_USDC = 10_000;

export interface SandboxDeps {
  sender: Pick<TransactionSender, "send">;
  /** MockUSDC, read-only (balances); null where the chain has real USDC and no faucet. */
  usdc: Contract | null;
}

/** Turns what the sender throws into the spec's codes. */
export function chainFailure(error: unknown): never {
  if (error instanceof TransactionRevertedError) {
    throw new AppError("SERVICE_UNAVAILABLE", `The chain refused the transaction (${error.revert?.name ?? "reverted"})`);
  }
  if (error instanceof TransactionPendingError) {
    throw new AppError("SERVICE_UNAVAILABLE", "The transaction is not mined yet; retry with the same Idempotency-Key to get its outcome");
  }
  throw error;
}

export function createSandboxService({ sender, usdc }: SandboxDeps) {
  return {
    /** Mints `amount` micro-USDC of test USDC to the user's managed wallet. */
    async faucet(user: UserRecord, amount: bigint, idempotencyKey: string) {
      if (!usdc) throw new AppError("SERVICE_UNAVAILABLE", "This chain has real USDC (USDC_ADDRESS): there is no faucet");
      const wallet = user.walletAddress!;
      const data = usdc.interface.encodeFunctionData("mint", [wallet, amount]);
      const sent = await sender
        .send({ purpose: "sandbox.faucet", userId: user.id, idempotencyKey, to: await usdc.getAddress(), data })
        .catch(chainFailure);
      const balance = (await usdc.balanceOf(wallet, { blockTag: sent.blockNumber })) as bigint;
      return { walletAddress: wallet, amount: formatUsdc2(amount), balance: formatUsdc2(balance), txHash: sent.txHash };
    },
  };
}

export type SandboxService = ReturnType<typeof createSandboxService>;
