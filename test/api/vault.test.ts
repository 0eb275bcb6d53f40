import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { Transaction, toQuantity } from "ethers";
import pino from "pino";
import { loadConfig } from "../../core/config.js";
import { formatUsdc2, rateNumber } from "../../core/money.js";
import { platformContractAt } from "../../core/platform-abi.js";
import { managedWalletsFor } from "../../core/wallets.js";
import { serviceKey } from "../../domain/idempotency/operation-key.js";
import { withWallet } from "../../domain/users/repo.js";
import { deposit as directDeposit, fundLoan } from "../helpers/activity.js";
import { startTestApi, type TestApi } from "../helpers/api.js";
import { type TestChain, usdc } from "../helpers/chain.js";
import { type TestDatabase, usingPostgres } from "../helpers/database.js";
import { expectErrorEnvelope } from "../helpers/envelope.js";
import { waitFor, waitForHead } from "../helpers/mirror.js";
import { type MoneyStack, newTestUser, postWithKey, startMoneyStack } from "../helpers/money-stack.js";

// The staking vault over real HTTP: a real chain, the indexer beside the API, users' own
// transactions relayed through the forwarder, every figure checked against the contract.

const SHARES_PER_MICRO = 10n ** 12n;
const MIGRATIONS = join(import.meta.dirname, "../../prisma/migrations");

describe(`vault API: deposits, withdrawals, yield, over the relay (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(240_000);
  let chain: TestChain;
  let db: TestDatabase;
  let api: TestApi;

  /** A new user with `funds` test USDC in their managed wallet. */
  const newUser = (funds = 0) => newTestUser(api, "saver", funds, 86_400);
  const post = (path: string, token: string, body: unknown, key?: string) => postWithKey(api, path, token, body, key);
  const shares = async (wallet: string) => (await chain.contracts.vault.balanceOf(wallet)) as bigint;
  const usdcOf = async (wallet: string) => (await chain.contracts.usdc.balanceOf(wallet)) as bigint;

  let stack: MoneyStack | undefined;
  before(async () => {
    stack = await startMoneyStack();
    ({ chain, db, api } = stack);
  });
  after(async () => {
    await stack?.close();
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

  it("withdraws at the contract's rate, and the whole balance as shown redeems every share", async () => {
    const user = await newUser(300);
    expect((await post("/v1/vault/deposit", user.token, { amount: 250.5 })).status).to.equal(200);
    const held = await shares(user.wallet);
    const part = 100_123_456n * SHARES_PER_MICRO;
    const expectedAssets = (await chain.contracts.vault.previewRedeem(part)) as bigint;
    const usdcBefore = await usdcOf(user.wallet);
    const response = await post("/v1/vault/withdraw", user.token, { tmUSDCAmount: 100.123456 });
    expect(response.status, response.text).to.equal(200);
    expect(response.body.data).to.deep.include({
      tmUSDCRedeemed: formatUsdc2(part / SHARES_PER_MICRO),
      usdcReceived: formatUsdc2(expectedAssets),
      remainingBalance: formatUsdc2((held - part) / SHARES_PER_MICRO),
    });
    expect((await usdcOf(user.wallet)) - usdcBefore).to.equal(expectedAssets);
    expect(await shares(user.wallet)).to.equal(held - part);

    // The balance as the API shows it to six decimals, with dust below a micro-tmUSDC left on chain.
    const rest = await shares(user.wallet);
    const all = await post("/v1/vault/withdraw", user.token, { tmUSDCAmount: Number(rest / SHARES_PER_MICRO) / 1e6 });
    expect(all.status, all.text).to.equal(200);
    expect(all.body.data.remainingBalance).to.equal("0.00");
    expect(await shares(user.wallet)).to.equal(0n);
    const list = await api.request("GET", "/v1/vault/transactions?limit=2&offset=1", { token: user.token });
    expect(list.body.data.map((t: { type: string }) => t.type)).to.deep.equal(["withdraw", "deposit"]);
    expect(list.body.pagination).to.deep.equal({ total: 3, limit: 2, offset: 1, hasMore: false });
  });

  it("dates the position from when the current holding began, and its last yield from the distributions it took part in", async () => {
    const user = await newUser(200);
    const position = async () => (await api.request("GET", "/v1/vault/position", { token: user.token })).body.data;
    const blockTime = async (txHash: string) => {
      const receipt = await chain.provider.getTransactionReceipt(txHash);
      return new Date((await chain.provider.getBlock(receipt!.blockNumber))!.timestamp * 1_000).toISOString();
    };
    const before = await position();
    expect(before).to.deep.include({ tmUSDCBalance: "0.00", depositedAt: null, lastYieldClaim: null });

    // A deposit: the holding begins; no distribution since, so the last yield is the deposit's time.
    const first = await post("/v1/vault/deposit", user.token, { amount: 100 });
    expect(first.status, first.text).to.equal(200);
    const firstAt = await blockTime(first.body.data.txHash);
    expect(await position()).to.deep.include({ depositedAt: firstAt, lastYieldClaim: firstAt });

    // A distribution while holding: the last yield is its time; the holding's start stays.
    const distributed = await api.request("POST", "/dev/vault/yield", {
      body: { amount: 10 },
      headers: { "idempotency-key": randomUUID() },
    });
    expect(distributed.status, distributed.text).to.equal(200);
    await waitFor(
      async () => (await db.prisma.yieldDistribution.count({ where: { txHash: distributed.body.data.txHash } })) === 1,
      15_000,
      "the distribution in the mirror",
    );
    const yieldAt = await blockTime(distributed.body.data.txHash);
    expect(await position()).to.deep.include({ depositedAt: firstAt, lastYieldClaim: yieldAt });

    // Everything withdrawn: no holding, no dates.
    const all = await post("/v1/vault/withdraw", user.token, {
      tmUSDCAmount: Number((await shares(user.wallet)) / SHARES_PER_MICRO) / 1e6,
    });
    expect(all.status, all.text).to.equal(200);
    expect(await shares(user.wallet)).to.equal(0n);
    expect(await position()).to.deep.include({ tmUSDCBalance: "0.00", depositedAt: null, lastYieldClaim: null });

    // A new holding begins with the next deposit: the earlier distribution is not its own.
    const again = await post("/v1/vault/deposit", user.token, { amount: 50 });
    expect(again.status, again.text).to.equal(200);
    const againAt = await blockTime(again.body.data.txHash);
    expect(againAt > yieldAt).to.equal(true);
    expect(await position()).to.deep.include({ depositedAt: againAt, lastYieldClaim: againAt });

    // tmUSDC received from another wallet (a plain ERC-20 transfer) begins a holding too.
    const receiver = await newUser();
    const giver = await chain.signer(6);
    await directDeposit(chain, giver, usdc(20));
    const vault = chain.contracts.vault.connect(giver) as typeof chain.contracts.vault;
    const sent = await (await vault.getFunction("transfer")(receiver.wallet, 5n * 10n ** 18n)).wait();
    await waitForHead(db, chain);
    const receivedAt = await blockTime(sent!.hash);
    const received = (await api.request("GET", "/v1/vault/position", { token: receiver.token })).body.data;
    expect(received).to.deep.include({ depositedAt: receivedAt, lastYieldClaim: receivedAt });
    expect(received.tmUSDCBalance).to.not.equal("0.00");

    // The migration that added the holding's start backfills it from the kept logs to the same values.
    const owners = [user.wallet, receiver.wallet, await giver.getAddress()].map((address) => address.toLowerCase());
    const folded = () =>
      db.prisma.vaultPosition.findMany({
        where: { owner: { in: owners } },
        select: { owner: true, heldSince: true },
        orderBy: { owner: "asc" },
      });
    const expected = await folded();
    expect(expected.filter((row) => row.heldSince !== null)).to.have.length(3);
    const migration = readFileSync(
      join(MIGRATIONS, readdirSync(MIGRATIONS).find((name) => name.endsWith("_vault_position_held_since"))!, "migration.sql"),
      "utf8",
    );
    await db.prisma.vaultPosition.updateMany({ data: { heldSince: null } });
    await db.prisma.$executeRawUnsafe(migration.slice(migration.indexOf("WITH")));
    expect(await folded()).to.deep.equal(expected);
  });

  it("refuses a withdrawal worth less than 0.01 USDC unless it is the whole balance, sending nothing", async () => {
    const user = await newUser(20);
    expect((await post("/v1/vault/deposit", user.token, { amount: 10 })).status).to.equal(200);
    const minimumShares = (await chain.contracts.vault.previewWithdraw(10_000n)) as bigint;
    const minimum = (minimumShares + SHARES_PER_MICRO - 1n) / SHARES_PER_MICRO; // micro-tmUSDC
    const recorded = () => db.prisma.relayedRequest.count({ where: { userId: user.id, purpose: "vault.withdraw" } });
    for (const tmUSDCAmount of [0.000001, Number(minimum - 1n) / 1e6]) {
      const refused = await post("/v1/vault/withdraw", user.token, { tmUSDCAmount });
      expectErrorEnvelope(refused, 400, "AMOUNT_TOO_SMALL");
      expect(refused.body.error.details).to.deep.equal({
        field: "tmUSDCAmount",
        reason: `at least ${Number(minimum) / 1e6} tmUSDC (0.01 USDC now) or your whole balance`,
      });
    }
    expect(await recorded()).to.equal(0);
    const smallest = await post("/v1/vault/withdraw", user.token, { tmUSDCAmount: Number(minimum) / 1e6 });
    expect(smallest.status, smallest.text).to.equal(200);
    expect(smallest.body.data.usdcReceived).to.equal("0.01");

    // Leave 5 micro-tmUSDC (far below the minimum): that whole balance may still be withdrawn.
    const held = (await shares(user.wallet)) / SHARES_PER_MICRO;
    expect((await post("/v1/vault/withdraw", user.token, { tmUSDCAmount: Number(held - 5n) / 1e6 })).status).to.equal(200);
    const dust = await post("/v1/vault/withdraw", user.token, { tmUSDCAmount: 0.000005 });
    expect(dust.status, dust.text).to.equal(200);
    expect(await shares(user.wallet)).to.equal(0n);
  });

  it("turns the contract's refusals into the spec's codes, sending and recording nothing", async () => {
    const user = await newUser(50);
    const recorded = () => db.prisma.relayedRequest.count({ where: { userId: user.id } });
    const before = await recorded();
    const small = await post("/v1/vault/deposit", user.token, { amount: 0.5 });
    expectErrorEnvelope(small, 400, "AMOUNT_TOO_SMALL");
    expect(small.body.error.details).to.deep.equal({ field: "amount", reason: "at least 1.00 USDC" });
    expectErrorEnvelope(await post("/v1/vault/deposit", user.token, { amount: 50.01 }), 400, "INSUFFICIENT_BALANCE");
    expectErrorEnvelope(await post("/v1/vault/withdraw", user.token, { tmUSDCAmount: 1 }), 400, "INSUFFICIENT_BALANCE");
    expect(await recorded()).to.equal(before);
    expect(await shares(user.wallet)).to.equal(0n);
    expect(await usdcOf(user.wallet)).to.equal(usdc(50));
  });

  it("answers VAULT_PAUSED (503) to a deposit while the vault is paused, and withdraws: a pause never traps depositors", async () => {
    const user = await newUser(20);
    expect((await post("/v1/vault/deposit", user.token, { amount: 10 })).status).to.equal(200);
    await (await chain.contracts.vault.getFunction("pause")()).wait();
    try {
      expectErrorEnvelope(await post("/v1/vault/deposit", user.token, { amount: 5 }), 503, "VAULT_PAUSED");
      const withdrawn = await post("/v1/vault/withdraw", user.token, { tmUSDCAmount: 1 });
      expect(withdrawn.status).to.equal(200);
      expect(withdrawn.body.data.usdcReceived).to.equal("1.00");
    } finally {
      // Only the admin (the timelock) lifts a pause: the online key that paused cannot.
      const byTheOnlineKey = await chain.contracts.vault
        .getFunction("unpause")
        .staticCall()
        .then(
          () => "lifted",
          () => "refused",
        );
      expect(byTheOnlineKey).to.equal("refused");
      await (await chain.contracts.vault.connect(await chain.asTimelock()).getFunction("unpause")()).wait();
    }
    expect((await post("/v1/vault/deposit", user.token, { amount: 5 })).status).to.equal(200);
  });

  it("answers INSUFFICIENT_LIQUIDITY when the USDC is lent out", async () => {
    const user = await newUser(100);
    expect((await post("/v1/vault/deposit", user.token, { amount: 100 })).status).to.equal(200);
    const vault = chain.contracts.vault;
    const idle = (await vault.idleAssets()) as bigint;
    // Loans take the pool to its utilization cap (D-101), and a holder leaves with most of the tenth left idle.
    const holder = await chain.signer(4);
    await directDeposit(chain, holder, idle);
    for (let lendable = (await vault.lendableAssets()) as bigint; lendable > 0n; lendable = (await vault.lendableAssets()) as bigint) {
      // The loan book's largest principal is 500 USDC.
      // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.min does not take
      const principal = lendable < usdc(500) ? lendable : usdc(500);
      await fundLoan(chain, await chain.signer(3), randomUUID(), principal, usdc(1));
    }
    const exit = ((await vault.idleAssets()) as bigint) - usdc(10);
    await (await (vault.connect(holder) as typeof vault).getFunction("withdraw")(exit, holder.address, holder.address)).wait();
    try {
      const response = await post("/v1/vault/withdraw", user.token, { tmUSDCAmount: 50 });
      expectErrorEnvelope(response, 400, "INSUFFICIENT_LIQUIDITY");
      expect(response.body.error.details.field).to.equal("tmUSDCAmount");
    } finally {
      // Lend-out stays for the rest of the file: later tests' deposits refill the idle USDC.
      await directDeposit(chain, await chain.signer(4), idle);
    }
  });

  it("replays a retry with the same Idempotency-Key and sends nothing again", async () => {
    const user = await newUser(100);
    const key = randomUUID();
    const first = await post("/v1/vault/deposit", user.token, { amount: 40 }, key);
    expect(first.status, first.text).to.equal(200);
    const nonce = (await chain.provider.getTransactionCount(
      chain.deployment.deployer ?? (await (await chain.signer(0)).getAddress()),
    )) as number;
    const again = await post("/v1/vault/deposit", user.token, { amount: 40 }, key);
    expect(again.status).to.equal(200);
    expect(again.text).to.equal(first.text);
    expect(again.headers.get("idempotent-replayed")).to.equal("true");
    expectErrorEnvelope(await post("/v1/vault/deposit", user.token, { amount: 41 }, key), 422, "IDEMPOTENCY_KEY_REUSED");
    expect(await chain.provider.getTransactionCount(await (await chain.signer(0)).getAddress())).to.equal(nonce);
    expect(await usdcOf(user.wallet)).to.equal(usdc(60));
    expect(await db.prisma.relayedRequest.count({ where: { userId: user.id, purpose: "vault.deposit" } })).to.equal(1);
  });

  it("shows a wallet's own deposit, made straight to the contract, in position and transactions", async () => {
    const user = await newUser(80);
    const wallets = await managedWalletsFor({ managedWalletMnemonic: undefined, dataDir: api.dataDir, isProduction: false }, db);
    const row = await db.prisma.user.findUniqueOrThrow({ where: { id: user.id } });
    const own = wallets.signerOf(row.walletIndex).connect(chain.provider);
    const deployer = await chain.signer(0);
    await (await deployer.sendTransaction({ to: own.address, value: 10n ** 17n })).wait();
    const vault = chain.contracts.vault.connect(own) as typeof chain.contracts.vault;
    await (
      await (chain.contracts.usdc.connect(own) as typeof chain.contracts.usdc).getFunction("approve")(await vault.getAddress(), usdc(30))
    ).wait();
    const tx = await vault.getFunction("deposit")(usdc(30), own.address);
    const receipt = await tx.wait();
    await waitFor(async () => (await db.prisma.indexerCursor.findFirst())!.blockNumber >= receipt!.blockNumber, 15_000, "the indexer");
    const position = await api.request("GET", "/v1/vault/position", { token: user.token });
    expect(position.body.data.tmUSDCBalance).to.equal(formatUsdc2((await shares(user.wallet)) / SHARES_PER_MICRO));
    const list = await api.request("GET", "/v1/vault/transactions", { token: user.token });
    expect(list.body.data[0]).to.deep.include({ type: "deposit", usdcAmount: "30.00", txHash: tx.hash });
  });

  it("raises the position with yield: earned yield and the yield history agree with the chain", async () => {
    const user = await newUser(1_000);
    expect((await post("/v1/vault/deposit", user.token, { amount: 1_000 })).status).to.equal(200);
    // Worth its exit price at once: the deposit paid the entry price, the exit price is without the open loans'
    // provisions (D-121, D-126).
    const before = (await chain.contracts.vault.previewRedeem(await shares(user.wallet))) as bigint;
    const yieldAnswer = await api.request("POST", "/dev/vault/yield", {
      body: { amount: 500 },
      headers: { "idempotency-key": randomUUID() },
    });
    expect(yieldAnswer.status, yieldAnswer.text).to.equal(200);
    await waitFor(
      async () => (await db.prisma.yieldDistribution.count({ where: { txHash: yieldAnswer.body.data.txHash } })) === 1,
      15_000,
      "the distribution in the mirror",
    );
    const held = await shares(user.wallet);
    const value = (await chain.contracts.vault.previewRedeem(held)) as bigint;
    const position = (await api.request("GET", "/v1/vault/position", { token: user.token })).body.data;
    expect(position.usdcValue).to.equal(formatUsdc2(value));
    expect(position.earnedYield).to.equal(formatUsdc2(value - usdc(1_000)));
    expect(value).to.be.greaterThan(before);
    expect(position.lastYieldClaim).to.be.a("string");
    for (const period of ["7d", "30d", "90d", "1y", "all"]) {
      const history = await api.request("GET", `/v1/vault/yield/history?period=${period}`, { token: user.token });
      expect(history.status, history.text).to.equal(200);
      expect(history.body.data.totalYield, period).to.equal(position.earnedYield);
      const days = { "7d": 7, "30d": 30, "90d": 90, "1y": 365, all: 1 }[period]!;
      expect(history.body.data.history, period).to.have.length(days);
      expect(history.body.data.history.at(-1).date).to.equal(api.clock.now().toISOString().slice(0, 10));
      // Its sign is the yield's: the yield unlocks over days, and the exit price is below the entry price by the
      // provisions, so a deposit just made may show a loss first.
      expect(Math.sign(history.body.data.averageAPY), period).to.equal(Math.sign(Number(position.earnedYield)));
    }
    for (const period of ["2d", "", "30D", "all "]) {
      expectErrorEnvelope(
        await api.request("GET", `/v1/vault/yield/history?period=${encodeURIComponent(period)}`, { token: user.token }),
        400,
        "VALIDATION_ERROR",
      );
    }
  });

  it("serves status, rates and the yield calculator from the chain", async () => {
    const onChain = await chain.contracts.vault.vaultStatus();
    const status = (await api.request("GET", "/v1/vault/status")).body.data;
    expect(status).to.deep.equal({
      totalDeposits: formatUsdc2(onChain.totalAssets),
      totalBorrowed: formatUsdc2(onChain.totalBorrowed),
      utilization: rateNumber(onChain.utilization),
      currentAPY: rateNumber(onChain.supplyRate),
      exchangeRate: rateNumber(onChain.exchangeRate),
      tmUSDCSupply: formatUsdc2(onChain.totalSupply / SHARES_PER_MICRO),
      unrealizedLosses: formatUsdc2((await chain.contracts.vault.unrealizedLosses()) as bigint),
      provisions: formatUsdc2((await chain.contracts.vault.provisioned()) as bigint),
      entryExchangeRate: status.entryExchangeRate,
    });
    // No loan is past due here: the unrealized losses are the open loans' provisions (D-126), out of the exit price
    // (exchangeRate) and not of the entry price (D-121).
    expect(status.totalBorrowed).to.not.equal("0.00");
    expect(status.provisions).to.not.equal("0.00");
    expect(status.unrealizedLosses).to.equal(status.provisions);
    expect(status.entryExchangeRate).to.be.greaterThan(status.exchangeRate);
    const rates = (await api.request("GET", "/v1/vault/rates")).body.data;
    expect(rates.model.map((p: { utilization: number }) => p.utilization)).to.deep.equal([0, 0.5, 0.8, 0.95, 1]);
    // The current point is the model's curve; the status's currentAPY is what depositors earn now (D-97).
    const model = platformContractAt("interestRateModel", (await chain.contracts.vault.interestRateModel()) as string, chain.provider);
    expect(rates.supplyAPY).to.equal(rateNumber((await model.supplyRate(onChain.utilization)) as bigint));
    expect(rates.borrowRate).to.equal(rateNumber(onChain.borrowRate));
    expect(onChain.supplyRate).to.be.greaterThan(0n);

    const calc = await api.request("POST", "/v1/vault/yield/calculate", { body: { amount: 1_000, duration: 365 } });
    expect(calc.status, calc.text).to.equal(200);
    // From what 1,000 deposited now redeems for at once (the exit price, without the provisions: D-126), a year.
    const onExit = (usdc(1_000) * (onChain.totalAssets as bigint)) / ((await chain.contracts.vault.entryAssets()) as bigint);
    expect(onExit).to.be.lessThan(usdc(1_000));
    const total = onExit + (onExit * (onChain.supplyRate as bigint)) / 10n ** 18n;
    expect(calc.body.data).to.deep.include({
      depositAmount: "1000.00",
      duration: 365,
      currentAPY: rateNumber(onChain.supplyRate),
      projectedYield: formatUsdc2(total - usdc(1_000)),
      projectedTotal: formatUsdc2(total),
    });
    expect(calc.body.data.disclaimer).to.match(/not financial advice/i);
    for (const body of [
      { amount: 0, duration: 30 },
      { amount: 10, duration: 0 },
      { amount: 10, duration: 1.5 },
      { amount: 10, duration: 3_651 },
      { amount: 10 },
    ]) {
      expectErrorEnvelope(await api.request("POST", "/v1/vault/yield/calculate", { body }), 400, "VALIDATION_ERROR");
    }
  });

  it("validates amounts and pages, and documents the Idempotency-Key of both writes", async () => {
    const user = await newUser();
    for (const amount of [0, -5, 1.0000001, "10", null, 1e21]) {
      const response = await post("/v1/vault/deposit", user.token, { amount });
      expectErrorEnvelope(response, 400, "VALIDATION_ERROR");
      expect(response.body.error.details.field).to.equal("amount");
    }
    expectErrorEnvelope(await post("/v1/vault/withdraw", user.token, { amount: 1 }), 400, "VALIDATION_ERROR");
    for (const query of ["limit=0", "limit=101", "offset=-1", "limit=1e1"]) {
      expectErrorEnvelope(await api.request("GET", `/v1/vault/transactions?${query}`, { token: user.token }), 400, "VALIDATION_ERROR");
    }
    expectErrorEnvelope(await api.request("GET", "/v1/vault/position"), 401, "UNAUTHORIZED");
    const doc = (await api.request("GET", "/v1/openapi.json")).body;
    for (const path of ["/v1/vault/deposit", "/v1/vault/withdraw"]) {
      const header = doc.paths[path].post.parameters.find((p: { name: string }) => p.name === "Idempotency-Key");
      expect(header, path).to.deep.include({ in: "header", required: false });
    }
    for (const path of ["/v1/vault/status", "/v1/vault/position", "/v1/vault/yield/history", "/v1/vault/rates", "/v1/vault/transactions"]) {
      expect(doc.paths[path]?.get, path).to.be.an("object");
    }
  });

  it("keeps chain, mirror and API equal under 50 concurrent deposits and withdrawals of one user, half of them sent without an Idempotency-Key", async () => {
    const user = await newUser(10_000);
    expect((await post("/v1/vault/deposit", user.token, { amount: 100 })).status).to.equal(200);
    // As a client that knows only the spec sends them: no key at all.
    const plain = (path: string, body: unknown) => api.request("POST", path, { token: user.token, body });
    const requests = Array.from({ length: 50 }, (_, i) => {
      const send = i % 2 === 0 ? plain : (path: string, body: unknown) => post(path, user.token, body);
      return i % 5 === 4 ? send("/v1/vault/withdraw", { tmUSDCAmount: 2 }) : send("/v1/vault/deposit", { amount: 10 });
    });
    const answers = await Promise.all(requests);
    for (const answer of answers) expect(answer.status, answer.text).to.equal(200);
    // They went out in batches: each answer names the batch transaction that ran it, mined.
    const hashes = new Set(answers.map((a) => a.body.data.txHash as string));
    expect(hashes.size).to.be.below(50);
    for (const hash of hashes) expect((await chain.provider.getTransactionReceipt(hash))?.status).to.equal(1);
    const held = await shares(user.wallet);
    const mirrored = await db.prisma.vaultPosition.findFirstOrThrow({ where: { owner: user.wallet.toLowerCase() } });
    expect(BigInt(mirrored.shares.toFixed())).to.equal(held);
    const position = (await api.request("GET", "/v1/vault/position", { token: user.token })).body.data;
    expect(position.tmUSDCBalance).to.equal(formatUsdc2(held / SHARES_PER_MICRO));
    expect(await usdcOf(user.wallet)).to.equal(usdc(10_000 - 100 - 40 * 10) + (await withdrawnUsdc(user.wallet)));
    // One request each, executed, with the wallet's forwarder nonces in order: none used twice, none skipped.
    const rows = await db.prisma.relayedRequest.findMany({ where: { userId: user.id, purpose: { startsWith: "vault." } } });
    expect(rows).to.have.length(51);
    expect(rows.every((row) => row.status === "executed")).to.equal(true);
    expect(rows.map((row) => Number(row.forwarderNonce)).sort((a, b) => a - b)).to.deep.equal(Array.from({ length: 51 }, (_, i) => i));
    expect(await chain.contracts.forwarder.nonces(user.wallet)).to.equal(51n);
    const list = await api.request("GET", "/v1/vault/transactions?limit=100", { token: user.token });
    expect(list.body.pagination.total).to.equal(51);
  });

  it("keeps chain, mirror and API equal under 50 users' concurrent deposits, then withdrawals, sent in shared batches", async () => {
    const users = await Promise.all(Array.from({ length: 50 }, () => newUser(40)));
    const deposits = await Promise.all(users.map((user) => post("/v1/vault/deposit", user.token, { amount: 20 })));
    for (const answer of deposits) expect(answer.status, answer.text).to.equal(200);
    const withdrawals = await Promise.all(users.map((user) => post("/v1/vault/withdraw", user.token, { tmUSDCAmount: 5 })));
    for (const answer of withdrawals) expect(answer.status, answer.text).to.equal(200);
    const rows = await db.prisma.relayedRequest.findMany({ where: { userId: { in: users.map((user) => user.id) } } });
    expect(rows).to.have.length(100);
    expect(rows.every((row) => row.status === "executed")).to.equal(true);
    const batches = new Set(rows.map((row) => row.transactionId));
    expect(batches.size, "shared batches").to.be.below(100);
    for (const user of users) {
      const held = await shares(user.wallet);
      const mirrored = await db.prisma.vaultPosition.findFirstOrThrow({ where: { owner: user.wallet.toLowerCase() } });
      expect(BigInt(mirrored.shares.toFixed())).to.equal(held);
      const position = (await api.request("GET", "/v1/vault/position", { token: user.token })).body.data;
      expect(position.tmUSDCBalance).to.equal(formatUsdc2(held / SHARES_PER_MICRO));
      expect(await usdcOf(user.wallet)).to.equal(usdc(20) + (await withdrawnUsdc(user.wallet)));
    }
  });

  it("answers a request that reverts inside its batch with its own code, and the others of the batch with theirs", async () => {
    const alice = await newUser(100);
    const bob = await newUser(100);
    for (const user of [alice, bob]) expect((await post("/v1/vault/deposit", user.token, { amount: 50 })).status).to.equal(200);
    const record = async (id: string) => withWallet(await db.prisma.user.findUniqueOrThrow({ where: { id } }));
    const [aliceRow, bobRow] = [await record(alice.id), await record(bob.id)];
    // Two withdrawals of 60 % of Alice's tmUSDC, each fine alone, and one of Bob's, started together:
    // all three pass their simulation and go out in one batch, where Alice's second cannot redeem.
    const heldBefore = await shares(alice.wallet);
    const part = ((heldBefore / SHARES_PER_MICRO) * 6n) / 10n;
    const operation = () => ({ idempotencyKey: serviceKey(), requestHash: randomUUID() });
    const outcomes = await Promise.allSettled([
      api.services.vault!.withdraw(aliceRow, part, operation()),
      api.services.vault!.withdraw(aliceRow, part, operation()),
      api.services.vault!.withdraw(bobRow, 10_000_000n, operation()),
    ]);
    const rows = await db.prisma.relayedRequest.findMany({
      where: { userId: { in: [alice.id, bob.id] }, purpose: "vault.withdraw" },
      orderBy: { position: "asc" },
    });
    expect(new Set(rows.map((row) => row.transactionId)).size, "one batch").to.equal(1);
    expect(rows.map((row) => [row.userId, row.status])).to.deep.equal([
      [alice.id, "executed"],
      [alice.id, "reverted"],
      [bob.id, "executed"],
    ]);
    const refused = outcomes.filter((outcome) => outcome.status === "rejected");
    expect(refused).to.have.length(1);
    expect((refused[0] as PromiseRejectedResult).reason).to.deep.include({ code: "INSUFFICIENT_BALANCE" });
    const answered = outcomes.flatMap((outcome) => (outcome.status === "fulfilled" ? [outcome.value] : []));
    const batch = await db.prisma.chainTransaction.findUniqueOrThrow({ where: { id: rows[0]!.transactionId } });
    expect(answered.map((answer) => answer.txHash)).to.deep.equal([batch.txHash, batch.txHash]);
    expect(answered.map((answer) => answer.tmUSDCRedeemed)).to.have.members([formatUsdc2(part), "10.00"]);
    expect(await shares(alice.wallet)).to.equal(heldBefore - part * SHARES_PER_MICRO);
  });

  it("replaces a transaction stuck below the base fee with higher fees, and answers with the one mined", async () => {
    const patient = await startTestApi({ chain, db, env: { TX_REPLACE_AFTER_MS: "300" } });
    try {
      const token = await patient.token(`stuck-${randomUUID()}`, { expiresIn: 86_400 });
      const me = (await patient.request("GET", "/v1/users/me", { token })).body.data;
      const fund = await patient.request("POST", "/dev/faucet", {
        token,
        body: { amount: 50 },
        headers: { "idempotency-key": randomUUID() },
      });
      expect(fund.status, fund.text).to.equal(200);
      // A first deposit grants the vault its standing allowance (D-86); the second is the one left behind.
      const first = await patient.request("POST", "/v1/vault/deposit", { token, body: { amount: 5 } });
      expect(first.status, first.text).to.equal(200);
      await chain.setAutomine(false);
      let answer: Promise<Awaited<ReturnType<TestApi["request"]>>>;
      try {
        answer = patient.request("POST", "/v1/vault/deposit", {
          token,
          body: { amount: 20 },
          headers: { "idempotency-key": randomUUID() },
        });
        const request = await waitFor(
          () => db.prisma.relayedRequest.findFirst({ where: { userId: me.id, purpose: "vault.deposit", status: "pending" } }),
          15_000,
          "the deposit to be recorded",
        );
        const row = await db.prisma.chainTransaction.findUniqueOrThrow({ where: { id: request.transactionId } });
        await waitFor(async () => (await chain.provider.getTransaction(row.txHash)) !== null, 15_000, "the deposit in the mempool");
        // A block whose base fee is above what the transaction offers leaves it behind.
        const offered = Transaction.from(row.rawTx).maxFeePerGas!;
        await chain.provider.send("hardhat_setNextBlockBaseFeePerGas", [toQuantity(offered * 4n)]);
        await chain.mine();
        expect(await chain.provider.getTransactionReceipt(row.txHash)).to.equal(null);
        const replaced = await waitFor(
          async () => {
            const now = await db.prisma.chainTransaction.findUniqueOrThrow({ where: { id: row.id } });
            return now.previousTxHashes.length > 0 ? now : undefined;
          },
          15_000,
          "the replacement",
        );
        expect(replaced.previousTxHashes).to.deep.equal([row.txHash]);
        expect(replaced.nonce).to.equal(row.nonce);
        await chain.mine();
      } finally {
        await chain.setAutomine(true);
      }
      const response = await answer;
      expect(response.status, response.text).to.equal(200);
      const request = await db.prisma.relayedRequest.findFirstOrThrow({
        where: { userId: me.id, purpose: "vault.deposit" },
        orderBy: { createdAt: "desc" },
      });
      expect(request.status).to.equal("executed");
      const settled = await db.prisma.chainTransaction.findUniqueOrThrow({ where: { id: request.transactionId } });
      expect(settled).to.deep.include({ status: "mined", txHash: response.body.data.txHash });
      expect((await chain.provider.getTransactionReceipt(response.body.data.txHash))?.status).to.equal(1);
      const deposits = await chain.contracts.vault.queryFilter(chain.contracts.vault.filters.Deposit!(me.walletAddress));
      expect(deposits).to.have.length(2);
    } finally {
      await patient.close();
    }
  });

  it("reports the paying account's balance in /health, and warns once when it runs low", async () => {
    const health = await api.request("GET", "/health");
    const payer = await (await chain.signer(0)).getAddress();
    expect(health.body.payer).to.deep.include({ address: payer, low: false, lowBalanceWei: "100000000000000000" });
    expect(BigInt(health.body.payer.balanceWei)).to.equal(await chain.provider.getBalance(payer));

    const lines: { level: number; msg: string }[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const poorApi = await startTestApi({ chain, db, logger, env: { PAYER_LOW_BALANCE_WEI: "10".padEnd(30, "0") } });
    try {
      for (let i = 0; i < 2; i += 1) {
        const answer = await poorApi.request("GET", "/health");
        expect(answer.status).to.equal(200);
        expect(answer.body.payer).to.deep.include({ low: true });
      }
      expect(lines.filter((line) => line.level === 40 && /runs low/.test(line.msg))).to.have.length(1);
    } finally {
      await poorApi.close();
    }
    expect(() => loadConfig({ PAYER_LOW_BALANCE_WEI: "0.1" })).to.throw(/PAYER_LOW_BALANCE_WEI/);
  });

  /** USDC the wallet received from the vault (the mirror's withdrawals, checked above to match the chain). */
  async function withdrawnUsdc(wallet: string) {
    const rows = await db.prisma.vaultTransaction.findMany({ where: { owner: wallet.toLowerCase(), type: "withdraw" } });
    return rows.reduce((sum, row) => sum + row.assets, 0n);
  }
});
