import { mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { Contract, JsonRpcProvider } from "ethers";
import { type EmbeddedChain, startEmbeddedChain } from "../../core/chain.js";
import { deposit } from "../helpers/activity.js";
import { startTestChain, type TestChain, usdc } from "../helpers/chain.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";
import { freePort, type StackProcess, startStack } from "../helpers/stack.js";

const STACK_TRACE_LINE = /^\s+at /m;

/**
 * `npm start`'s ready line: what it names, then its start-up figures (D-87), the milliseconds since
 * the process started and its resident memory in MB, as whole numbers. Never a timed assertion.
 */
function readyLine(line: string): { names: string; startupMs: number; rssMb: number } {
  const match = /^(ready: .*) startup_ms=(\d+) rss_mb=(\d+)$/.exec(line);
  expect(match, line).to.not.equal(null);
  return { names: match![1]!, startupMs: Number(match![2]), rssMb: Number(match![3]) };
}

// biome-ignore lint/suspicious/noExplicitAny: response bodies are asserted field by field
type Json = any;

describe(`npm start (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(120_000);

  describe("a healthy start", () => {
    let stack: StackProcess;
    let apiUrl: string;
    let database: TestDatabase | undefined;
    const deploymentsDir = mkdtempSync(path.join(os.tmpdir(), "smoke-deployments-"));

    before(async () => {
      database = usingPostgres ? await createTestDatabase({ migrate: false }) : undefined;
      const [port, chainPort] = [await freePort(), await freePort()];
      stack = startStack({
        PORT: String(port),
        CHAIN_PORT: String(chainPort),
        DATABASE_URL: database?.url ?? "",
        DEPLOYMENTS_DIR: deploymentsDir,
      });
      const line = readyLine(await stack.ready());
      expect(line.names).to.equal(
        `ready: api=http://127.0.0.1:${port} rpc=http://127.0.0.1:${chainPort} chainId=31337 database=${usingPostgres ? "postgres" : "pglite"}`,
      );
      expect(line.startupMs).to.be.a("number").and.above(0);
      expect(line.rssMb).to.be.a("number").and.above(0);
      apiUrl = `http://127.0.0.1:${port}`;
    });

    after(async () => {
      await stack?.stop();
      await database?.destroy();
    });

    it("answers GET /health with the chain, the indexer position and the database", async () => {
      const response = await fetch(`${apiUrl}/health`);
      expect(response.status).to.equal(200);
      const body: Json = await response.json();
      expect(body).to.include({ status: "ok", chainId: 31337, database: usingPostgres ? "postgres" : "pglite" });
      // `ready:` came after the embedded indexer's first heartbeat.
      expect(body.indexer).to.include({ state: "indexing" });
      expect(body.indexer.lastHeartbeat).to.be.a("string");
      expect(body.blockNumber, JSON.stringify(body)).to.be.a("number").and.at.least(1); // the deployment mined blocks
      expect(body.indexedBlock).to.be.a("number");
    });

    it("runs the indexer in the same process: a wallet's direct deposit reaches the mirror and /health shows no lag", async () => {
      const rpc = stack.output().match(/rpc=(\S+)/)?.[1];
      const provider = new JsonRpcProvider(rpc, undefined, { staticNetwork: true, cacheTimeout: -1 });
      try {
        const deployment = JSON.parse(readFileSync(path.join(deploymentsDir, "31337.json"), "utf8"));
        const signer = await provider.getSigner(2);
        const usdc = new Contract(
          deployment.contracts.usdc.address,
          ["function mint(address,uint256)", "function approve(address,uint256)"],
          await provider.getSigner(0),
        );
        const vault = new Contract(
          deployment.contracts.stakingVault.address,
          ["function deposit(uint256,address) returns (uint256)"],
          signer,
        );
        await (await usdc.getFunction("mint")(await signer.getAddress(), 5_000_000n)).wait();
        await (
          await (usdc.connect(signer) as Contract).getFunction("approve")(deployment.contracts.stakingVault.address, 5_000_000n)
        ).wait();
        const receipt = await (await vault.getFunction("deposit")(5_000_000n, await signer.getAddress())).wait();
        let body: Json = {};
        for (let i = 0; i < 100; i += 1) {
          body = await (await fetch(`${apiUrl}/health`)).json();
          if (body.indexedBlock === receipt.blockNumber) break;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        expect(body.indexedBlock, JSON.stringify(body)).to.equal(receipt.blockNumber);
        expect(body.indexer).to.include({ lagBlocks: 0 });
        expect(body.indexer.lastHeartbeat).to.be.a("string");
      } finally {
        provider.destroy();
      }
    });

    it("serves the embedded chain as JSON-RPC with the contracts deployed", async () => {
      const rpc = stack.output().match(/rpc=(\S+)/)?.[1];
      const call = async (method: string, params: unknown[] = []) => {
        const response = await fetch(rpc!, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
        });
        return ((await response.json()) as Json).result;
      };
      expect(await call("eth_chainId")).to.equal("0x7a69");
      const deployment = JSON.parse(readFileSync(path.join(deploymentsDir, "31337.json"), "utf8")) as Json;
      expect(Object.keys(deployment?.contracts ?? {}).sort()).to.deep.equal([
        "forwarder",
        "interestRateModel",
        "loanBook",
        "paymentRouter",
        "socialVaultFactory",
        "stakingVault",
        "timelock",
        "usdc",
      ]);
      for (const contract of Object.values(deployment.contracts) as { address: string }[]) {
        expect(await call("eth_getCode", [contract.address, "latest"])).to.not.equal("0x");
      }
    });

    it("answers unknown routes with the error envelope", async () => {
      const response = await fetch(`${apiUrl}/v1/nothing-here`);
      expect(response.status).to.equal(404);
      const body: Json = await response.json();
      expect(body.success).to.equal(false);
      expect(body.error.code).to.equal("NOT_FOUND");
      expect(body.meta.requestId).to.equal(response.headers.get("x-request-id"));
    });

    it("stops cleanly on SIGTERM", async () => {
      expect(await stack.stop("SIGTERM")).to.equal(0);
    });
  });

  describe("against an external chain that goes away", () => {
    let stack: StackProcess;
    let chain: EmbeddedChain | undefined;

    after(async () => {
      await stack?.stop();
      await chain?.close();
    });

    it("deploys to CHAIN_RPC_URL, then answers 503 naming the chain once it is down", async () => {
      chain = await startEmbeddedChain("127.0.0.1", await freePort());
      const port = await freePort();
      stack = startStack({ PORT: String(port), CHAIN_RPC_URL: chain.rpcUrl, DATABASE_URL: "" });
      expect(readyLine(await stack.ready()).names).to.equal(
        `ready: api=http://127.0.0.1:${port} rpc=${chain.rpcUrl} chainId=31337 database=pglite`,
      );
      expect((await fetch(`http://127.0.0.1:${port}/health`)).status).to.equal(200);

      await chain.close();
      chain = undefined;
      const response = await fetch(`http://127.0.0.1:${port}/health`);
      expect(response.status).to.equal(503);
      const body: Json = await response.json();
      expect(body).to.deep.include({ status: "degraded", failing: ["chain"], blockNumber: null, database: "pglite" });
    });
  });

  describe("a start with a bad setting stops with one line naming it", () => {
    async function failedStart(env: Record<string, string>): Promise<string> {
      const stack = startStack({ CHAIN_PORT: String(await freePort()), PORT: String(await freePort()), ...env });
      expect(await stack.exited()).to.equal(1);
      const stderr = stack.stderr().trim();
      expect(stderr, stderr).to.not.match(STACK_TRACE_LINE);
      expect(stderr.split("\n"), stderr).to.have.length(1);
      return stderr;
    }

    it("a bad PORT", async () => {
      expect(await failedStart({ PORT: "not-a-port" })).to.equal('config: PORT must be an integer between 1 and 65535 (got "not-a-port")');
    });

    it("an unreachable CHAIN_RPC_URL", async () => {
      const port = await freePort(); // nothing listens there
      expect(await failedStart({ CHAIN_RPC_URL: `http://127.0.0.1:${port}` })).to.equal(
        `chain: cannot reach the JSON-RPC endpoint http://127.0.0.1:${port} (ECONNREFUSED); check CHAIN_RPC_URL`,
      );
    });

    it("a wrong DATABASE_URL", async () => {
      const port = await freePort();
      const message = await failedStart({ DATABASE_URL: `postgresql://someone:hunter2@127.0.0.1:${port}/nowhere` });
      expect(message).to.match(
        new RegExp(`^database: cannot connect to DATABASE_URL postgresql://someone:\\*\\*\\*@127\\.0\\.0\\.1:${port}/nowhere \\(`),
      );
      expect(message).to.not.include("hunter2");
    });

    it("a PORT already in use", async () => {
      const { createServer } = await import("node:net");
      const blocker = createServer();
      const port = await freePort();
      await new Promise<void>((resolve) => blocker.listen(port, "127.0.0.1", resolve));
      try {
        expect(await failedStart({ PORT: String(port) })).to.equal(`api: PORT ${port} is already in use; set PORT to a free port`);
      } finally {
        blocker.close();
      }
    });
  });

  // PGlite lives inside one process; separate processes share PostgreSQL.
  if (usingPostgres) {
    describe("npm run api as a separate process against CHAIN_RPC_URL and DATABASE_URL", () => {
      let stack: StackProcess;
      let api: StackProcess;
      let database: TestDatabase;

      after(async () => {
        await api?.stop();
        await stack?.stop();
        await database?.destroy();
      });

      it("serves /health for the shared chain and database", async () => {
        database = await createTestDatabase({ migrate: false });
        stack = startStack({ PORT: String(await freePort()), CHAIN_PORT: String(await freePort()), DATABASE_URL: database.url });
        const rpc = (await stack.ready()).match(/rpc=(\S+)/)?.[1];
        const port = await freePort();
        api = startStack({ PORT: String(port), CHAIN_RPC_URL: rpc, DATABASE_URL: database.url }, "api");
        expect(await api.ready()).to.equal(`ready: api=http://127.0.0.1:${port} rpc=${rpc} chainId=31337 database=postgres`);
        const body: Json = await (await fetch(`http://127.0.0.1:${port}/health`)).json();
        expect(body).to.include({ status: "ok", chainId: 31337, database: "postgres" });
      });
    });
  }

  if (usingPostgres) {
    describe("npm run api and npm run worker as separate processes", () => {
      let chain: TestChain;
      let database: TestDatabase;
      let api: StackProcess;
      let worker: StackProcess;
      let indexer: StackProcess | undefined;
      let apiPort: number;

      after(async () => {
        await api?.stop();
        await worker?.stop();
        await indexer?.stop();
        await database?.destroy();
        await chain?.close();
      });

      it("follow one service clock: /dev/time/advance sent to the API makes the worker's monthly seniority step due", async () => {
        chain = await startTestChain(); // its deployment file is in DEPLOYMENTS_DIR, which the children inherit
        database = await createTestDatabase({ migrate: false });
        const port = await freePort();
        apiPort = port;
        api = startStack({ PORT: String(port), CHAIN_RPC_URL: chain.rpcUrl, DATABASE_URL: database.url }, "api");
        // Started together, as a deployment does: they apply migrations on the same database. The
        // worker holds the chain too, so it runs the loan jobs.
        worker = startStack({ CHAIN_RPC_URL: chain.rpcUrl, DATABASE_URL: database.url }, "worker");
        indexer = startStack({ CHAIN_RPC_URL: chain.rpcUrl, DATABASE_URL: database.url }, "indexer");
        await Promise.all([api.ready(), worker.ready(), indexer.ready()]);
        const base = `http://127.0.0.1:${port}`;
        const post = async (urlPath: string, body: unknown) =>
          fetch(`${base}${urlPath}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
        const token = ((await (await post("/dev/token", { sub: "clock-user" })).json()) as Json).data.accessToken;
        const me = (await (await fetch(`${base}/v1/users/me`, { headers: { authorization: `Bearer ${token}` } })).json()) as Json;
        const seniority = async () => (await database.prisma.user.findUniqueOrThrow({ where: { id: me.data.id } })).trustSeniority;
        expect(await seniority()).to.equal(0);

        expect((await post("/dev/time/advance", { seconds: 32 * 86_400 })).status).to.equal(200);
        // The worker's jobs are hourly on the service clock: only a clock that moved makes the step due.
        const deadline = Date.now() + 15_000;
        while ((await seniority()) !== 1) {
          if (Date.now() > deadline) throw new Error(`the worker did not step seniority:\n${worker.output()}`);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      });

      it("the worker funds a loan request once LOAN_FUNDING_DELAY_S old on the shared clock", async () => {
        const base = `http://127.0.0.1:${apiPort}`;
        const call = async (method: string, urlPath: string, body?: unknown, headers: Record<string, string> = {}) =>
          (await (
            await fetch(`${base}${urlPath}`, {
              method,
              headers: { "content-type": "application/json", ...headers },
              body: body === undefined ? undefined : JSON.stringify(body),
            })
          ).json()) as Json;
        await deposit(chain, await chain.signer(1), usdc(1_000)); // the pool's liquidity
        const token = (await call("POST", "/dev/token", { sub: "loan-user" })).data.accessToken;
        const auth = { authorization: `Bearer ${token}` };
        const me = await call("GET", "/v1/users/me", undefined, auth);
        await database.prisma.user.update({ where: { id: me.data.id }, data: { trustScore: 40 } });
        // The API's cached user row lives 2 s of service clock.
        await call("POST", "/dev/time/advance", { seconds: 3 });
        const loan = await call("POST", "/v1/loans", { amount: 20, duration: 7 }, { ...auth, "idempotency-key": crypto.randomUUID() });
        expect(loan.data?.status, JSON.stringify(loan)).to.equal("pending");
        await call("POST", "/dev/time/advance", { seconds: 61 });
        const deadline = Date.now() + 30_000;
        for (;;) {
          const detail = await call("GET", `/v1/loans/${loan.data.id}`, undefined, auth);
          if (detail.data.status === "active") break;
          if (Date.now() > deadline) throw new Error(`the worker did not fund the loan:\n${worker.output()}`);
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
        expect(await chain.contracts.usdc.balanceOf(me.data.walletAddress)).to.equal(usdc(18));
      });
    });
  }

  it("npm run api refuses to start without CHAIN_RPC_URL and DATABASE_URL", async () => {
    const api = startStack({ PORT: String(await freePort()), CHAIN_RPC_URL: "", DATABASE_URL: "" }, "api");
    expect(await api.exited()).to.equal(1);
    expect(api.stderr().trim()).to.equal(
      "config: npm run api needs CHAIN_RPC_URL and DATABASE_URL (the embedded chain and database live inside npm start)",
    );
  });
});
