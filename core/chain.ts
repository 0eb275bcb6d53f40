import http from "node:http";
import { Worker } from "node:worker_threads";
import { JsonRpcProvider, Network } from "ethers";

/** What the main thread asks of the chains' thread (core/embedded-chain-worker.ts), and what it answers. */
export type ChainThreadRequest =
  | { type: "start"; chain: number; host: string; port: number }
  | { type: "request"; chain: number; id: number; method: string; params?: unknown[] }
  | { type: "close"; chain: number };

export type ChainThreadMessage =
  | { type: "ready"; chain: number; port: number }
  | { type: "failed"; chain: number; code: string | undefined; message: string }
  | { type: "response"; chain: number; id: number; result?: unknown; error?: { code?: number; message?: string; data?: unknown } }
  | { type: "closed"; chain: number };

/**
 * The embedded chain's network: `networks.hardhat` of hardhat.config.ts, which `npm run chain` and
 * Hardhat's tests use (test/core/embedded-chain.test.ts checks that the two agree). The chain thread
 * builds its Hardhat runtime from this alone, without loading the config file and its plugins.
 */
export const EMBEDDED_NETWORK = {
  type: "edr-simulated",
  chainType: "l1",
  chainId: 31337,
  allowUnlimitedContractSize: false,
} as const;

/** An EIP-1193 provider (what Hardhat's network connection exposes). */
export interface Eip1193Provider {
  request(args: { method: string; params?: unknown[] | object }): Promise<unknown>;
}

export interface EmbeddedChain {
  rpcUrl: string;
  provider: Eip1193Provider;
  close(): Promise<void>;
}

export class ChainUnavailableError extends Error {
  override name = "ChainUnavailableError";
}

interface JsonRpcRequest {
  jsonrpc?: string;
  id?: string | number | null;
  method?: unknown;
  params?: unknown;
}

async function answer(provider: Eip1193Provider, call: JsonRpcRequest) {
  const id = call?.id ?? null;
  if (typeof call?.method !== "string") {
    return { jsonrpc: "2.0", id, error: { code: -32600, message: "Invalid request" } };
  }
  try {
    const params = (call.params ?? []) as unknown[];
    const result = await provider.request({ method: call.method, params });
    return { jsonrpc: "2.0", id, result };
  } catch (error) {
    const e = error as { code?: number; message?: string; data?: unknown };
    return {
      jsonrpc: "2.0",
      id,
      error: { code: typeof e.code === "number" ? e.code : -32603, message: e.message ?? "Internal error", data: e.data },
    };
  }
}

/** Serves an EIP-1193 provider as HTTP JSON-RPC (single and batch calls), as `hardhat node` does. */
export function serveJsonRpc(provider: Eip1193Provider, host: string, port: number): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const headers = {
      "content-type": "application/json",
      "access-control-allow-origin": "*",
      "access-control-allow-headers": "content-type",
      "access-control-allow-methods": "POST, OPTIONS",
    };
    if (req.method === "OPTIONS") {
      res.writeHead(204, headers).end();
      return;
    }
    if (req.method !== "POST") {
      res.writeHead(405, headers).end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "POST only" } }));
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", async () => {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        res.writeHead(200, headers).end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } }));
        return;
      }
      // Calls of a batch run in order: later ones may depend on earlier ones (nonces).
      let reply: unknown;
      if (Array.isArray(body)) {
        const replies = [];
        for (const call of body) replies.push(await answer(provider, call as JsonRpcRequest));
        reply = replies;
      } else {
        reply = await answer(provider, body as JsonRpcRequest);
      }
      res
        .writeHead(200, headers)
        .end(JSON.stringify(reply, (_key, value) => (typeof value === "bigint" ? `0x${value.toString(16)}` : value)));
    });
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve(server);
    });
  });
}

type ChainHandlers = {
  ready(port: number): void;
  failed(message: Extract<ChainThreadMessage, { type: "failed" }>): void;
  response(message: Extract<ChainThreadMessage, { type: "response" }>): void;
  closed(): void;
};
let chainThread: { worker: Worker; chains: Map<number, ChainHandlers>; next: number; busy: number } | undefined;

/**
 * Keeps the process alive while `work` waits for the chain thread (a script's top-level await of
 * its first call has nothing else holding the event loop); an idle chain never does.
 */
async function holdingThread<T>(thread: NonNullable<typeof chainThread>, work: Promise<T>): Promise<T> {
  if (thread.busy++ === 0) thread.worker.ref();
  try {
    return await work;
  } finally {
    if (--thread.busy === 0) thread.worker.unref();
  }
}

/** The process's one chain thread, started with the first embedded chain; it never keeps the process alive. */
function theChainThread() {
  if (chainThread) return chainThread;
  // The sources under tsx, or the compiled copy that `npm start` runs (dist/, scripts/build.mjs).
  const worker = new Worker(
    new URL(import.meta.url.endsWith(".ts") ? "./embedded-chain-worker.ts" : "./embedded-chain-worker.js", import.meta.url),
  );
  const chains = new Map<number, ChainHandlers>();
  worker.on("message", (message: ChainThreadMessage) => {
    const handlers = chains.get(message.chain);
    if (!handlers) return;
    if (message.type === "ready") handlers.ready(message.port);
    else if (message.type === "failed") handlers.failed(message);
    else if (message.type === "response") handlers.response(message);
    else handlers.closed();
  });
  const fail = (error: Error) => {
    chainThread = undefined;
    for (const handlers of chains.values()) handlers.failed({ type: "failed", chain: -1, code: undefined, message: error.message });
  };
  worker.on("error", fail);
  worker.on("exit", (code) => fail(new Error(`the embedded chains' thread exited (${code})`)));
  // After the listeners (adding one refs the thread again): a chain never keeps the process alive.
  worker.unref();
  chainThread = { worker, chains, next: 0, busy: 0 };
  return chainThread;
}

/**
 * Starts Hardhat's EDR simulated chain and serves it as JSON-RPC, in the process's chain thread
 * (core/embedded-chain-worker.ts): mining and the chain's RPC traffic do not compete with the
 * API and the indexer for this thread. `provider` talks to it directly, without HTTP.
 */
export async function startEmbeddedChain(host: string, port: number): Promise<EmbeddedChain> {
  const thread = theChainThread();
  const chain = thread.next++;
  const pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  let nextId = 0;
  let onClosed: (() => void) | undefined;
  const started = new Promise<number>((resolve, reject) => {
    thread.chains.set(chain, {
      ready: resolve,
      failed: (message) => {
        const error = new ChainUnavailableError(
          message.code === "EADDRINUSE"
            ? `chain: CHAIN_PORT ${port} is already in use (another node or stack running?); set CHAIN_PORT to a free port`
            : `chain: cannot serve the embedded chain on ${host}:${port} (${message.code ?? message.message})`,
        );
        reject(error);
        for (const call of pending.values()) call.reject(error);
        pending.clear();
        onClosed?.();
      },
      response: (message) => {
        const call = pending.get(message.id);
        pending.delete(message.id);
        if (!call) return;
        if (message.error) call.reject(Object.assign(new Error(message.error.message ?? "chain error"), message.error));
        else call.resolve(message.result);
      },
      closed: () => onClosed?.(),
    });
  });
  thread.worker.postMessage({ type: "start", chain, host, port });
  let boundPort: number;
  try {
    boundPort = await holdingThread(thread, started);
  } catch (error) {
    thread.chains.delete(chain);
    throw error;
  }
  const provider: Eip1193Provider = {
    request: ({ method, params }) =>
      holdingThread(
        thread,
        new Promise((resolve, reject) => {
          const id = nextId++;
          pending.set(id, { resolve, reject });
          thread.worker.postMessage({ type: "request", chain, id, method, params });
        }),
      ),
  };
  return {
    rpcUrl: `http://${host}:${boundPort}`,
    provider,
    close: async () => {
      const closed = new Promise<void>((resolve) => {
        onClosed = resolve;
      });
      thread.worker.postMessage({ type: "close", chain });
      await holdingThread(thread, closed);
      thread.chains.delete(chain);
    },
  };
}

/**
 * A JSON-RPC provider for `rpcUrl`, checked to answer within `timeoutMs`.
 * The network is fixed after the first answer, so ethers never polls for it again.
 */
export async function connectRpc(rpcUrl: string, timeoutMs = 5_000): Promise<{ provider: JsonRpcProvider; chainId: number }> {
  let chainIdHex: string;
  const signal = AbortSignal.timeout(timeoutMs);
  const ask = () =>
    fetch(rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
      signal,
    });
  try {
    // A kept-alive connection the node closed just as it was reused (its idle timeout, a busy
    // machine): eth_chainId changes nothing, so it is asked once more, on a new connection.
    const response = await ask().catch((error) => {
      const code = (error as { cause?: { code?: string } }).cause?.code;
      if (code === "UND_ERR_SOCKET" || code === "ECONNRESET") return ask();
      throw error;
    });
    const body = (await response.json()) as { result?: string };
    if (typeof body.result !== "string") throw new Error(`unexpected answer to eth_chainId (HTTP ${response.status})`);
    chainIdHex = body.result;
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    const reason = (error as Error).name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : (cause ?? (error as Error).message);
    throw new ChainUnavailableError(`chain: cannot reach the JSON-RPC endpoint ${rpcUrl} (${reason}); check CHAIN_RPC_URL`);
  }
  const chainId = Number(BigInt(chainIdHex));
  // cacheTimeout -1: ethers otherwise answers repeated calls (getBlockNumber) from a 250 ms
  // cache, so /health and the indexer could report a block from before the last transaction.
  const provider = new JsonRpcProvider(rpcUrl, Network.from(chainId), {
    staticNetwork: true,
    batchMaxCount: 50,
    // Requests of one tick still share a batch; none waits the default 10 ms for company (a
    // transaction's broadcast is on every write's critical path).
    batchStallTime: 0,
    polling: false,
    cacheTimeout: -1,
  });
  return { provider, chainId };
}
