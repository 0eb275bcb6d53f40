// History before the account (#42, item 5, D-93): USDC that reached a managed wallet before its
// user existed, and USDC sent to a social vault's predicted address before the vault was
// created, are mirrored once when the address becomes known, so what the API reads from the
// mirror agrees with the chain.
import { expect } from "chai";
import { managedWalletsFor } from "../../core/wallets.js";
import type { TestApi } from "../helpers/api.js";
import { type TestChain, usdc } from "../helpers/chain.js";
import { type TestDatabase, usingPostgres } from "../helpers/database.js";
import { waitForHead } from "../helpers/mirror.js";
import { type MoneyStack, newTestUser, postWithKey, startMoneyStack } from "../helpers/money-stack.js";

describe(`history before the account (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(180_000);
  let stack: MoneyStack | undefined;
  let chain: TestChain;
  let db: TestDatabase;
  let api: TestApi;

  before(async () => {
    stack = await startMoneyStack();
    ({ chain, db, api } = stack);
  });
  after(async () => {
    await stack?.close();
  });

  const usdcOf = async (address: string) => (await chain.contracts.usdc.balanceOf(address)) as bigint;
  /** Mints `amount` micro-USDC to `to` from the deployer (anyone can send USDC to any address). */
  const mint = async (to: string, amount: bigint) => {
    await (await chain.contracts.usdc.mint(to, amount)).wait();
  };
  /** The mirror's USDC transfers in and out of `address`, in chain order. */
  const transfersOf = async (address: string) =>
    (
      await db.sql.query<{ from: string; to: string; amount: string; txHash: string }>(
        `SELECT "from", "to", "amount"::text AS "amount", "txHash" FROM "UsdcTransfer"
          WHERE "chainId" = $1 AND ($2 IN ("from", "to")) ORDER BY "blockNumber", "logIndex"`,
        [chain.deployment.chainId, address.toLowerCase()],
      )
    ).rows;
  const mirroredBalance = (address: string, rows: { from: string; to: string; amount: string }[]) =>
    rows.reduce((sum, row) => sum + (row.to === address.toLowerCase() ? BigInt(row.amount) : -BigInt(row.amount)), 0n);

  it("mirrors the USDC a managed wallet received before its user existed, once, and no event for it", async () => {
    // The address the next user will be given: the seed is the deployment's, the index the next of its sequence.
    const wallets = await managedWalletsFor({ managedWalletMnemonic: undefined, dataDir: api.dataDir, isProduction: false }, db);
    const { rows } = await db.sql.query<{ last_value: string; is_called: boolean }>(
      `SELECT last_value, is_called FROM "User_walletIndex_seq"`,
    );
    const nextIndex = Number(rows[0]!.last_value) + (rows[0]!.is_called ? 1 : 0);
    const future = wallets.addressOf(nextIndex);
    await mint(future, usdc(7));
    const sender = await chain.signer(6);
    await mint(await sender.getAddress(), usdc(5));
    const early = await (await chain.contracts.usdc.connect(sender).getFunction("transfer")(future, usdc(5))).wait();
    await waitForHead(db, chain);
    expect(await transfersOf(future), "not the platform's yet").to.deep.equal([]);

    const user = await newTestUser(api, "late-comer", 3);
    expect(user.wallet).to.equal(future);
    await waitForHead(db, chain);
    const mirrored = await transfersOf(future);
    expect(mirrored.map((row) => row.amount)).to.deep.equal(["7000000", "5000000", "3000000"]);
    expect(mirroredBalance(future, mirrored)).to.equal(await usdcOf(future));
    expect(await usdcOf(future)).to.equal(usdc(15));
    // A backfilled transfer is a mirrored fact, not a domain event: no XP or score for money moved before the account.
    const events = await db.prisma.domainEvent.count({ where: { data: { path: ["txHash"], equals: early!.hash } } });
    expect(events).to.equal(0);

    // The wallet spends it through the API; the mirror follows, once.
    const deposit = await postWithKey(api, "/v1/vault/deposit", user.token, { amount: 15 });
    expect(deposit.status, deposit.text).to.equal(200);
    await waitForHead(db, chain);
    const after = await transfersOf(future);
    expect(after).to.have.length(4);
    expect(mirroredBalance(future, after)).to.equal(0n);
    expect(await usdcOf(future)).to.equal(0n);
  });

  it("counts USDC sent to a social vault's predicted address before its creation: balances agree with the chain", async () => {
    const user = await newTestUser(api, "prefunded", 20);
    const predicted = ((await chain.contracts.factory.predictVault(user.wallet)) as string).toLowerCase();
    await mint(predicted, usdc(10));
    await waitForHead(db, chain);

    const created = await postWithKey(api, "/v1/social-vault", user.token, {
      dailyLimit: 100,
      timelockDuration: 3_600,
      requiredSignatures: 2,
      duressPin: "4821",
    });
    expect(created.status, created.text).to.equal(200);
    expect(created.body.data.vaultAddress).to.equal(predicted);
    const deposit = await postWithKey(api, "/v1/social-vault/deposit", user.token, { amount: 3 });
    expect(deposit.status, deposit.text).to.equal(200);
    // Before (#42): "3.00", the 10 USDC sent before the creation left out.
    expect(deposit.body.data).to.deep.include({ amount: "3.00", newBalance: "13.00" });
    const friend = (await newTestUser(api, "friend")).wallet;
    const withdrawal = await postWithKey(api, "/v1/social-vault/withdraw/instant", user.token, { amount: 10, recipient: friend });
    expect(withdrawal.status, withdrawal.text).to.equal(200);
    // Before (#42): "-7.00".
    expect(withdrawal.body.data).to.deep.include({ amount: "10.00", newBalance: "3.00" });
    expect(await usdcOf(predicted)).to.equal(usdc(3));
    const exported = await api.request("GET", "/v1/users/me/export", { token: user.token });
    expect(exported.status, exported.text).to.equal(200);
    expect(exported.body.data.socialVault.vault.balance).to.equal("3.00");
    const mirrored = await transfersOf(predicted);
    expect(mirrored.map((row) => row.amount)).to.deep.equal(["10000000", "3000000", "10000000"]);
    expect(mirroredBalance(predicted, mirrored)).to.equal(usdc(3));
  });
});
