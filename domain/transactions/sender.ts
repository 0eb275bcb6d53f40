// The one module that sends the service's transactions. Every transaction is signed and
// recorded before it is broadcast (ChainTransaction), with its nonce taken by the batcher
// (batcher.ts: SenderNonce, a row lock) so that any number of concurrent requests and processes
// never sign two transactions with one nonce; a restart re-broadcasts what was recorded and
// settles it. A request's idempotency key is kept on its transaction: a retry finds it and never
// sends again.
import { type Contract, type Interface, type JsonRpcProvider, Transaction, type TransactionReceipt, type Wallet } from "ethers";
import type { Logger } from "../../core/logger.js";
import type { ChainTransaction } from "../../generated/prisma/client.js";
import { keyReused } from "../idempotency/operation-key.js";
import { BATCH_PURPOSE, type Batched, type BatchItem, createBatcher, type SendRequest } from "./batcher.js";
import { decodeRevert, TransactionPendingError, TransactionRefusedError, TransactionRevertedError } from "./failures.js";
import { createPayingAccount, NonceTakenError } from "./paying-account.js";
import type { TransactionsRepo } from "./repo.js";

export type { SendRequest };

export interface SentTransaction {
  txHash: string;
  blockNumber: number;
  receipt: TransactionReceipt;
  /** The transaction's logs; for a user's request in a batch, only those its own call emitted. */
  logs: TransactionReceipt["logs"];
}

export interface SenderDeps {
  /** The transactions' records (repo.ts, built for this chain and this account). */
  repo: TransactionsRepo;
  provider: JsonRpcProvider;
  chainId: number;
  /** The paying account (it holds ETH for gas and the roles its operations need). */
  account: Wallet;
  /** Every platform contract's ABI, to decode custom errors. */
  errors: Interface;
  /** The forwarder users' requests are batched to (`executeBatch`). */
  forwarder: Contract;
  logger?: Pick<Logger, "warn" | "info">;
  /** How long a send waits for its receipt. */
  receiptTimeoutMs?: number;
  /** How long a sent transaction may wait unmined before it is replaced with higher fees. */
  replaceAfterMs?: number;
  /**
   * The call to replay to decode a mined revert, where it is not the transaction itself: a
   * forwarder hides its target's error (FailedCall), so a relayed call is replayed from its user.
   */
  replayOf?(transaction: { to: string; data: string }): { from: string; to: string; data: string } | null;
}

/** Gas limit headroom over the estimate: state can move between estimate and inclusion. */
const GAS_HEADROOM_PERCENT = 120n;
/** A replacement's fees over the stuck transaction's: geth's minimum bump is 10 %. */
const REPLACEMENT_BUMP_PERCENT = 125n;

export function createTransactionSender(deps: SenderDeps) {
  const { repo, provider, chainId, account } = deps;
  const receiptTimeoutMs = deps.receiptTimeoutMs ?? 60_000;
  const replaceAfterMs = deps.replaceAfterMs ?? 20_000;

  const decode = (error: unknown) => decodeRevert(deps.errors, error);
  const payingAccount = createPayingAccount({ provider, chainId, account, logger: deps.logger });
  const { sign, sendRaw, fillNonce } = payingAccount;
  const batcher = createBatcher({ repo, provider, account, payingAccount, forwarder: deps.forwarder });

  /**
   * Re-signs a transaction that has waited `replaceAfterMs` unmined: same nonce, call and gas
   * limit, fees 25 % above the old ones (nodes require at least 10 % of a replacement) and at
   * least the node's current figures. The row keeps its earlier hashes: whichever is mined settles
   * it. A transaction the node has forgotten (dropped) is broadcast again as it was first.
   */
  async function replace(rowId: string): Promise<void> {
    const row = await repo.transaction(rowId);
    if (!(await provider.getTransaction(row.txHash).catch(() => null))) {
      deps.logger?.warn({ txHash: row.txHash, nonce: row.nonce }, "a sent transaction was dropped by the node; broadcasting it again");
      await sendRaw(row.rawTx).catch(() => undefined);
      return;
    }
    const old = Transaction.from(row.rawTx);
    const fresh = await provider.getFeeData();
    const bump = (value: bigint | null) => ((value ?? 0n) * REPLACEMENT_BUMP_PERCENT) / 100n + 1n;
    const maxPriorityFeePerGas = [bump(old.maxPriorityFeePerGas), fresh.maxPriorityFeePerGas ?? 0n].reduce((a, b) => (a > b ? a : b));
    let maxFeePerGas = [bump(old.maxFeePerGas), fresh.maxFeePerGas ?? fresh.gasPrice ?? 0n].reduce((a, b) => (a > b ? a : b));
    if (maxFeePerGas < maxPriorityFeePerGas) maxFeePerGas = maxPriorityFeePerGas;
    const { rawTx, txHash } = sign({
      nonce: row.nonce,
      to: row.to,
      data: row.data,
      gasLimit: old.gasLimit,
      maxFeePerGas,
      maxPriorityFeePerGas,
    });
    await repo.replaced(row, rawTx, txHash);
    deps.logger?.warn(
      { nonce: row.nonce, stuck: row.txHash, replacement: txHash, maxFeePerGas: maxFeePerGas.toString() },
      "replaced a stuck transaction with higher fees",
    );
    await sendRaw(rawTx).catch((error: Error) =>
      deps.logger?.warn({ txHash, error: error.message }, "the node refused a replacement; the next attempt bumps again"),
    );
  }

  /** The receipt of whichever of the row's hashes is mined; replaces it while it waits too long. */
  async function awaitReceipt(rowId: string): Promise<TransactionReceipt | null> {
    const deadline = Date.now() + receiptTimeoutMs;
    let replaceAt = Date.now() + replaceAfterMs;
    for (let wait = 50; ; wait = Math.min(wait * 2, 1_000)) {
      const row = await repo.transaction(rowId);
      for (const hash of [row.txHash, ...row.previousTxHashes]) {
        const receipt = await provider.getTransactionReceipt(hash).catch(() => null);
        if (receipt) return receipt;
      }
      if (Date.now() > deadline) return null;
      if (Date.now() > replaceAt) {
        await replace(rowId);
        replaceAt = Date.now() + replaceAfterMs;
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  /**
   * Brings back what a reorganisation removed (D-90): the transactions recorded as mined (or
   * reverted) whose nonce the chain's count no longer covers are opened again and broadcast as
   * they were, the same bytes, with every other recorded nonce above the count, in order. Their
   * requests keep their forwarder nonces, so the wallets' next requests sign where the chain will
   * be. Answers how many were removed (0: nothing to do, nothing sent).
   */
  async function restoreRemoved(): Promise<number> {
    const onChain = await provider.getTransactionCount(account.address, "pending");
    const notHeld = await repo.notHeldBetween(onChain);
    const removed = notHeld.filter((row) => row.status === "mined" || row.status === "reverted");
    if (removed.length === 0) return 0;
    deps.logger?.warn(
      { removed: removed.map((row) => row.txHash), from: onChain },
      "a reorganisation removed transactions the service sent; broadcasting them again",
    );
    await repo.reopen(removed.map((row) => row.id));
    await payingAccount.broadcast(notHeld);
    return removed.length;
  }

  /**
   * The receipt of a recorded transaction once mined (unless the broadcast brought it), its row
   * settled `mined` or `reverted`; TransactionPendingError after the receipt wait.
   */
  async function mined(txHash: string, known?: TransactionReceipt): Promise<TransactionReceipt> {
    // A node that mines on arrival has the receipt at once.
    let receipt = known ?? (await provider.getTransactionReceipt(txHash).catch(() => null));
    const row = receipt ? null : await repo.transactionByHash(txHash);
    // Settled once, and the chain no longer has it: a reorganisation removed it; it comes back at once.
    if (!receipt && (row?.status === "mined" || row?.status === "reverted")) {
      await restoreRemoved();
      // Not reopened: the chain's count is past its nonce, which another transaction of this account
      // holds in the new branch (D-94). These bytes can never be mined: refused, nothing filled.
      const after = await repo.transactionByHash(txHash);
      const settled = after?.status === "mined" || after?.status === "reverted";
      if (settled && !(await provider.getTransactionReceipt(txHash))) {
        if ((await provider.getTransactionCount(account.address, "latest")) > Number(after.nonce)) {
          throw await refused(after, new NonceTakenError(`nonce ${after.nonce} is held by another transaction after a reorganisation`));
        }
      }
    }
    if (!receipt && row) receipt = await awaitReceipt(row.id);
    if (!receipt) throw new TransactionPendingError(`transaction ${txHash} is not mined yet`);
    await repo.mined(txHash, receipt);
    return receipt;
  }

  /** `mined`, with a revert replayed to decode its error (thrown, and kept on the row). */
  async function settle(txHash: string, request: { to: string; data: string }, known?: TransactionReceipt): Promise<SentTransaction> {
    const receipt = await mined(txHash, known);
    if (receipt.status === 1) return { txHash: receipt.hash, blockNumber: receipt.blockNumber, receipt, logs: receipt.logs };
    let reverted: TransactionRevertedError | null = null;
    const replay = deps.replayOf?.(request) ?? { from: account.address, to: request.to, data: request.data };
    try {
      await provider.call({ ...replay, blockTag: receipt.blockNumber - 1 });
    } catch (error) {
      reverted = decode(error);
    }
    reverted ??= new TransactionRevertedError(null, "reverted");
    await repo.revertedWith(receipt.hash, reverted.message);
    throw reverted;
  }

  /**
   * Records bytes the node refused (`failed`) and answers TransactionRefusedError. Their nonce
   * would block every later one, so a zero-value transfer to ourselves takes it, unless another
   * transaction already did (NonceTakenError).
   */
  async function refused(transaction: Batched["transaction"], error: Error): Promise<TransactionRefusedError> {
    await repo.failed(transaction.id, error.message);
    deps.logger?.warn(
      { txHash: transaction.txHash, nonce: transaction.nonce, error: error.message },
      "transaction refused by the node; filling its nonce",
    );
    if (!(error instanceof NonceTakenError)) {
      await fillNonce(transaction.nonce).catch((fillError: Error) =>
        deps.logger?.warn({ nonce: transaction.nonce, error: fillError.message }, "could not fill a refused transaction's nonce"),
      );
    }
    return new TransactionRefusedError(`the node refused the transaction: ${error.message.slice(0, 200)}`);
  }

  /** The transaction recorded for a request's (userId, idempotencyKey, purpose), if any. */
  const earlier = repo.transactionFor;

  /**
   * A recorded transaction's bytes, broadcast again where they were never known to be mined
   * (the same bytes: a node that has them answers "already known"), and the receipt where the
   * node mined them at once. Refused ones can never be mined.
   */
  async function rebroadcast(row: ChainTransaction): Promise<TransactionReceipt | undefined> {
    // Its nonce went to a filler transaction, or to another transaction: these bytes can never be mined.
    if (row.status === "failed") throw new TransactionRefusedError(`the node refused transaction ${row.txHash}`);
    if (row.status !== "signed" && row.status !== "sent") return undefined;
    return sendRaw(row.rawTx).catch(async (error: Error) => {
      throw error instanceof NonceTakenError ? await refused(row, error) : error;
    });
  }

  /**
   * The outcome of a transaction recorded before (a retry, or a restart). A retry of another
   * request under the row's key (`requestHash` differs) is refused instead.
   */
  async function resume(row: ChainTransaction, requestHash?: string): Promise<SentTransaction> {
    // The key's answer may be long gone (kept 24 hours); the transaction keeps what sent it.
    if (requestHash && row.requestHash && row.requestHash !== requestHash) throw keyReused();
    return settle(row.txHash, row, await rebroadcast(row));
  }

  return {
    address: account.address,
    earlier,
    /** Frees the key of a recorded transaction that did nothing (reverted or refused): the next `send` under it is sent anew. */
    releaseKey: async (row: ChainTransaction) => (await repo.releaseTransactionKey(row.id)) === 1,
    resume,
    rebroadcast,
    mined,
    refused,

    /** Records a user's request (or a call) in the next batch and broadcasts it (batcher.ts). */
    submit: (item: BatchItem) => batcher.submit(item),

    /**
     * Sends one transaction of the service's own and returns its receipt. A revert found by the
     * gas estimate is thrown (decoded) before anything is recorded, so a refused request leaves
     * no state behind. A retry with the same (userId, idempotencyKey, purpose) settles the
     * transaction recorded first.
     */
    async send(request: SendRequest): Promise<SentTransaction> {
      if (request.userId && request.idempotencyKey) {
        const row = await earlier({ userId: request.userId, idempotencyKey: request.idempotencyKey, purpose: request.purpose });
        if (row) return resume(row, request.requestHash);
      }
      let gasLimit = request.gasLimit;
      try {
        gasLimit ??=
          ((await provider.estimateGas({ from: account.address, to: request.to, data: request.data })) * GAS_HEADROOM_PERCENT) / 100n;
      } catch (error) {
        throw decode(error) ?? error;
      }
      const { transaction, broadcast } = await batcher.submit({ own: { ...request, gasLimit } });
      if (broadcast.error) throw await refused(transaction, broadcast.error);
      // Left "signed" when the node took it: settle records the outcome next, and a restart
      // broadcasts a signed row again anyway (the node answers "already known").
      return settle(transaction.txHash, request, broadcast.receipt);
    },

    /**
     * Settles what a stopped process left in flight: recorded transactions that were never
     * broadcast, or whose receipt was never read, are broadcast again (the same bytes, in nonce
     * order) and settled. A batch of users' requests is only mined here: its requests are the
     * relay's to settle (user-transactions.ts). Returns how many it settled.
     */
    async reconcile(): Promise<number> {
      const open = await repo.openTransactions();
      let settled = 0;
      for (const row of open) {
        try {
          if (row.purpose === BATCH_PURPOSE) await mined(row.txHash, await rebroadcast(row));
          else await resume(row);
          settled += 1;
        } catch (error) {
          if (error instanceof TransactionRevertedError) settled += 1;
          else deps.logger?.warn({ txHash: row.txHash, error: (error as Error).message }, "reconcile: transaction not settled");
        }
      }
      if (open.length > 0) deps.logger?.info({ open: open.length, settled }, "reconciled transactions left in flight");
      return settled;
    },

    restoreRemoved,

    /** The paying account's balance of the chain's gas token (/health warns when it runs low). */
    balance: () => provider.getBalance(account.address),
  };
}

export type TransactionSender = ReturnType<typeof createTransactionSender>;
