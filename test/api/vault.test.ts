import { randomUUID } from "node:crypto";
import { expect } from "chai";
import { ensureChainIdentity } from "../../core/chain-identity.js";
import { createLogger } from "../../core/logger.js";
import { formatUsdc2, rateNumber } from "../../core/money.js";
import type { Indexer } from "../../indexer/indexer.js";
import { deposit as directDeposit } from "../helpers/activity.js";
import { startTestApi, type TestApi } from "../helpers/api.js";
import { startTestChain, type TestChain, usdc } from "../helpers/chain.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";
import { expectErrorEnvelope } from "../helpers/envelope.js";
import { testIndexer } from "../helpers/mirror.js";

// The staking vault over real HTTP: a real chain, the indexer beside the API, users' own
// transactions relayed through the forwarder, every figure checked against the contract.

const SHARES_PER_MICRO = 10n ** 12n;

describe(`vault API: deposits, withdrawals, yield, over the relay (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(240_000);
  let chain: TestChain;
  let db: TestDatabase;
  let indexer: Indexer;
  let api: TestApi;

  /** A new user with `funds` test USDC in their managed wallet. */
  async function newUser(funds = 0) {
    const token = await api.token(`saver-${randomUUID()}`, { expiresIn: 86_400 });
    const me = await api.request("GET", "/v1/users/me", { token });
    if (funds > 0) {
      const faucet = await api.request("POST", "/dev/faucet", {
        token,
        body: { amount: funds },
        headers: { "idempotency-key": randomUUID() },
      });
      expect(faucet.status, faucet.text).to.equal(200);
    }
    return { token, wallet: me.body.data.walletAddress as string, id: me.body.data.id as string };
  }
  const post = (path: string, token: string, body: unknown, key: string = randomUUID()) =>
    api.request("POST", path, { token, body, headers: { "idempotency-key": key } });
  const shares = async (wallet: string) => (await chain.contracts.vault.balanceOf(wallet)) as bigint;
  const usdcOf = async (wallet: string) => (await chain.contracts.usdc.balanceOf(wallet)) as bigint;

  before(async () => {
    chain = await startTestChain();
    db = await createTestDatabase();
    await ensureChainIdentity(db, chain.deployment, { embedded: true, logger: createLogger("silent") });
    indexer = testIndexer(db, chain);
    indexer.start();
    api = await startTestApi({ chain, db, logger: createLogger(process.env.TEST_LOG_LEVEL ?? "silent") });
  });
  after(async () => {
    await api?.close();
    await indexer?.stop();
    await db?.destroy();
    await chain?.close();
  });

  it("deposits with the user's own signature and no ETH, answering the contract's figures, and the next reads show it", async () => {
    const user = await newUser(500);
    expect(await chain.provider.getBalance(user.wallet)).to.equal(0n);
    const preview = (await chain.contracts.vault.previewDeposit(usdc(100))) as bigint;
    const response = await post("/v1/vault/deposit", user.token, { amount: 100 });
    expect(response.status, response.text).to.equal(200);
    const data = response.body.data;
    const receipt = await chain.provider.getTransactionReceipt(data.txHash);
    expect(receipt?.status).to.equal(1);
    expect(receipt?.to?.toLowerCase()).to.equal(chain.deployment.contracts.forwarder!.address.toLowerCase());
    const held = await shares(user.wallet);
    expect(held).to.equal(preview);
    expect(data).to.deep.include({
      depositAmount: "100.00",
      tmUSDCReceived: formatUsdc2(preview / SHARES_PER_MICRO),
      newBalance: formatUsdc2(held / SHARES_PER_MICRO),
      exchangeRate: rateNumber((await chain.contracts.vault.exchangeRate()) as bigint),
      xpEarned: 20,
    });
    expect(await usdcOf(user.wallet)).to.equal(usdc(400));
    // The contract saw the user's wallet as the depositor: the event names it as sender and owner.
    const deposits = await chain.contracts.vault.queryFilter(chain.contracts.vault.filters.Deposit!(user.wallet), receipt!.blockNumber);
    expect(deposits).to.have.length(1);

    const position = await api.request("GET", "/v1/vault/position", { token: user.token });
    expect(position.status, position.text).to.equal(200);
    expect(position.body.data).to.deep.include({
      userId: user.id,
      tmUSDCBalance: formatUsdc2(held / SHARES_PER_MICRO),
      usdcValue: formatUsdc2((await chain.contracts.vault.previewRedeem(held)) as bigint),
      depositedAt: new Date((await chain.provider.getBlock(receipt!.blockNumber))!.timestamp * 1000).toISOString(),
    });
    const transactions = await api.request("GET", "/v1/vault/transactions", { token: user.token });
    expect(transactions.body.data).to.have.length(1);
    expect(transactions.body.data[0]).to.deep.include({ type: "deposit", usdcAmount: "100.00", txHash: data.txHash });
    expect(transactions.body.pagination).to.deep.equal({ total: 1, limit: 20, offset: 0, hasMore: false });
    const activity = await api.request("GET", "/v1/users/me/activity", { token: user.token });
    expect(activity.body.data.map((a: { type: string }) => a.type)).to.include("vault_deposit");
  });
});
