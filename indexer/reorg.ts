import { type Backoff, backoffMs } from "../core/backoff.js";
import type { SqlQuery } from "../core/db.js";
import type { Logger } from "../core/logger.js";
import { type Rpc, sleep, withRetry } from "./rpc.js";
import { type Cursor, HEARTBEAT_MS, heartbeat, type ReorgLoop, type rollbackTo, storedBlocks, writeReorgLoop } from "./store.js";

// Where a reorganisation forked, and what to do when rollbacks repeat without progress: a node
// that keeps signalling a reorg must not make the indexer spin, and /health must say so.

/** Wait after the first rollback that made no progress; it doubles with each further one, up to the maximum. */
const REORG_BACKOFF: Backoff = { baseMs: 250, capMs: 30_000 };

/** Walks the stored block hashes back until one is still on the chain: the fork point. */
export async function findFork(
  query: SqlQuery,
  rpc: Rpc,
  chainId: number,
  firstBlock: number,
  below: number,
  logger: Logger,
  signal: AbortSignal,
): Promise<Cursor> {
  let from = below;
  for (;;) {
    const stored = await storedBlocks(query, chainId, from, 64);
    if (stored.length === 0) {
      const [block] = await withRetry("fork search", () => rpc.blocks([firstBlock - 1]), logger, signal);
      if (!block) throw new Error(`chain ${chainId} has no block ${firstBlock - 1}: is this the deployment's chain?`);
      return { blockNumber: block.number, blockHash: block.hash };
    }
    const onChain = await withRetry("fork search", () => rpc.blocks(stored.map((s) => s.blockNumber)), logger, signal);
    const match = stored.find((s, i) => onChain[i]?.hash === s.blockHash);
    if (match) return match;
    from = stored.at(-1)!.blockNumber - 1;
  }
}

/** What a rollback did, or zeros when the chain was found unchanged. */
type RollbackResult = Awaited<ReturnType<typeof rollbackTo>>;

/** Rollbacks in a row to the same fork point, until the indexer gets past where it was. */
export class ReorgStreak {
  private streak: (ReorgLoop & { stalls: number }) | undefined;

  constructor(
    private readonly query: SqlQuery,
    private readonly chainId: number,
    private readonly logger: Logger,
  ) {}

  /** Whether the indexer has indexed past the highest block the streak's rollbacks started from. */
  passedBy(indexedBlock: number): boolean {
    return this.streak !== undefined && indexedBlock > this.streak.fromBlock;
  }

  /** Ends the rollback streak once the indexer is past it; a reported loop is cleared. */
  async end(why: string, block: number | undefined): Promise<void> {
    const ended = this.streak;
    this.streak = undefined;
    if (!ended || ended.stalls === 0) return;
    await writeReorgLoop(this.query, this.chainId, null);
    this.logger.info(
      { chainId: this.chainId, forkBlock: ended.forkBlock, count: ended.count, since: ended.since, block, why },
      "indexer reorg loop ended",
    );
  }

  /**
   * Counts a rollback from `from` to `fork` (`unchanged`: the fork point was the cursor, nothing
   * was undone). A single real reorg is one warning; a repeat backs off, beating meanwhile.
   */
  async rolledBack(
    reason: string,
    from: Cursor,
    fork: Cursor,
    unchanged: boolean,
    result: RollbackResult,
    headBlock: number,
    signal: AbortSignal,
  ): Promise<void> {
    const { chainId, logger } = this;
    const details = { chainId, reason, from: from.blockNumber, forkBlock: fork.blockNumber, ...result };
    // A streak lives until the indexer indexes past its highest block or catches up with the
    // head: another rollback to the same fork point before that is one that made no progress.
    const streak: ReorgLoop & { stalls: number } =
      this.streak?.forkBlock === fork.blockNumber
        ? { ...this.streak, fromBlock: Math.max(this.streak.fromBlock, from.blockNumber), count: this.streak.count + 1 }
        : {
            forkBlock: fork.blockNumber,
            fromBlock: from.blockNumber,
            count: 1,
            since: new Date().toISOString(),
            stalls: 0,
            reason,
            chainUnchanged: false,
            backoffMs: 0,
          };
    this.streak = streak;
    if (!unchanged && streak.count === 1) {
      logger.warn(details, "chain reorganisation: rolled back to the fork point");
      return;
    }
    // Rolling back again at once would spin: wait, doubling the wait each time, and say so in
    // the cursor row, where /health reads it from whichever process serves the API.
    streak.stalls += 1;
    streak.reason = reason;
    streak.chainUnchanged = unchanged;
    streak.backoffMs = backoffMs(streak.stalls, REORG_BACKOFF);
    const { stalls: _, ...loop } = streak;
    await writeReorgLoop(this.query, chainId, loop);
    if (streak.stalls === 1) {
      logger.warn(
        { ...details, count: streak.count, chainUnchanged: unchanged, backoffMs: streak.backoffMs },
        unchanged
          ? "indexer reorg loop: a reorg was signalled but the indexed blocks are all still on the chain; backing off"
          : "indexer reorg loop: rolled back to the same fork point again without progress; backing off",
      );
    } else {
      logger.debug({ ...details, count: streak.count, backoffMs: streak.backoffMs }, "indexer reorg loop: still looping");
    }
    // Beat while waiting, so that /health tells a looping indexer from a dead one.
    for (let left = streak.backoffMs; left > 0 && !signal.aborted; left -= HEARTBEAT_MS) {
      await sleep(Math.min(left, HEARTBEAT_MS), signal);
      if (left > HEARTBEAT_MS && !signal.aborted) await heartbeat(this.query, chainId, headBlock);
    }
  }
}
