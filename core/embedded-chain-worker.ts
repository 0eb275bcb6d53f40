// The embedded chains' thread (started by startEmbeddedChain in core/chain.ts): Hardhat's EDR
// chains and their JSON-RPC servers run here, so mining and RPC parsing never take the API's
// thread. One thread per process hosts every chain the process starts (a test run starts many):
// EDR's native module is loaded once and never unloaded with a thread.
import type http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { parentPort } from "node:worker_threads";
import type { HardhatRuntimeEnvironment } from "hardhat/types/hre";
import { type ChainThreadMessage, type ChainThreadRequest, type Eip1193Provider, EMBEDDED_NETWORK, serveJsonRpc } from "./chain.js";
import { ROOT } from "./paths.js";

const port = parentPort!;
const post = (message: ChainThreadMessage) => port.postMessage(message);
const chains = new Map<number, { provider: Eip1193Provider; server: http.Server; close(): Promise<void> }>();

let runtime: Promise<HardhatRuntimeEnvironment> | undefined;

/**
 * Hardhat's runtime with the embedded network alone, made once per thread. Not `import("hardhat")`:
 * that loads hardhat.config.ts with the toolbox's plugins (ethers, mocha, ignition, typechain...),
 * and its network manager hands EDR every build info in artifacts/ (20 MB of compiler output, tests
 * included) to name contracts in stack traces, which took about 150 MB and a second at every start.
 * Reverts keep their code and data (what ethers and the service decode); a node's message names a
 * custom error as "unrecognized" instead (`npm run chain` keeps Hardhat's full traces).
 */
function hardhatRuntime(): Promise<HardhatRuntimeEnvironment> {
  runtime ??= import("hardhat/hre").then(({ createHardhatRuntimeEnvironment }) =>
    createHardhatRuntimeEnvironment(
      // A folder without build infos (it need not exist): no contract decoder to build.
      { networks: { hardhat: EMBEDDED_NETWORK }, paths: { artifacts: path.join(ROOT, "cache", "embedded-chain-no-artifacts") } },
      {},
      ROOT,
    ),
  );
  return runtime;
}

async function start(chain: number, host: string, wanted: number) {
  const connection = await (await hardhatRuntime()).network.create("hardhat");
  const provider = connection.provider as Eip1193Provider;
  try {
    const server = await serveJsonRpc(provider, host, wanted);
    chains.set(chain, {
      provider,
      server,
      close: async () => {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await connection.close();
      },
    });
    post({ type: "ready", chain, port: (server.address() as AddressInfo).port });
  } catch (error) {
    await connection.close();
    post({ type: "failed", chain, code: (error as NodeJS.ErrnoException).code, message: String((error as Error).message ?? error) });
  }
}

port.on("message", async (message: ChainThreadRequest) => {
  if (message.type === "start") {
    await start(message.chain, message.host, message.port).catch((error: Error) =>
      post({ type: "failed", chain: message.chain, code: undefined, message: error.message }),
    );
    return;
  }
  const chain = chains.get(message.chain);
  if (message.type === "request") {
    try {
      if (!chain) throw new Error("the embedded chain is closed");
      post({ type: "response", chain: message.chain, id: message.id, result: await chain.provider.request(message) });
    } catch (error) {
      const e = error as { code?: number; message?: string; data?: unknown };
      post({ type: "response", chain: message.chain, id: message.id, error: { code: e.code, message: e.message, data: e.data } });
    }
    return;
  }
  chains.delete(message.chain);
  await chain?.close().catch(() => undefined);
  post({ type: "closed", chain: message.chain });
});
