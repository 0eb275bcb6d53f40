import type { Logger } from "../core/logger.js";
import { type LogFilter, type Rpc, type RpcBlock, type RpcLog, withRetry } from "./rpc.js";

// Reading one block range: its logs and the headers that tell whether the chain moved under them.

export interface FetchedRange {
  from: number;
  to: number;
  logs: RpcLog[];
  headers: Map<number, RpcBlock>;
  fetchMs: number;
}

/** The chain changed under a read (a block or a log of it replaced): the range is read again. */
export class ChainMovedError extends Error {
  override name = "ChainMovedError";
}

/** Block headers asked for in one JSON-RPC batch: a node answers 500 at once well within its request limits. */
const HEADERS_PER_CALL = 500;

export async function fetchRange(
  rpc: Rpc,
  filters: LogFilter[],
  logger: Logger,
  from: number,
  to: number,
  signal: AbortSignal,
): Promise<FetchedRange> {
  const started = performance.now();
  const answers = await Promise.all(filters.map((filter) => rpc.getLogs(filter, from, to)));
  // The filters are disjoint by construction; a log answered twice is still mirrored once.
  const unique = new Map<string, RpcLog>();
  for (const log of answers.flat()) unique.set(`${log.blockNumber}:${log.logIndex}`, log);
  const logs = [...unique.values()];
  logs.sort(
    (a, b) =>
      Number.parseInt(a.blockNumber, 16) - Number.parseInt(b.blockNumber, 16) ||
      Number.parseInt(a.logIndex, 16) - Number.parseInt(b.logIndex, 16),
  );
  // The block at the cursor's height comes along: when the first block's parentHash does not
  // name the indexed block, its hash tells whether the chain really changed there.
  const numbers = new Set<number>([from, to]);
  if (from > 0) numbers.add(from - 1);
  for (const log of logs) numbers.add(Number.parseInt(log.blockNumber, 16));
  const wanted = [...numbers].sort((a, b) => a - b);
  const headers = new Map<number, RpcBlock>();
  for (let i = 0; i < wanted.length; i += HEADERS_PER_CALL) {
    const chunk = wanted.slice(i, i + HEADERS_PER_CALL);
    const blocks = await withRetry("eth_getBlockByNumber", () => rpc.blocks(chunk), logger, signal);
    for (const block of blocks) if (block) headers.set(block.number, block);
  }
  return { from, to, logs, headers, fetchMs: performance.now() - started };
}
