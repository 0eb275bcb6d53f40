// The relay's lockout after a reorganisation (#42, D-90), as the issue found it: with the indexer
// waiting for two confirmations, and with the API stopped while the chain reorganises and started
// again after. Before, both locked the user out of every relayed write (503: the removed request
// still recorded as executed at forwarder nonce 0, the next signed at 1 and skipped).
import { expect } from "chai";
import { createLogger } from "../../core/logger.js";
import { startPlatformWorkers } from "../../worker/jobs.js";
import type { Workers } from "../../worker/scheduler.js";
import { startTestApi, type TestApi } from "../helpers/api.js";
import { usingPostgres } from "../helpers/database.js";
import { waitFor } from "../helpers/mirror.js";
import { type MoneyStack, newTestUser, postWithKey, startMoneyStack } from "../helpers/money-stack.js";

const silent = createLogger("silent");
const startWorkers = (api: TestApi) => startPlatformWorkers({ services: api.services, clock: api.clock, logger: silent, tickMs: 100 });

describe(`the relay's lockout after a reorganisation, its variants (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(180_000);

  it("with CONFIRMATIONS=2: the removed deposit comes back and the next write goes through", async () => {
    const stack: MoneyStack = await startMoneyStack({ confirmations: 2 });
    const { chain, api } = stack;
    let workers: Workers | undefined = startWorkers(api);
    // A chain that moves on, as a testnet does: the writes' blocks get their two confirmations.
    const miner = setInterval(() => void chain.mine(1).catch(() => {}), 150);
    try {
      const user = await newTestUser(api, "confirmed", 50);
      const fork = await api.request("POST", "/dev/chain/snapshot");
      expect((await postWithKey(api, "/v1/vault/deposit", user.token, { amount: 20 })).status).to.equal(200);
      const reorg = await api.request("POST", "/dev/chain/reorg", { body: { snapshotId: fork.body.data.snapshotId } });
      expect(reorg.status, reorg.text).to.equal(200);
      await waitFor(
        async () => (((await chain.contracts.vault.balanceOf(user.wallet)) as bigint) > 0n ? true : undefined),
        30_000,
        "the removed deposit back on chain",
      );
      const next = await postWithKey(api, "/v1/vault/deposit", user.token, { amount: 10 });
      expect(next.status, next.text).to.equal(200);
      const held = (await chain.contracts.vault.convertToAssets(await chain.contracts.vault.balanceOf(user.wallet))) as bigint;
      expect(held).to.equal(30_000_000n);
      await waitFor(
        async () =>
          (await api.request("GET", "/v1/vault/position", { token: user.token })).body.data.usdcValue === "30.00" ? true : undefined,
        20_000,
        "the mirror, two blocks behind, follows",
      );
    } finally {
      clearInterval(miner);
      await workers?.stop();
      workers = undefined;
      await stack.close();
    }
  });

  it("across a restart: the API stopped while the chain reorganises serves the user's next write once started again", async () => {
    const stack: MoneyStack = await startMoneyStack();
    const { chain, db, indexer } = stack;
    let api: TestApi | undefined = stack.api;
    let workers: Workers | undefined;
    try {
      const user = await newTestUser(api, "restarted", 50);
      const fork = await chain.snapshot();
      expect((await postWithKey(api, "/v1/vault/deposit", user.token, { amount: 20 })).status).to.equal(200);
      await api.close();
      api = undefined;
      // The reorganisation while no API runs: the deposit's permit and batch are gone.
      await chain.revert(fork);
      await chain.mine(3);
      expect((await chain.contracts.vault.balanceOf(user.wallet)) as bigint).to.equal(0n);

      api = await startTestApi({ chain, db, logger: silent });
      const token = await api.token(user.subject, { expiresIn: 86_400 });
      // The first write after the restart: its batch brings the removed ones back first, then its own.
      const next = await postWithKey(api, "/v1/vault/deposit", token, { amount: 10 });
      expect(next.status, next.text).to.equal(200);
      const held = (await chain.contracts.vault.convertToAssets(await chain.contracts.vault.balanceOf(user.wallet))) as bigint;
      expect(held).to.equal(30_000_000n);
      // The worker's job settles the batch the write brought back, from its new receipt.
      workers = startWorkers(api);
      const statuses = async () =>
        (await db.prisma.relayedRequest.findMany({ where: { userId: user.id }, orderBy: { forwarderNonce: "asc" } })).map((request) =>
          [request.forwarderNonce, request.status].join(" "),
        );
      await waitFor(async () => ((await statuses()).every((status) => status.endsWith("executed")) ? true : undefined), 20_000, "settled");
      expect(await statuses()).to.deep.equal(["0 executed", "1 executed"]);
    } finally {
      await workers?.stop();
      await api?.close();
      await indexer.stop();
      await db.destroy();
      await chain.close();
    }
  });
});
