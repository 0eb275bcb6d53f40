import type { Database } from "../core/db.js";
import type { Deployment } from "../core/deployments.js";
import type { Logger } from "../core/logger.js";
import { managedWalletsSince } from "../domain/users/wallet-directory.js";
import { ContractCatalogue, logFilters, platformAddresses, startBlock } from "./contracts.js";
import { ChainMovedError, type FetchedRange, fetchRange } from "./fetch.js";
import { applyLogs, type Classifier, decodeLogs, emptyOutput, type IndexedLog } from "./handlers.js";
import { learnAddresses, mirroredWalletIndex } from "./history.js";
import { Idle } from "./idle.js";
import { acquireWriterLock } from "./lock.js";
import { findFork, ReorgStreak } from "./reorg.js";
import { createRpc, isRangeError, sleep, withRetry } from "./rpc.js";
import { entity, StateStore } from "./state.js";
import { type Cursor, CursorMovedError, commitBatch, HEARTBEAT_MS, heartbeat, readCursor, rollbackTo, writeReorgLoop } from "./store.js";

export interface IndexerOptions {
  db: Database;
  rpcUrl: string;
  deployment: Deployment;
  logger: Logger;
  /** Blocks behind the head before a block is indexed (0 on the development chain). */
  confirmations: number;
  /** Head polling interval once caught up. */
  pollMs: number;
  /** Upper bound of the adaptive eth_getLogs block range. */
  maxBlockRange: number;
  /** Logs per range the adaptive range aims at (providers cap answers near 10,000). */
  targetLogsPerRange?: number;
  /** How often progress is logged during a backfill. */
  progressEveryMs?: number;
}

/** Folded rows kept in memory between batches before the cache is dropped. */
const STATE_CACHE_ROWS = 200_000;

/**
 * Mirrors the platform's events into the database: backfill from the deployment, then follow
 * the head; one transaction per block range (rows, events and cursor together); reorgs rolled
 * back to the fork point; a single writer per chain across processes.
 */
export function createIndexer(options: IndexerOptions) {
  const { db, deployment, logger } = options;
  const chainId = deployment.chainId;
  const rpc = createRpc(options.rpcUrl);
  const catalogue = new ContractCatalogue();
  const addresses = platformAddresses(deployment);
  const filters = logFilters(catalogue, addresses);
  const firstBlock = startBlock(deployment);
  const targetLogs = options.targetLogsPerRange ?? 5_000;
  const controller = new AbortController();
  let running: Promise<void> | undefined;
  let indexedBlock = -1;
  let headBlock = -1;
  const indexedListeners = new Set<(block: number) => void>();
  const idle = new Idle();

  function markIndexed(block: number) {
    indexedBlock = block;
    for (const listener of indexedListeners) listener(block);
  }

  /**
   * The social vaults the mirror holds, and the managed wallets whose history it holds: those up to
   * the stored wallet index, asked of the users domain (wallet indexes only grow). A batch learns
   * the others with their history (D-93).
   */
  let walletIndex = -1;
  async function loadClassifier(): Promise<Classifier> {
    const { rows } = await db.sql.query<{ address: string }>(`SELECT "address" FROM "SocialVaultState" WHERE "chainId" = $1`, [chainId]);
    walletIndex = await mirroredWalletIndex(db.sql.query, chainId);
    const { wallets } = await managedWalletsSince(db.sql.query, -1, { through: walletIndex });
    return { addresses, socialVaults: new Set(rows.map((row) => row.address)), wallets: new Set(wallets) };
  }
  const learning = { query: db.sql.query, rpc, catalogue, logger, firstBlock, chunk: options.maxBlockRange };

  async function follow(signal: AbortSignal): Promise<void> {
    const classifier = await loadClassifier();
    let cursor = await readCursor(db.sql.query, chainId);
    // Small first ranges so that fetching, folding and writing overlap from the start; the
    // range then grows towards batches of about `targetLogs` logs.
    let range = Math.min(options.maxBlockRange, 10);
    let prefetch: Promise<FetchedRange> | undefined;
    // Folded rows stay in memory across batches, so the next range is folded while this one is
    // written; at most one commit is in flight, and its failure discards what was built on it.
    let state = new StateStore();
    let writing: Promise<void> | undefined;
    let writeFailed: Error | undefined;
    const drain = async () => {
      const pending = writing;
      writing = undefined;
      if (pending) await pending;
    };
    let lastHeartbeat = 0;
    let progress = { at: performance.now(), block: cursor?.blockNumber ?? firstBlock - 1, logs: 0 };
    const streak = new ReorgStreak(db.sql.query, chainId, logger);
    let parentHashWarned = false;
    let backfilling = false;
    const backfillStart = { at: performance.now(), logs: 0 };
    indexedBlock = cursor?.blockNumber ?? -1;

    const reorg = async (reason: string) => {
      await drain();
      if (writeFailed || !cursor) return;
      prefetch = undefined;
      state = new StateStore();
      const from = cursor;
      const fork = await findFork(db.sql.query, rpc, chainId, firstBlock, from.blockNumber, logger, controller.signal);
      // The fork search compares the stored hashes with the chain's: a fork point at the cursor
      // means the signal was false (a node's inconsistent answers) and there is nothing to undo.
      const unchanged = fork.blockNumber === from.blockNumber && fork.blockHash === from.blockHash;
      let result = { removedLogs: 0, rebuilt: 0, removedEvents: 0 };
      if (!unchanged) {
        result = await rollbackTo(db, catalogue, chainId, from, fork);
        cursor = fork;
        markIndexed(fork.blockNumber);
        Object.assign(classifier, await loadClassifier());
      }
      await streak.rolledBack(reason, from, fork, unchanged, result, headBlock, signal);
    };

    // A loop reported by an earlier writer says nothing about this one.
    if (cursor) await writeReorgLoop(db.sql.query, chainId, null);

    try {
      while (!signal.aborted) {
        if (writeFailed) {
          const error = writeFailed;
          writeFailed = undefined;
          prefetch = undefined;
          state = new StateStore();
          if (error instanceof CursorMovedError) throw error;
          logger.error({ error: error.message }, "writing a batch failed; retrying from the database's cursor");
          await sleep(1_000, signal);
          cursor = await readCursor(db.sql.query, chainId);
          markIndexed(cursor?.blockNumber ?? -1);
          Object.assign(classifier, await loadClassifier());
          continue;
        }
        if (streak.passedBy(indexedBlock)) await streak.end("indexed past the block it had reached", cursor?.blockNumber);
        const head = await withRetry("eth_getBlockByNumber(latest)", () => rpc.latestBlock(), logger, signal);
        headBlock = head.number;
        if (performance.now() - lastHeartbeat > HEARTBEAT_MS && cursor) {
          lastHeartbeat = performance.now();
          await heartbeat(db.sql.query, chainId, head.number);
        }
        if (cursor && (head.number < cursor.blockNumber || (head.number === cursor.blockNumber && head.hash !== cursor.blockHash))) {
          await reorg(head.number < cursor.blockNumber ? "chain head below the cursor" : "head block replaced");
          continue;
        }
        const target = head.number - options.confirmations;
        const next = (cursor?.blockNumber ?? firstBlock - 1) + 1;
        if (next > target) {
          await drain();
          if (writeFailed) continue;
          await streak.end("caught up with the chain head", cursor?.blockNumber);
          if (backfilling) {
            backfilling = false;
            const seconds = (performance.now() - backfillStart.at) / 1000;
            logger.info(
              { chainId, block: cursor?.blockNumber, logs: backfillStart.logs, seconds: Number(seconds.toFixed(2)) },
              "indexer caught up with the chain head",
            );
          }
          await idle.sleep(options.pollMs, signal);
          continue;
        }
        if (target - next > range && !backfilling) {
          backfilling = true;
          backfillStart.at = performance.now();
          backfillStart.logs = 0;
          logger.info({ chainId, from: next, to: target }, "indexer backfilling");
        }

        let fetched: FetchedRange;
        try {
          const pending = prefetch;
          prefetch = undefined;
          const candidate = pending ? await pending.catch(() => undefined) : undefined;
          fetched =
            candidate && candidate.from === next && candidate.to <= target
              ? candidate
              : await fetchRange(rpc, filters, logger, next, Math.min(target, next + range - 1), signal);
        } catch (error) {
          if (signal.aborted) return;
          if (isRangeError(error) && range > 1) {
            range = Math.max(1, Math.floor(range / 2));
            logger.warn({ from: next, range, error: (error as Error).message }, "eth_getLogs range refused; shrinking it");
          } else {
            logger.warn({ from: next, error: (error as Error).message }, "fetching logs failed; retrying");
            await sleep(500, signal);
          }
          continue;
        }
        const { from, to, logs, headers } = fetched;
        // A complete answer is indexed even when large; the next range is smaller. (Providers that
        // cap answers refuse the range instead, handled above.)
        if (logs.length > targetLogs && to > from) range = Math.max(1, Math.floor(((to - from + 1) * targetLogs) / logs.length));
        else if (fetched.fetchMs < 1_000 && logs.length < targetLogs / 2) range = Math.min(options.maxBlockRange, range * 2);

        // Start reading the next range while this one is written.
        if (to < target) {
          const nextTo = Math.min(target, to + range);
          prefetch = fetchRange(rpc, filters, logger, to + 1, nextTo, signal);
          prefetch.catch(() => {});
        }

        try {
          const end = headers.get(to);
          const first = headers.get(from);
          if (!end || !first) throw new ChainMovedError(`block ${!end ? to : from} is gone`);
          if (cursor && first.parentHash !== cursor.blockHash) {
            // A parentHash alone is no proof: Hardhat answers 0x000… for the inner blocks of a
            // `hardhat_mine` batch. The block now at the cursor's height is.
            if (headers.get(cursor.blockNumber)?.hash !== cursor.blockHash) {
              await reorg(`block ${cursor.blockNumber} was replaced (block ${from} does not extend it)`);
              continue;
            }
            if (!parentHashWarned) {
              parentHashWarned = true;
              logger.info(
                { chainId, block: from, parentHash: first.parentHash, indexedBlock: cursor.blockNumber },
                "the node reports a parentHash that is not the indexed block's hash, which is still on the chain; relying on block hashes",
              );
            }
          }
          for (const log of logs) {
            if (headers.get(Number.parseInt(log.blockNumber, 16))?.hash !== log.blockHash) {
              throw new ChainMovedError(`log of block ${Number.parseInt(log.blockNumber, 16)} is from a replaced block`);
            }
          }
          // Wallets created and vaults this range creates, with their USDC transfers below the range.
          const learned = await learnAddresses(learning, classifier, { raw: logs, cursor, walletIndex }, signal);
          for (const wallet of learned.wallets) classifier.wallets.add(wallet);
          const timestampOf = (n: number) => headers.get(n)!.timestamp;
          const indexed = decodeLogs(logs, catalogue, classifier, timestampOf);
          const keys = new Set<string>();
          for (const log of [...learned.logs, ...indexed]) {
            for (const key of log.entities) keys.add(key);
            // Social-vault events name the vault's owner: its row is read even when unchanged.
            if (log.source === "socialVault") keys.add(entity.socialVault(log.address));
          }
          await state.load(db.sql.query, chainId, keys);
          const out = emptyOutput();
          const history = emptyOutput();
          const failed = (log: IndexedLog, error: Error) =>
            logger.error(
              { block: log.blockNumber, logIndex: log.logIndex, event: log.decoded?.name, error: error.message },
              "log could not be applied; recorded as malformed and skipped",
            );
          applyLogs(learned.logs, { chainId, state, out: history, emit: true }, failed);
          applyLogs(indexed, { chainId, state, out, emit: true }, failed);
          for (const log of indexed) {
            if (log.status !== "decoded")
              logger.warn(
                { block: log.blockNumber, logIndex: log.logIndex, status: log.status, error: log.error },
                "unknown or malformed log recorded and skipped",
              );
          }
          const numbers = new Set([...learned.logs.map((l) => l.blockNumber), ...indexed.map((l) => l.blockNumber), to]);
          const blocks = [...numbers].map((n) => headers.get(n) ?? learned.headers.get(n)!);
          const next: Cursor = { blockNumber: to, blockHash: end.hash };
          // The history's transfers are mirrored; its outbox events, if a handler gave any, are not (D-93).
          const past = { logs: learned.logs, transfers: history.usdcTransfers };
          const batch = { chainId, from: cursor, to: next, blocks, logs: indexed, history: past, state: state.takeChanges(), out };
          await drain();
          if (writeFailed) continue;
          writing = commitBatch(db, { ...batch, walletIndex: learned.walletIndex }).then(
            () => markIndexed(to),
            (error: Error) => {
              writeFailed = error;
            },
          );
          walletIndex = learned.walletIndex;
          cursor = next;
          backfillStart.logs += indexed.length;
          progress.logs += indexed.length;
          if (state.size > STATE_CACHE_ROWS) {
            await drain();
            state = new StateStore();
          }
        } catch (error) {
          prefetch = undefined;
          if (error instanceof ChainMovedError) {
            logger.info({ reason: error.message }, "chain moved while reading; reading the range again");
            continue;
          }
          if (signal.aborted) return;
          // Decoding or folding failed: what is in memory may be half-applied.
          await drain();
          writeFailed ??= error as Error;
          continue;
        }

        const now = performance.now();
        if (backfilling && now - progress.at >= (options.progressEveryMs ?? 5_000)) {
          const seconds = (now - progress.at) / 1000;
          logger.info(
            {
              chainId,
              block: cursor.blockNumber,
              head: head.number,
              lagBlocks: head.number - cursor.blockNumber,
              blocksPerSecond: Math.round((cursor.blockNumber - progress.block) / seconds),
              eventsPerSecond: Math.round(progress.logs / seconds),
              range,
            },
            "indexer progress",
          );
          progress = { at: now, block: cursor.blockNumber, logs: 0 };
        }
      }
    } finally {
      // Never leave a write running behind the lock's release.
      await drain();
    }
  }

  async function run(): Promise<void> {
    const signal = controller.signal;
    while (!signal.aborted) {
      const lock = await acquireWriterLock(db, chainId, { logger, signal });
      if (!lock) return;
      // stop() may have come while the lock was being taken: an abort listener added now would never fire.
      if (signal.aborted) {
        await lock.release();
        return;
      }
      logger.info({ chainId, fromBlock: firstBlock }, "indexer is the writer for this chain");
      const session = new AbortController();
      const stopSession = () => session.abort();
      signal.addEventListener("abort", stopSession, { once: true });
      void lock.lost.then((error) => {
        if (!session.signal.aborted) logger.error({ error: error.message }, "indexer lost its writer lock; stopping writes");
        session.abort();
      });
      try {
        await follow(session.signal);
      } catch (error) {
        if (error instanceof CursorMovedError) logger.error({ error: error.message }, "another indexer wrote this chain; standing down");
        else if (!signal.aborted) logger.error({ error: (error as Error).stack ?? String(error) }, "indexer failed; restarting");
        if (!signal.aborted) await sleep(1_000, signal);
      } finally {
        signal.removeEventListener("abort", stopSession);
        await lock.release();
      }
    }
  }

  return {
    start(): void {
      running ??= run();
    },
    async stop(): Promise<void> {
      controller.abort();
      await running;
    },
    status: () => ({ indexedBlock, headBlock }),
    /**
     * Looks at the head now instead of at the end of the poll interval: a process that has just
     * seen a receipt knows a block is there (read-your-writes, D-62). Calls made while the
     * indexer is busy are folded into one look.
     */
    wake(): void {
      idle.wake();
    },
    /** Calls `listener` with the indexed block after each commit or rollback (this process as the writer). */
    onIndexed(listener: (block: number) => void): () => void {
      indexedListeners.add(listener);
      return () => indexedListeners.delete(listener);
    },
  };
}

export type Indexer = ReturnType<typeof createIndexer>;
