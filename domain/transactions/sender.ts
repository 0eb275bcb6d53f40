// The one module that sends the service's transactions. Every transaction is signed and
// recorded before it is broadcast (ChainTransaction), with its nonce taken from the database
// (SenderNonce, a row lock) so that any number of concurrent requests and processes never sign
// two transactions with one nonce; a restart re-broadcasts what was recorded and settles it.
// A request's idempotency key is kept on its transaction: a retry finds it and never sends again.
import { randomUUID } from "node:crypto";
import { type Interface, isError, type JsonRpcProvider, Transaction, type TransactionReceipt, type Wallet } from "ethers";
import type { Logger } from "../../core/logger.js";
import type { Db } from "../db.js";

/** A revert decoded against the platform's ABIs: the custom error's name and arguments. */
export class TransactionRevertedError extends Error {
  override name = "TransactionRevertedError";
  constructor(
    readonly revert: { name: string; args: unknown[] } | null,
    message: string,
  ) {
    super(message);
  }
}

/** The chain did not settle the transaction in time (it stays recorded; a later start or retry settles it). */
export class TransactionPendingError extends Error {
  override name = "TransactionPendingError";
}

export interface SendRequest {
  purpose: string;
  to: string;
  data: string;
  /** With `idempotencyKey`: a retry of the same request finds this transaction instead of sending another. */
  userId?: string;
  idempotencyKey?: string;
  /** Skips the gas estimate (the caller simulated the call itself, e.g. a relayed user call). */
  gasLimit?: bigint;
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
  /**
   * The call to replay to decode a mined revert, where it is not the transaction itself: a
   * forwarder hides its target's error (FailedCall), so a relayed call is replayed from its user.
   */
  replayOf?(transaction: { to: string; data: string }): { from: string; to: string; data: string } | null;
}

/** A CALL_EXCEPTION decoded against `errors` (null for any other error). */
export function decodeRevert(errors: Interface, error: unknown): TransactionRevertedError | null {
  if (!isError(error, "CALL_EXCEPTION")) return null;
  const data = (error as { data?: string }).data;
  const parsed = data ? errors.parseError(data) : null;
  const revert = parsed ? { name: parsed.name, args: [...parsed.args] } : null;
  return new TransactionRevertedError(revert, revert ? `reverted with ${revert.name}` : (error.shortMessage ?? "reverted"));
}

/** Gas limit headroom over the estimate: state can move between estimate and inclusion. */
const GAS_HEADROOM_PERCENT = 120n;
/**
 * How long a broadcast refused for a nonce ahead of the chain is retried: another process's
 * lower nonce is on its way (an automining node such as Hardhat's refuses to queue).
 */
const NONCE_AHEAD_RETRY_MS = 15_000;

export function createTransactionSender(deps: SenderDeps) {
  const { db, provider, chainId, account } = deps;
  const sender = account.address.toLowerCase();
  const receiptTimeoutMs = deps.receiptTimeoutMs ?? 60_000;
  // This process takes a nonce and broadcasts it before taking the next, so its transactions reach
  // the node in nonce order (other processes' interleave, and are retried above).
  let inOrder: Promise<unknown> = Promise.resolve();
  const oneAtATime = <T>(work: () => Promise<T>): Promise<T> => {
    const run = inOrder.then(work, work);
    inOrder = run.catch(() => {});
    return run;
  };

  const decode = (error: unknown) => decodeRevert(deps.errors, error);

  /** EIP-1559 fees from the node (a legacy gas price as the cap where the node gives no 1559 figures). */
  async function fees() {
    const data = await provider.getFeeData();
    return { maxFeePerGas: data.maxFeePerGas ?? data.gasPrice ?? 1_000_000_000n, maxPriorityFeePerGas: data.maxPriorityFeePerGas ?? 0n };
  }

  /** Takes the next nonce in one locking statement, never behind the chain's own count. */
  async function signAndRecord(request: SendRequest, gasLimit: bigint) {
    const fee = await fees();
    const onChain = await provider.getTransactionCount(account.address, "pending");
    return db.prisma.$transaction(async (tx) => {
      const [{ nonce }] = await tx.$queryRaw<{ nonce: number }[]>`
        INSERT INTO "SenderNonce" ("chainId", "address", "nextNonce", "updatedAt")
        VALUES (${chainId}, ${sender}, ${onChain + 1}, now())
        ON CONFLICT ("chainId", "address") DO UPDATE
          SET "nextNonce" = GREATEST("SenderNonce"."nextNonce", ${onChain}) + 1, "updatedAt" = now()
        RETURNING "nextNonce" - 1 AS "nonce"`;
      const rawTx = await account.signTransaction({
        type: 2,
        chainId,
        nonce: Number(nonce),
        to: request.to,
        data: request.data,
        gasLimit,
        ...fee,
      });
      const txHash = Transaction.from(rawTx).hash!;
      await tx.chainTransaction.create({
        data: {
          id: randomUUID(),
          chainId,
          purpose: request.purpose,
          userId: request.userId ?? null,
          idempotencyKey: request.idempotencyKey ?? null,
          sender,
          nonce: Number(nonce),
          to: request.to.toLowerCase(),
          data: request.data,
          rawTx,
          txHash,
          status: "signed",
          createdAt: new Date(),
        },
      });
      return { rawTx, txHash, nonce: Number(nonce) };
    });
  }

  /**
   * Broadcasts recorded bytes. "Already known" or a used nonce may mean it went out before: the
   * receipt decides. A nonce ahead of the chain waits for the lower ones (bounded).
   */
  async function broadcast(rawTx: string, txHash: string): Promise<void> {
    const deadline = Date.now() + NONCE_AHEAD_RETRY_MS;
    for (let wait = 25; ; wait = Math.min(wait * 2, 1_000)) {
      try {
        await provider.broadcastTransaction(rawTx);
        break;
      } catch (error) {
        const message = String((error as Error).message).toLowerCase();
        if (/already known|known transaction|nonce too low|nonce has already been used/.test(message)) break;
        if (!/nonce too high/.test(message) || Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
    await db.prisma.chainTransaction.updateMany({ where: { txHash, status: "signed" }, data: { status: "sent" } });
  }

  /** Waits for the receipt and records the outcome; a revert is replayed to decode its error. */
  async function settle(txHash: string, request: { to: string; data: string }, blockTag?: number): Promise<SentTransaction> {
    const receipt = await provider.waitForTransaction(txHash, 1, receiptTimeoutMs).catch(() => null);
    if (!receipt) throw new TransactionPendingError(`transaction ${txHash} is not mined yet`);
    if (receipt.status === 1) {
      await db.prisma.chainTransaction.updateMany({
        where: { txHash },
        data: { status: "mined", blockNumber: receipt.blockNumber, settledAt: new Date() },
      });
      return { txHash, blockNumber: receipt.blockNumber, receipt };
    }
    let reverted: TransactionRevertedError | null = null;
    const replay = deps.replayOf?.(request) ?? { from: account.address, to: request.to, data: request.data };
    try {
      await provider.call({ ...replay, blockTag: blockTag ?? receipt.blockNumber - 1 });
    } catch (error) {
      reverted = decode(error);
    }
    reverted ??= new TransactionRevertedError(null, "reverted");
    await db.prisma.chainTransaction.updateMany({
      where: { txHash },
      data: { status: "reverted", blockNumber: receipt.blockNumber, error: reverted.message, settledAt: new Date() },
    });
    throw reverted;
  }

  return {
    address: account.address,

    /** The transaction recorded for a request's (userId, idempotencyKey, purpose), if any. */
    earlier: (key: { userId: string; idempotencyKey: string; purpose: string }) =>
      db.prisma.chainTransaction.findUnique({ where: { userId_idempotencyKey_purpose: key } }),

    /**
     * Sends one transaction and returns its receipt. A revert found by the gas estimate is thrown
     * (decoded) before anything is recorded, so a refused request leaves no state behind. A retry
     * with the same (userId, idempotencyKey, purpose) settles the transaction recorded first.
     */
    async send(request: SendRequest): Promise<SentTransaction> {
      if (request.userId && request.idempotencyKey) {
        const earlier = await db.prisma.chainTransaction.findUnique({
          where: {
            userId_idempotencyKey_purpose: { userId: request.userId, idempotencyKey: request.idempotencyKey, purpose: request.purpose },
          },
        });
        if (earlier) {
          if (earlier.status === "signed" || earlier.status === "sent") await broadcast(earlier.rawTx, earlier.txHash);
          return settle(earlier.txHash, earlier);
        }
      }
      let gasLimit = request.gasLimit;
      try {
        gasLimit ??=
          ((await provider.estimateGas({ from: account.address, to: request.to, data: request.data })) * GAS_HEADROOM_PERCENT) / 100n;
      } catch (error) {
        throw decode(error) ?? error;
      }
      const signed = await oneAtATime(async () => {
        const recorded = await signAndRecord(request, gasLimit);
        try {
          await broadcast(recorded.rawTx, recorded.txHash);
          return { ...recorded, error: undefined };
        } catch (error) {
          return { ...recorded, error: error as Error };
        }
      });
      if (signed.error) {
        const error = signed.error;
        // The node refused the bytes: record it. Its nonce would block every later one, so a
        // zero-value transfer to ourselves takes it.
        await db.prisma.chainTransaction.updateMany({
          where: { txHash: signed.txHash },
          data: { status: "failed", error: String((error as Error).message).slice(0, 500), settledAt: new Date() },
        });
        deps.logger?.warn(
          { txHash: signed.txHash, nonce: signed.nonce, error: (error as Error).message },
          "transaction refused by the node; filling its nonce",
        );
        await this.fillNonce(signed.nonce).catch((fillError: Error) =>
          deps.logger?.warn({ nonce: signed.nonce, error: fillError.message }, "could not fill a refused transaction's nonce"),
        );
        throw error;
      }
      return settle(signed.txHash, request);
    },

    /** Sends a zero-value transfer to the paying account at `nonce`, so later nonces are not stuck behind it. */
    async fillNonce(nonce: number): Promise<void> {
      const rawTx = await account.signTransaction({
        type: 2,
        chainId,
        nonce,
        to: account.address,
        value: 0n,
        gasLimit: 21_000n,
        ...(await fees()),
      });
      await provider.broadcastTransaction(rawTx);
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
          await broadcast(row.rawTx, row.txHash);
          await settle(row.txHash, row);
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
