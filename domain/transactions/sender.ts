// The one module that sends the service's transactions. Every transaction is signed and
// recorded before it is broadcast (ChainTransaction), with its nonce taken from the database
// (SenderNonce, a row lock) so that any number of concurrent requests and processes never sign
// two transactions with one nonce; a restart re-broadcasts what was recorded and settles it.
// A request's idempotency key is kept on its transaction: a retry finds it and never sends again.
import { randomUUID } from "node:crypto";
import { type Interface, type JsonRpcProvider, Transaction, type TransactionReceipt, type Wallet } from "ethers";
import { coalesce } from "../../core/coalesce.js";
import type { Logger } from "../../core/logger.js";
import type { ChainTransaction } from "../../generated/prisma/client.js";
import type { Db } from "../db.js";
import { keyReused } from "../idempotency/operation-key.js";
import { decodeRevert, TransactionPendingError, TransactionRefusedError, TransactionRevertedError } from "./failures.js";
import { type Broadcast, createPayingAccount, type Fees } from "./paying-account.js";

export interface SendRequest {
  purpose: string;
  to: string;
  data: string;
  /** With `idempotencyKey`: a retry of the same request finds this transaction instead of sending another. */
  userId?: string;
  idempotencyKey?: string;
  /** The request that sent it: a retry under the same key with another request is refused (422). */
  requestHash?: string;
  /** Skips the gas estimate (the caller simulated the call itself, e.g. a relayed user call). */
  gasLimit?: bigint;
  /** The caller looked up (userId, idempotencyKey, purpose) itself and found nothing. */
  isNew?: boolean;
}

export interface SentTransaction {
  txHash: string;
  blockNumber: number;
  receipt: TransactionReceipt;
}

export interface SenderDeps {
  db: Db;
  provider: JsonRpcProvider;
  chainId: number;
  /** The paying account (it holds ETH for gas and the roles its operations need). */
  account: Wallet;
  /** Every platform contract's ABI, to decode custom errors. */
  errors: Interface;
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
/** Most transactions recorded in one database transaction. */
const MAX_RECORD_BATCH = 50;
export function createTransactionSender(deps: SenderDeps) {
  const { db, provider, chainId, account } = deps;
  const sender = account.address.toLowerCase();
  const receiptTimeoutMs = deps.receiptTimeoutMs ?? 60_000;
  const replaceAfterMs = deps.replaceAfterMs ?? 20_000;

  const decode = (error: unknown) => decodeRevert(deps.errors, error);
  const { sign, fees, sendRaw, fillNonce } = createPayingAccount({ provider, chainId, account, logger: deps.logger });

  type Recorded = { rawTx: string; txHash: string; nonce: number };
  type Queued = { request: SendRequest; gasLimit: bigint; fee: Fees };

  /**
   * Takes the next nonces for `batch` in one locking statement, never behind the chain's own
   * count (read once per batch: the account may have sent elsewhere, by a script with the same
   * key, say), signs them and records them, all in one database transaction.
   */
  async function recordMany(batch: Queued[]): Promise<Recorded[]> {
    const onChain = await provider.getTransactionCount(account.address, "pending");
    const count = batch.length;
    return db.prisma.$transaction(async (tx) => {
      const [{ first }] = await tx.$queryRaw<{ first: number }[]>`
        INSERT INTO "SenderNonce" ("chainId", "address", "nextNonce", "updatedAt")
        VALUES (${chainId}, ${sender}, ${onChain + count}, now())
        ON CONFLICT ("chainId", "address") DO UPDATE
          SET "nextNonce" = GREATEST("SenderNonce"."nextNonce", ${onChain}) + ${count}, "updatedAt" = now()
        RETURNING "nextNonce" - ${count} AS "first"`;
      const recorded = batch.map(({ request, gasLimit, fee }, index) => {
        const nonce = Number(first) + index;
        return { request, nonce, ...sign({ nonce, to: request.to, data: request.data, gasLimit, ...fee }) };
      });
      const now = new Date();
      await tx.chainTransaction.createMany({
        data: recorded.map(({ request, rawTx, txHash, nonce }) => ({
          id: randomUUID(),
          chainId,
          purpose: request.purpose,
          userId: request.userId ?? null,
          idempotencyKey: request.idempotencyKey ?? null,
          requestHash: request.requestHash ?? null,
          sender,
          nonce,
          to: request.to.toLowerCase(),
          data: request.data,
          rawTx,
          txHash,
          status: "signed",
          createdAt: now,
        })),
      });
      return recorded;
    });
  }

  // Requests waiting for a nonce are recorded together (one transaction, one row lock: group
  // commit) while the batch before them is being recorded, and their broadcasts queued in nonce
  // order as soon as they are recorded, so the node receives this process's transactions in
  // nonce order (other processes' interleave, and are retried below).
  type Queuing = { recorded: Recorded; sending: Promise<Broadcast> };
  const queue = (one: Recorded): Queuing => ({
    recorded: one,
    sending: sendRaw(one.rawTx).then(
      (receipt) => ({ receipt }),
      (error: Error) => ({ error }),
    ),
  });
  const recordBatch = coalesce(
    async (batch: readonly Queued[]): Promise<(Queuing | Error)[]> => {
      try {
        return (await recordMany([...batch])).map(queue);
      } catch (error) {
        if (batch.length === 1) return [error as Error];
        // One request's row refused (a duplicate key) must not fail the others: each alone.
        const outcomes: (Queuing | Error)[] = [];
        for (const item of batch)
          outcomes.push(
            await recordMany([item]).then(
              ([one]) => queue(one!),
              (itemError: Error) => itemError,
            ),
          );
        return outcomes;
      }
    },
    { maxBatch: MAX_RECORD_BATCH },
  );
  const recordAndQueue = async (queued: Queued): Promise<Queuing> => {
    const outcome = await recordBatch(queued);
    if (outcome instanceof Error) throw outcome;
    return outcome;
  };

  /**
   * Re-signs a transaction that has waited `replaceAfterMs` unmined: same nonce, call and gas
   * limit, fees 25 % above the old ones (nodes require at least 10 % of a replacement) and at
   * least the node's current figures. The row keeps its earlier hashes: whichever is mined settles
   * it. A transaction the node has forgotten (dropped) is broadcast again as it was first.
   */
  async function replace(rowId: string): Promise<void> {
    const row = await db.prisma.chainTransaction.findUniqueOrThrow({ where: { id: rowId } });
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
    await db.prisma.chainTransaction.update({
      where: { id: row.id },
      data: { rawTx, txHash, previousTxHashes: { push: row.txHash } },
    });
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
      const row = await db.prisma.chainTransaction.findUniqueOrThrow({ where: { id: rowId } });
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
   * Waits for the receipt (unless the broadcast brought it) and records the outcome; a revert is
   * replayed to decode its error.
   */
  async function settle(txHash: string, request: { to: string; data: string }, known?: TransactionReceipt): Promise<SentTransaction> {
    // A node that mines on arrival has the receipt at once.
    let receipt = known ?? (await provider.getTransactionReceipt(txHash).catch(() => null));
    const row = receipt
      ? null
      : await db.prisma.chainTransaction.findFirst({ where: { OR: [{ txHash }, { previousTxHashes: { has: txHash } }] } });
    if (!receipt && row) receipt = await awaitReceipt(row.id);
    if (!receipt) throw new TransactionPendingError(`transaction ${txHash} is not mined yet`);
    const where = { OR: [{ txHash }, { previousTxHashes: { has: txHash } }, { txHash: receipt.hash }] };
    if (receipt.status === 1) {
      await db.prisma.chainTransaction.updateMany({
        where,
        data: { status: "mined", txHash: receipt.hash, blockNumber: receipt.blockNumber, settledAt: new Date() },
      });
      return { txHash: receipt.hash, blockNumber: receipt.blockNumber, receipt };
    }
    let reverted: TransactionRevertedError | null = null;
    const replay = deps.replayOf?.(request) ?? { from: account.address, to: request.to, data: request.data };
    try {
      await provider.call({ ...replay, blockTag: receipt.blockNumber - 1 });
    } catch (error) {
      reverted = decode(error);
    }
    reverted ??= new TransactionRevertedError(null, "reverted");
    await db.prisma.chainTransaction.updateMany({
      where,
      data: { status: "reverted", txHash: receipt.hash, blockNumber: receipt.blockNumber, error: reverted.message, settledAt: new Date() },
    });
    throw reverted;
  }

  /** The transaction recorded for a request's (userId, idempotencyKey, purpose), if any. */
  const earlier = (key: { userId: string; idempotencyKey: string; purpose: string }) =>
    db.prisma.chainTransaction.findUnique({ where: { userId_idempotencyKey_purpose: key } });

  /**
   * The outcome of a transaction recorded before (a retry, or a restart): bytes never known to
   * be mined are broadcast again as they are and settled; refused ones can never be mined. A
   * retry of another request under the row's key (`requestHash` differs) is refused instead.
   */
  async function resume(row: ChainTransaction, requestHash?: string): Promise<SentTransaction> {
    // The key's answer may be long gone (kept 24 hours); the transaction keeps what sent it.
    if (requestHash && row.requestHash && row.requestHash !== requestHash) throw keyReused();
    // Its nonce went to a filler transaction: these bytes can never be mined.
    if (row.status === "failed") throw new TransactionRefusedError(`the node refused transaction ${row.txHash}`);
    const receipt = row.status === "signed" || row.status === "sent" ? await sendRaw(row.rawTx) : undefined;
    return settle(row.txHash, row, receipt);
  }

  return {
    address: account.address,
    earlier,
    resume,

    /**
     * Sends one transaction and returns its receipt. A revert found by the gas estimate is thrown
     * (decoded) before anything is recorded, so a refused request leaves no state behind. A retry
     * with the same (userId, idempotencyKey, purpose) settles the transaction recorded first.
     */
    async send(request: SendRequest): Promise<SentTransaction> {
      if (request.userId && request.idempotencyKey && !request.isNew) {
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
      const fee = await fees();
      const { recorded: signed, sending } = await recordAndQueue({ request, gasLimit, fee });
      // Left "signed" when the node took it: settle records the outcome next, and a restart
      // broadcasts a signed row again anyway (the node answers "already known").
      const { error, receipt } = await sending;
      if (error) {
        // The node refused the bytes: record it. Its nonce would block every later one, so a
        // zero-value transfer to ourselves takes it.
        await db.prisma.chainTransaction.updateMany({
          where: { txHash: signed.txHash },
          data: { status: "failed", error: error.message.slice(0, 500), settledAt: new Date() },
        });
        deps.logger?.warn(
          { txHash: signed.txHash, nonce: signed.nonce, error: error.message },
          "transaction refused by the node; filling its nonce",
        );
        await fillNonce(signed.nonce).catch((fillError: Error) =>
          deps.logger?.warn({ nonce: signed.nonce, error: fillError.message }, "could not fill a refused transaction's nonce"),
        );
        throw new TransactionRefusedError(`the node refused the transaction: ${error.message.slice(0, 200)}`);
      }
      return settle(signed.txHash, request, receipt);
    },

    /**
     * Settles what a stopped process left in flight: recorded transactions that were never
     * broadcast, or whose receipt was never read, are broadcast again (the same bytes) and
     * settled. Returns how many it settled.
     */
    async reconcile(): Promise<number> {
      const open = await db.prisma.chainTransaction.findMany({
        where: { chainId, sender, status: { in: ["signed", "sent"] } },
        orderBy: { nonce: "asc" },
      });
      let settled = 0;
      for (const row of open) {
        try {
          await resume(row);
          settled += 1;
        } catch (error) {
          if (error instanceof TransactionRevertedError) settled += 1;
          else deps.logger?.warn({ txHash: row.txHash, error: (error as Error).message }, "reconcile: transaction not settled");
        }
      }
      if (open.length > 0) deps.logger?.info({ open: open.length, settled }, "reconciled transactions left in flight");
      return settled;
    },

    /** The paying account's balance of the chain's gas token (/health warns when it runs low). */
    balance: () => provider.getBalance(account.address),
  };
}

export type TransactionSender = ReturnType<typeof createTransactionSender>;
