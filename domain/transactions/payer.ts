// The paying account's gas money: read at most every CHECK_MS, reported by /health, and a
// warning logged when it falls below the configured floor (an info line when it is back above).
import type { Logger } from "../../core/logger.js";

/** A balance reading serves this long: /health answers at once, for one RPC call per 15 s at most. */
const CHECK_MS = 15_000;

export interface PayerStatus {
  address: string;
  /** Wei, as a decimal string (JSON has no bigint). */
  balanceWei: string;
  lowBalanceWei: string;
  low: boolean;
}

export function createPayerWatch(deps: {
  address: string;
  balance(): Promise<bigint>;
  lowBalanceWei: bigint;
  logger?: Pick<Logger, "warn" | "info">;
}) {
  let last: { at: number; status: Promise<PayerStatus> } | undefined;
  let wasLow = false;

  async function read(): Promise<PayerStatus> {
    const balance = await deps.balance();
    const low = balance < deps.lowBalanceWei;
    if (low && !wasLow) {
      deps.logger?.warn(
        { payer: deps.address, balanceWei: balance.toString(), lowBalanceWei: deps.lowBalanceWei.toString() },
        "the paying account runs low on gas money: fund it before its transactions fail",
      );
    } else if (!low && wasLow) {
      deps.logger?.info({ payer: deps.address, balanceWei: balance.toString() }, "the paying account is funded again");
    }
    wasLow = low;
    return { address: deps.address, balanceWei: balance.toString(), lowBalanceWei: deps.lowBalanceWei.toString(), low };
  }

  return {
    /** The latest reading, at most CHECK_MS old; a failed read is retried on the next call. */
    status(): Promise<PayerStatus> {
      if (!last || Date.now() - last.at > CHECK_MS) {
        const status = read();
        last = { at: Date.now(), status };
        status.catch(() => {
          last = undefined;
        });
      }
      return last.status;
    },
  };
}

export type PayerWatch = ReturnType<typeof createPayerWatch>;
