// Read-your-writes without a second writer of the mirror (docs/decisions.md D-62): a write
// answers once the indexer's cursor has passed its receipt's block, so the next read (position,
// transactions, activity) shows it. One poll loop per process serves every waiting request; an
// indexer in the same process is woken by a wait and reports its commits, so a write need not
// wait for either poll interval (the loop still covers an indexer in another process).
import type { Logger } from "../../core/logger.js";
import type { Db } from "../db.js";
import { indexerCursorOf } from "./repo.js";

export interface MirrorWaitDeps {
  db: Db;
  chainId: number;
  /** How long a write waits for the indexer before answering without it (and logging why). */
  timeoutMs?: number;
  pollMs?: number;
  logger?: Pick<Logger, "warn">;
}

interface Waiter {
  block: number;
  deadline: number;
  resolve(indexed: boolean): void;
}

export function createMirrorWait(deps: MirrorWaitDeps) {
  const timeoutMs = deps.timeoutMs ?? 10_000;
  const pollMs = deps.pollMs ?? 20;
  const waiters = new Set<Waiter>();
  let polling = false;
  let knownIndexed = -1;
  const wakeListeners = new Set<() => void>();

  /** The indexed block as last reported: it can go down (a reorg, or a development chain's evm_revert). */
  function release(block: number) {
    knownIndexed = block;
    for (const waiter of waiters) {
      if (waiter.block <= block) {
        waiters.delete(waiter);
        waiter.resolve(true);
      }
    }
  }

  async function poll() {
    polling = true;
    try {
      while (waiters.size > 0) {
        const cursor = await indexerCursorOf(deps.db, deps.chainId).catch(() => null);
        if (cursor) release(cursor.blockNumber);
        const now = Date.now();
        for (const waiter of waiters) {
          if (now > waiter.deadline) {
            waiters.delete(waiter);
            deps.logger?.warn(
              { block: waiter.block, indexedBlock: cursor?.blockNumber ?? null, timeoutMs },
              "the indexer did not reach a write's block in time; answered from the receipt",
            );
            waiter.resolve(false);
          }
        }
        if (waiters.size > 0) await new Promise((resolve) => setTimeout(resolve, pollMs));
      }
    } finally {
      polling = false;
    }
  }

  return {
    /** Resolves true once the mirror holds `block`, false after the timeout (the write stands either way). */
    untilIndexed(block: number): Promise<boolean> {
      if (block <= knownIndexed) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        waiters.add({ block, deadline: Date.now() + timeoutMs, resolve });
        for (const wake of wakeListeners) wake();
        if (!polling) void poll();
      });
    },
    /** The mirror holds `block` (told by an indexer of this process after its commit). */
    indexed(block: number): void {
      release(block);
    },
    /** Calls `listener` when a write starts waiting for a block (to wake an indexer of this process). */
    onWait(listener: () => void): () => void {
      wakeListeners.add(listener);
      return () => wakeListeners.delete(listener);
    },
  };
}

export type MirrorWait = ReturnType<typeof createMirrorWait>;

/**
 * Joins an indexer running in this process to the writes' waits: a write's wait wakes it, and its
 * commits release the waits at once. Without it, waits rely on the poll alone.
 */
export function attachIndexer(
  mirror: Pick<MirrorWait, "indexed" | "onWait">,
  indexer: { wake(): void; onIndexed(listener: (block: number) => void): () => void },
): () => void {
  const stopWaking = mirror.onWait(() => indexer.wake());
  const stopReporting = indexer.onIndexed((block) => mirror.indexed(block));
  return () => {
    stopWaking();
    stopReporting();
  };
}
