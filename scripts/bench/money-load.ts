// The load generator of `npm run bench:money`, in its own thread: the users' HTTP clients and
// the direct wallets' ethers calls do not take the thread that serves the API, as real clients
// run elsewhere. The main thread sends one message per measured run; this answers its figures.
import { randomUUID } from "node:crypto";
import { parentPort, workerData } from "node:worker_threads";
import { Contract, JsonRpcProvider, Network, Wallet } from "ethers";

export interface LoadSetup {
  apiUrl: string;
  rpcUrl: string;
  chainId: number;
  vault: string;
  vaultAbi: unknown[];
  loanBook: string;
  loanBookAbi: unknown[];
  /** Each API user's funded loan (same order as `auths`), repaid in parts through the API. */
  apiLoans: string[];
  /** Each direct wallet's funded loan on the LoanBook (same order as `directKeys`), repaid straight to it. */
  directLoans: bigint[];
  /** Micro-USDC per repayment. */
  repayment: bigint;
  /** Authorization headers of the API users. */
  auths: Record<string, string>[];
  /** Private keys of the funded direct wallets (approved for the vault). */
  directKeys: string[];
  pairs: number;
  deposit: bigint;
  withdrawTmUsdc: number;
}
export type LoadSample = { opsPerSecond: number; p50: number; p99: number };

const setup = workerData as LoadSetup;
const provider = new JsonRpcProvider(setup.rpcUrl, Network.from(setup.chainId), {
  staticNetwork: true,
  batchStallTime: 0,
  // No 250 ms answer cache: a wallet reads its next nonce right after its last transaction.
  cacheTimeout: -1,
});
const wallets = setup.directKeys.map((key) => new Wallet(key, provider));
const vault = new Contract(setup.vault, setup.vaultAbi as never, provider);
const loanBook = new Contract(setup.loanBook, setup.loanBookAbi as never, provider);

async function post(route: string, body: unknown, auth: Record<string, string>) {
  const response = await fetch(`${setup.apiUrl}${route}`, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": randomUUID(), ...auth },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`POST ${route} answered ${response.status}: ${text}`);
}

/** One user's deposit, withdrawal and loan repayment, `pairs` times, one request at a time; each operation's latency. */
async function apiUser(auth: Record<string, string>, loanId: string): Promise<number[]> {
  const latencies: number[] = [];
  for (let pair = 0; pair < setup.pairs; pair += 1) {
    for (const [route, body] of [
      ["/v1/vault/deposit", { amount: Number(setup.deposit) / 1e6 }],
      ["/v1/vault/withdraw", { tmUSDCAmount: setup.withdrawTmUsdc }],
      [`/v1/loans/${loanId}/repay`, { amount: Number(setup.repayment) / 1e6 }],
    ] as const) {
      const start = performance.now();
      await post(route, body, auth);
      latencies.push(performance.now() - start);
    }
  }
  return latencies;
}

async function directUser(wallet: Wallet, loanId: bigint): Promise<number[]> {
  const latencies: number[] = [];
  const own = vault.connect(wallet) as Contract;
  const ownLoans = loanBook.connect(wallet) as Contract;
  for (let pair = 0; pair < setup.pairs; pair += 1) {
    for (const send of [
      () => own.getFunction("deposit")(setup.deposit, wallet.address),
      () => own.getFunction("redeem")(BigInt(setup.withdrawTmUsdc) * 10n ** 18n, wallet.address, wallet.address),
      () => ownLoans.getFunction("repay")(loanId, setup.repayment),
    ]) {
      const start = performance.now();
      await (await send()).wait();
      latencies.push(performance.now() - start);
    }
  }
  return latencies;
}

async function measure(perUser: Promise<number[]>[]): Promise<LoadSample> {
  const start = performance.now();
  const latencies = (await Promise.all(perUser)).flat().sort((a, b) => a - b);
  const seconds = (performance.now() - start) / 1000;
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  return { opsPerSecond: latencies.length / seconds, p50: at(0.5), p99: at(0.99) };
}

parentPort!.on("message", async (kind: "api" | "direct" | "stop") => {
  if (kind === "stop") {
    provider.destroy();
    parentPort!.close();
    return;
  }
  try {
    const sample = await measure(
      kind === "api"
        ? setup.auths.map((auth, i) => apiUser(auth, setup.apiLoans[i]!))
        : wallets.map((wallet, i) => directUser(wallet, setup.directLoans[i]!)),
    );
    parentPort!.postMessage({ sample });
  } catch (error) {
    parentPort!.postMessage({ error: (error as Error).message });
  }
});
