import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import { ethers } from "ethers";
import { ContractCatalogue, platformAddresses } from "../../indexer/contracts.js";
import { applyLogs, decodeLogs, emptyOutput } from "../../indexer/handlers.js";
import { StateStore } from "../../indexer/state.js";
import { deposit, everyKindOfActivity } from "../helpers/activity.js";
import { startTestChain, type TestChain, usdc } from "../helpers/chain.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { cleanReindex, dumpMirror, testIndexer, waitForHead } from "../helpers/mirror.js";

/**
 * A JSON-RPC proxy in front of the chain that behaves like a strict hosted provider: it refuses
 * eth_getLogs over more than `maxRange` blocks, and fails the first `failures` calls with HTTP 503.
 */
async function flakyProvider(upstream: string, options: { maxRange: number; failures: number }) {
  const seen = { refusedRanges: 0, failed: 0, getLogs: 0 };
  let failures = options.failures;
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    if (failures > 0) {
      failures -= 1;
      seen.failed += 1;
      res.writeHead(503).end("overloaded");
      return;
    }
    const call = JSON.parse(body) as { id: number; method: string; params: [{ fromBlock: string; toBlock: string }] };
    if (!Array.isArray(call) && call.method === "eth_getLogs") {
      seen.getLogs += 1;
      const { fromBlock, toBlock } = call.params[0];
      if (Number(toBlock) - Number(fromBlock) + 1 > options.maxRange) {
        seen.refusedRanges += 1;
        res.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify({
            jsonrpc: "2.0",
            id: call.id,
            error: { code: -32005, message: `block range too large, max ${options.maxRange}` },
          }),
        );
        return;
      }
    }
    const answer = await fetch(upstream, { method: "POST", headers: { "content-type": "application/json" }, body });
    res.writeHead(answer.status, { "content-type": "application/json" }).end(await answer.text());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, close: () => new Promise((r) => server.close(r)) };
}

describe("indexer: failures", function () {
  this.timeout(120_000);
  let chain: TestChain;
  let db: TestDatabase;

  before(async () => {
    chain = await startTestChain();
    db = await createTestDatabase();
    await everyKindOfActivity(chain, { depositor: 1, borrower: 2, vaultOwner: 3, guardian: 4 });
    for (let i = 0; i < 10; i += 1) await deposit(chain, await chain.signer(5 + i), usdc(20));
  });

  after(async () => {
    await db?.destroy();
    await chain?.close();
  });

  it("retries a failing provider and shrinks refused block ranges, and still mirrors everything", async () => {
    const proxy = await flakyProvider(chain.rpcUrl, { maxRange: 7, failures: 3 });
    const indexer = testIndexer(db, { ...chain, rpcUrl: proxy.url }, { maxBlockRange: 1_000 });
    try {
      indexer.start();
      await waitForHead(db, chain, 60_000);
    } finally {
      await indexer.stop();
      await proxy.close();
    }
    expect(proxy.seen.failed).to.equal(3);
    expect(proxy.seen.refusedRanges).to.be.greaterThan(0);

    expect(await dumpMirror(db)).to.deep.equal(await cleanReindex(chain));
  });

  it("recovers from a failed write (the transaction rolls back, the range is written again)", async () => {
    const target = await createTestDatabase();
    // The database refuses ChainLog rows until the test lifts the block.
    await target.sql.query(`CREATE TABLE "TestBlockWrites" (on_ boolean)`);
    await target.sql.query(`INSERT INTO "TestBlockWrites" VALUES (true)`);
    await target.sql.query(`CREATE FUNCTION test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF EXISTS (SELECT 1 FROM "TestBlockWrites") THEN RAISE EXCEPTION 'writes refused by the test'; END IF; RETURN NEW; END $$`);
    await target.sql.query(`CREATE TRIGGER test_refuse BEFORE INSERT ON "ChainLog" FOR EACH ROW EXECUTE FUNCTION test_refuse()`);
    const indexer = testIndexer(target, chain);
    try {
      indexer.start();
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const { rows } = await target.sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM "ChainLog"`);
      expect(rows[0]!.n, "nothing written while refused").to.equal("0");
      await target.sql.query(`DELETE FROM "TestBlockWrites"`);
      await waitForHead(target, chain, 30_000);
      expect(await dumpMirror(target)).to.deep.equal(await dumpMirror(db));
    } finally {
      await indexer.stop();
      await target.destroy();
    }
  });

  it("records a malformed or unknown platform log with its status and goes on", () => {
    const catalogue = new ContractCatalogue();
    const addresses = platformAddresses(chain.deployment);
    const depositTopic = catalogue.topicOf("stakingVault", "Deposit");
    const owner = ethers.zeroPadValue("0x00000000000000000000000000000000000000a1", 32);
    const base = {
      blockNumber: "0x10",
      blockHash: `0x${"ab".repeat(32)}`,
      transactionHash: `0x${"cd".repeat(32)}`,
      address: addresses.stakingVault,
    };
    const raw = [
      // Deposit's data holds two words; this one has a single byte.
      { ...base, logIndex: "0x0", topics: [depositTopic, owner, owner], data: "0x01" },
      // No event of the vault has this topic.
      { ...base, logIndex: "0x1", topics: [ethers.id("Surprise(uint256)")], data: "0x" },
      // A well-formed deposit after them is still applied.
      {
        ...base,
        logIndex: "0x2",
        topics: [depositTopic, owner, owner],
        data: ethers.AbiCoder.defaultAbiCoder().encode(["uint256", "uint256"], [usdc(5), usdc(5) * 10n ** 12n]),
      },
    ];
    const logs = decodeLogs(raw, catalogue, { addresses, socialVaults: new Set(), wallets: new Set() }, () => 1_700_000_000);
    expect(logs.map((log) => log.status)).to.deep.equal(["malformed", "unknown", "decoded"]);
    expect(logs[0]!.error).to.be.a("string").and.not.empty;
    const out = emptyOutput();
    applyLogs(logs, { chainId: 31337, state: new StateStore(), out, emit: true }, () => {});
    expect(out.vaultTransactions).to.have.length(1);
    expect(out.events.map((e) => e.type)).to.deep.equal(["vault.deposit"]);
  });
});
