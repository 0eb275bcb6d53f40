// Read-your-writes without a second writer of the mirror (docs/decisions.md D-62): a write
// answers once the indexer's cursor has passed its receipt's block, so the next read (position,
// transactions, activity) shows it. One poll loop per process serves every waiting request.
import type { Logger } from "../../core/logger.js";
import type { Db } from "../db.js";

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

  async function poll() {
    polling = true;
    try {
      while (waiters.size > 0) {
        const cursor = await deps.db.prisma.indexerCursor
          .findUnique({ where: { chainId: deps.chainId }, select: { blockNumber: true } })
          .catch(() => null);
        const now = Date.now();
        for (const waiter of waiters) {
          if (cursor && cursor.blockNumber >= waiter.block) {
            waiters.delete(waiter);
            waiter.resolve(true);
          } else if (now > waiter.deadline) {
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
      return new Promise<boolean>((resolve) => {
        waiters.add({ block, deadline: Date.now() + timeoutMs, resolve });
        if (!polling) void poll();
      });
    },
  };
}

export type MirrorWait = ReturnType<typeof createMirrorWait>;
