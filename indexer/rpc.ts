import { type Backoff, backoffMs } from "../core/backoff.js";
import type { Logger } from "../core/logger.js";

/** A log as eth_getLogs returns it (quantities in hex). */
export interface RpcLog {
  address: string;
  topics: string[];
  data: string;
  blockNumber: string;
  blockHash: string;
  transactionHash: string;
  logIndex: string;
  removed?: boolean;
}

/** The header fields the indexer needs. */
export interface RpcBlock {
  number: number;
  hash: string;
  parentHash: string;
  timestamp: number;
}

export interface LogFilter {
  address?: string | string[];
  topics?: (string | string[] | null)[];
}

export class RpcError extends Error {
  override name = "RpcError";
  constructor(
    message: string,
    readonly code?: number,
  ) {
    super(message);
  }
}

/** The provider refused the block range (too many results, range too wide, or too slow): retry a smaller one. */
export function isRangeError(error: unknown): boolean {
  const message = String((error as Error)?.message ?? "").toLowerCase();
  return (
    (error as Error)?.name === "TimeoutError" ||
    /limit|too (many|large|big|wide)|range|more than|exceed|timeout|timed out|response size/.test(message) ||
    (error as RpcError)?.code === -32005
  );
}

interface JsonRpcReply {
  id: number;
  result?: unknown;
  error?: { code: number; message: string };
}

const toBlock = (raw: { number: string; hash: string; parentHash: string; timestamp: string }): RpcBlock => ({
  number: Number.parseInt(raw.number, 16),
  hash: raw.hash,
  parentHash: raw.parentHash,
  timestamp: Number.parseInt(raw.timestamp, 16),
});

const hex = (n: number) => `0x${n.toString(16)}`;

/**
 * A lean JSON-RPC client for the indexer: plain fetch with keep-alive, batch calls, and
 * a time-out per call. ethers' provider adds polling, caching and per-call object
 * allocation the indexer does not need on its hot path.
 */
export function createRpc(url: string, options: { timeoutMs?: number } = {}) {
  const timeoutMs = options.timeoutMs ?? 15_000;
  let nextId = 1;

  async function post(body: unknown): Promise<unknown> {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!response.ok) throw new RpcError(`HTTP ${response.status} from ${new URL(url).host}`);
    return response.json();
  }

  async function call<T>(method: string, params: unknown[]): Promise<T> {
    const reply = (await post({ jsonrpc: "2.0", id: nextId++, method, params })) as JsonRpcReply;
    if (reply.error) throw new RpcError(`${method}: ${reply.error.message}`, reply.error.code);
    return reply.result as T;
  }

  async function batch<T>(calls: { method: string; params: unknown[] }[]): Promise<T[]> {
    if (calls.length === 0) return [];
    const first = nextId;
    nextId += calls.length;
    const replies = (await post(calls.map((c, i) => ({ jsonrpc: "2.0", id: first + i, ...c })))) as JsonRpcReply[];
    if (!Array.isArray(replies)) throw new RpcError("batch call answered with a single reply");
    const byId = new Map(replies.map((reply) => [reply.id, reply]));
    return calls.map((c, i) => {
      const reply = byId.get(first + i);
      if (!reply) throw new RpcError(`${c.method}: missing from the batch reply`);
      if (reply.error) throw new RpcError(`${c.method}: ${reply.error.message}`, reply.error.code);
      return reply.result as T;
    });
  }

  return {
    url,
    call,
    async chainId(): Promise<number> {
      return Number.parseInt(await call<string>("eth_chainId", []), 16);
    },
    async latestBlock(): Promise<RpcBlock> {
      const raw = await call<Parameters<typeof toBlock>[0] | null>("eth_getBlockByNumber", ["latest", false]);
      if (!raw) throw new RpcError("eth_getBlockByNumber(latest) returned null");
      return toBlock(raw);
    },
    /** Headers of the given block numbers, in one batch; null where the chain has no such block. */
    async blocks(numbers: number[]): Promise<(RpcBlock | null)[]> {
      const raws = await batch<Parameters<typeof toBlock>[0] | null>(
        numbers.map((n) => ({ method: "eth_getBlockByNumber", params: [hex(n), false] })),
      );
      return raws.map((raw) => (raw ? toBlock(raw) : null));
    },
    async getLogs(filter: LogFilter, fromBlock: number, toBlock: number): Promise<RpcLog[]> {
      return call<RpcLog[]>("eth_getLogs", [{ ...filter, fromBlock: hex(fromBlock), toBlock: hex(toBlock) }]);
    },
  };
}

export type Rpc = ReturnType<typeof createRpc>;

const RPC_RETRY: Backoff = { baseMs: 250, capMs: 15_000 };

/**
 * Retries `work` with exponential backoff (250 ms doubling to 15 s) until it succeeds or
 * `signal` aborts; every failure is logged with the attempt number.
 */
export async function withRetry<T>(what: string, work: () => Promise<T>, logger: Logger, signal: AbortSignal): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await work();
    } catch (error) {
      if (signal.aborted) throw error;
      const delayMs = backoffMs(attempt, RPC_RETRY);
      logger.warn({ what, attempt, delayMs, error: (error as Error).message }, "rpc call failed; retrying");
      await sleep(delayMs, signal);
    }
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
