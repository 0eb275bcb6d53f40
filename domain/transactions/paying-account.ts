// The paying account at the node: it signs the service's transactions, reads the fees, and
// broadcasts the signed bytes (several at once, in nonce order), keeping later nonces from being
// stuck behind a gap. What is sent, and when, is the batcher's (`batcher.ts`): it records every
// transaction before it reaches this module.
import { type JsonRpcProvider, Transaction, type TransactionReceipt, type Wallet } from "ethers";
import type { Logger } from "../../core/logger.js";

/**
 * What a broadcast came to: refused by the node (error), or taken (or not answered at all), with
 * the receipt when the node mined it at once.
 */
export type Broadcast = { error?: Error; receipt?: TransactionReceipt };

/**
 * The node answered "nonce too low" and knows nothing of these bytes: another transaction took
 * their nonce (sent with the same key from elsewhere), so they can never be mined.
 */
export class NonceTakenError extends Error {
  override name = "NonceTakenError";
}

export type Fees = { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint };

/**
 * How long a broadcast refused for a nonce ahead of the chain is retried: another process's
 * lower nonce is on its way (an automining node such as Hardhat's refuses to queue).
 */
const NONCE_AHEAD_RETRY_MS = 15_000;
/** How long one reading of the node's fee figures is used. */
const FEE_CACHE_MS = 2_000;

export function createPayingAccount({
  provider,
  chainId,
  account,
  logger,
}: {
  provider: JsonRpcProvider;
  chainId: number;
  account: Wallet;
  logger?: Pick<Logger, "warn"> | undefined;
}) {
  /**
   * An EIP-1559 transaction signed with the paying account's key: its bytes and hash. Signed
   * here rather than by Wallet.signTransaction, which resolves every field and serializes twice.
   */
  function sign(fields: {
    nonce: number;
    to: string;
    data?: string;
    value?: bigint;
    gasLimit: bigint;
    maxFeePerGas: bigint;
    maxPriorityFeePerGas: bigint;
  }): { rawTx: string; txHash: string } {
    const transaction = Transaction.from({ type: 2, chainId, ...fields });
    transaction.signature = account.signingKey.sign(transaction.unsignedHash);
    return { rawTx: transaction.serialized, txHash: transaction.hash! };
  }

  let feeCache: { at: number; fees: Promise<Fees> } | undefined;
  /**
   * EIP-1559 fees from the node (a legacy gas price as the cap where the node gives no 1559
   * figures), read at most once per FEE_CACHE_MS: ethers' maxFeePerGas is twice the base fee plus
   * the tip, room for several blocks of base-fee rises.
   */
  function fees(): Promise<Fees> {
    if (!feeCache || Date.now() - feeCache.at > FEE_CACHE_MS) {
      const fees = provider.getFeeData().then((data) => ({
        maxFeePerGas: data.maxFeePerGas ?? data.gasPrice ?? 1_000_000_000n,
        maxPriorityFeePerGas: data.maxPriorityFeePerGas ?? 0n,
      }));
      feeCache = { at: Date.now(), fees };
      fees.catch(() => {
        feeCache = undefined;
      });
    }
    return feeCache.fees;
  }

  /**
   * Signed transactions in nonce order, as one JSON-RPC batch: a node takes a batch's calls in
   * order, so many transactions cost one round trip. Each broadcast is followed in the batch by a
   * request for its receipt: a node that mines on arrival (Hardhat's automine) answers it at once,
   * and the send needs no further round trip.
   */
  async function broadcast(batch: readonly { rawTx: string; txHash: string }[]): Promise<Broadcast[]> {
    try {
      const calls = batch.flatMap((item, index) => [
        { id: 2 * index, jsonrpc: "2.0" as const, method: "eth_sendRawTransaction", params: [item.rawTx] },
        { id: 2 * index + 1, jsonrpc: "2.0" as const, method: "eth_getTransactionReceipt", params: [item.txHash] },
      ]);
      const results = new Map((await provider._send(calls)).map((result) => [result.id, result]));
      const network = await provider.getNetwork();
      return batch.map((_, index): Broadcast => {
        const sent = results.get(2 * index);
        const receipt = results.get(2 * index + 1);
        if (!sent) return { error: new Error("no answer to eth_sendRawTransaction") };
        if ("error" in sent) return { error: new Error(String((sent.error as { message?: string }).message ?? "refused")) };
        if (receipt && "result" in receipt && receipt.result)
          return { receipt: provider._wrapTransactionReceipt(receipt.result as never, network) };
        return {};
      });
    } catch (error) {
      // No answer (the connection failed): the bytes may have reached the node, so they are not
      // refused. The receipt wait finds them, or broadcasts them again if the node never had them.
      logger?.warn({ error: (error as Error).message, transactions: batch.length }, "a broadcast got no answer from the node");
      return batch.map(() => ({}));
    }
  }

  /**
   * What a refusal of these bytes means: "already known" is sent; a used nonce is sent only if
   * the node knows the bytes (mined or pending), else another transaction took the nonce
   * (NonceTakenError); "nonce too high" is for the caller to wait on; anything else is refused.
   */
  async function refusal(txHash: string, error: Error): Promise<"sent" | "ahead" | Error> {
    const message = String(error.message).toLowerCase();
    if (/already known|known transaction/.test(message)) return "sent";
    if (/nonce too low|nonce has already been used/.test(message)) {
      const known = await provider.getTransaction(txHash).catch(() => null);
      return known ? "sent" : new NonceTakenError(`nonce taken by another transaction: ${error.message.slice(0, 200)}`);
    }
    return /nonce too high/.test(message) ? "ahead" : error;
  }

  /**
   * Broadcasts the bytes again (or the first time, alone), and the receipt where the node had it
   * at once (see `refusal`). A nonce ahead of the chain waits for the lower ones (bounded), then
   * fills a gap nothing will fill.
   */
  async function sendRaw(rawTx: string): Promise<TransactionReceipt | undefined> {
    const { hash: txHash, nonce } = Transaction.from(rawTx);
    let deadline = Date.now() + NONCE_AHEAD_RETRY_MS;
    let gapFilled = false;
    for (let wait = 25; ; wait = Math.min(wait * 2, 1_000)) {
      const [{ error, receipt }] = (await broadcast([{ rawTx, txHash: txHash! }])) as [Broadcast];
      if (!error) return receipt;
      const meaning = await refusal(txHash!, error);
      if (meaning === "sent") return undefined;
      if (meaning !== "ahead") throw meaning;
      if (wait === 25) logger?.warn({ txHash, nonce }, "a broadcast reached the node ahead of a lower nonce; trying again");
      if (Date.now() > deadline) {
        if (gapFilled) throw error;
        // No lower nonce arrived: a refused transaction whose filler failed too (the account
        // was out of gas money, say) left a gap. Fill it, then try once more.
        await fillGapBelow(nonce);
        gapFilled = true;
        deadline = Date.now() + 2_000;
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  /** A zero-value transfer to the paying account at `nonce`, so later nonces are not stuck behind it. */
  async function fillNonce(nonce: number): Promise<void> {
    const { rawTx } = sign({ nonce, to: account.address, value: 0n, gasLimit: 21_000n, ...(await fees()) });
    await provider.send("eth_sendRawTransaction", [rawTx]);
  }

  async function fillGapBelow(nonce: number): Promise<void> {
    const next = await provider.getTransactionCount(account.address, "pending");
    if (next >= nonce) return;
    logger?.warn({ from: next, to: nonce - 1 }, "filling nonces nothing was sent with, so later transactions are not stuck");
    for (let gap = next; gap < nonce; gap += 1) {
      await fillNonce(gap).catch((error: Error) => logger?.warn({ nonce: gap, error: error.message }, "could not fill a nonce"));
    }
  }

  return { sign, fees, broadcast, refusal, sendRaw, fillNonce };
}

export type PayingAccount = ReturnType<typeof createPayingAccount>;
