import { expect } from "chai";
import { type Contract, ethers, type JsonRpcSigner } from "ethers";
import { ensureChainIdentity } from "../../core/chain-identity.js";
import { createLogger } from "../../core/logger.js";
import { CHAIN_DERIVED_TABLES } from "../../domain/modules.js";
import type { Services } from "../../domain/services.js";
import type { Indexer } from "../../indexer/indexer.js";
import { createPlatformJobs } from "../../worker/jobs.js";
import type { Job } from "../../worker/scheduler.js";
import { deposit, fundLoan, repay } from "../helpers/activity.js";
import { startTestApi, type TestApi } from "../helpers/api.js";
import { startTestChain, type TestChain, usdc } from "../helpers/chain.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";
import { testIndexer, waitForHead } from "../helpers/mirror.js";

const DAY_S = 86_400;
const TIMELOCK_S = 3_600;
/** Blocks mined within one second take the next seconds: the test chain runs up to a minute ahead of the service clock. */
const CHAIN_AHEAD_S = 120;

/**
 * Chain facts reaching the Trust Score and the user's records: a real chain with the platform
 * deployed, the indexer mirroring it, the API on the same database, and the worker's jobs run
 * by hand on the API's service clock (moved with /dev/time/advance, which moves the chain too).
 */
describe(`Trust Score and user records from chain facts (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(120_000);
  let chain: TestChain;
  let db: TestDatabase;
  let indexer: Indexer;
  let api: TestApi;
  let rewards: Pick<Services["rewards"], "drain">;
  let guardiansJob: Job;
  /** Tokens expire on the service clock: `advance` issues every user a fresh one. */
  const users: { subject: string; token: string }[] = [];

  /** A user whose managed wallet is the chain's signer `index`, and a token for it. */
  async function walletUser(name: string, index: number) {
    const signer = await chain.signer(index);
    const now = api.clock.now();
    const id = `user-${name}`;
    await db.prisma.user.create({
      data: { id, subject: `chain|${name}`, displayName: name, walletAddress: await signer.getAddress(), createdAt: now, updatedAt: now },
    });
    const user = { id, signer, subject: `chain|${name}`, token: await api.token(`chain|${name}`) };
    users.push(user);
    return user;
  }

  /** Waits for the mirror to reach the chain head, then applies the new chain facts. */
  async function settle() {
    await waitForHead(db, chain);
    await rewards.drain(api.clock.now());
  }

  async function advance(seconds: number) {
    const response = await api.request("POST", "/dev/time/advance", { body: { seconds } });
    expect(response.status, response.text).to.equal(200);
    for (const user of users) user.token = await api.token(user.subject);
  }

  const send = async (call: Promise<{ wait(): Promise<unknown> }>) => (await call).wait();
  const loanBook = (runner: JsonRpcSigner) => chain.contracts.loanBook.connect(runner) as Contract;
  const inputs = (userId: string) => db.prisma.trustScoreInput.findUniqueOrThrow({ where: { userId } });
  const score = async (token: string, userId: string) => {
    const response = await api.request("GET", `/v1/trust-score/${userId}`, { token });
    expect(response.status, response.text).to.equal(200);
    return response.body.data;
  };
  const modifiers = async (token: string, userId: string) => {
    const response = await api.request("GET", `/v1/trust-score/${userId}/modifiers`, { token });
    expect(response.status, response.text).to.equal(200);
    return response.body.data;
  };

  before(async () => {
    chain = await startTestChain();
    db = await createTestDatabase();
    await ensureChainIdentity(db, chain.deployment, { embedded: true, logger: createLogger("silent"), chainTables: CHAIN_DERIVED_TABLES });
    indexer = testIndexer(db, chain);
    indexer.start();
    api = await startTestApi({ chain, db });
    const jobs = createPlatformJobs({ services: api.services });
    rewards = api.services.rewards;
    guardiansJob = jobs.find((job) => job.name === "trust-score.guardians")!;
  });

  after(async () => {
    await api?.close();
    await indexer?.stop();
    await db?.destroy();
    await chain?.close();
  });

  it("an on-time repayment adds a repayment, its volume and an on_time_bonus, once", async () => {
    const alice = await walletUser("alice", 5);
    await deposit(chain, alice.signer, usdc(10_000));
    const loanUuid = crypto.randomUUID();
    const loanId = await fundLoan(chain, alice.signer, loanUuid, usdc(100), usdc(5));
    await repay(chain, alice.signer, loanId, usdc(110));
    await settle();
    await rewards.drain(api.clock.now()); // a repeated run applies nothing twice

    const loan = await db.prisma.loanChainState.findFirstOrThrow({ where: { loanId } });
    expect(loan.status).to.equal("repaid");
    const row = await inputs(alice.id);
    expect(row.onTimeRepayments).to.equal(1);
    // The volume is held money (D-88): the 10,000 held in the vault; the repaid loan adds none.
    expect(row.peakHeldMicro).to.equal(usdc(10_000));
    expect(row.totalVolumeMicro).to.equal(0n);

    // Volume floor(4 * log10(1 + 10,000)) = 16, two points for the repayment; the bonus is 1 % of 18, which rounds to 0.
    const data = await score(alice.token, alice.id);
    expect(data.breakdown).to.deep.equal({ seniority: 0, repaymentHistory: 2, transactionVolume: 16, socialNetwork: 0, levelBonus: 0 });
    expect(data.score).to.equal(18);
    const mods = await modifiers(alice.token, alice.id);
    expect(mods).to.deep.include({ baseScore: 18, finalScore: 18 });
    expect(mods.modifiers).to.have.length(1);
    expect(mods.modifiers[0]).to.deep.include({ type: "on_time_bonus", impact: 0, reason: "on-time repayment", expiresAt: null });

    const me = (await api.request("GET", "/v1/users/me", { token: alice.token })).body.data;
    expect(me.xp).to.equal(70); // deposit 20 + repaid loan 50

    const exported = await api.request("GET", "/v1/users/me/export", { token: alice.token });
    expect(exported.status, exported.text).to.equal(200);
    expect(exported.body.data.loans).to.have.length(1);
    expect(exported.body.data.loans[0]).to.deep.include({
      id: loanUuid,
      status: "repaid",
      amount: 100,
      netAmount: 99,
      insuranceFee: 1,
      duration: 30,
      remainingBalance: 0,
      amountPaid: Number(loan.totalPaid) / 1e6,
      txHash: loan.fundTxHash,
    });
    expect(exported.body.data.vaultHistory).to.have.length(1);
    expect(exported.body.data.vaultHistory[0]).to.deep.include({
      type: "deposit",
      usdcAmount: "10000.00",
      tmUSDCAmount: "10000.00",
      exchangeRate: 1,
    });
    expect(exported.body.data.vaultHistory[0].txHash).to.match(/^0x[0-9a-f]{64}$/);
  });

  it("a loan marked overdue costs a late_payment, its default a default, applied in order on the running score", async () => {
    const bob = await walletUser("bob", 6);
    await deposit(chain, bob.signer, usdc(10_000));
    const loanId = await fundLoan(chain, bob.signer, crypto.randomUUID(), usdc(100), usdc(5));
    await settle();
    expect((await score(bob.token, bob.id)).score).to.equal(16);

    await advance(31 * DAY_S); // past the 30-day due date; also one month of seniority
    await send(loanBook(bob.signer).getFunction("markOverdue")(loanId));
    await settle();
    let mods = await modifiers(bob.token, bob.id);
    // Base: seniority 1 + volume 16 = 17; late payment -5 % of 17 = 0.85, rounded to 1.
    expect(mods).to.deep.include({ baseScore: 17, finalScore: 16 });
    expect(mods.modifiers.map((m: { type: string; impact: number }) => [m.type, m.impact])).to.deep.equal([["late_payment", -1]]);

    await advance(8 * DAY_S); // past the 7-day grace period
    await send(loanBook(bob.signer).getFunction("markDefaulted")(loanId));
    await settle();
    mods = await modifiers(bob.token, bob.id);
    // Default -30 % of 16 = 4.8, rounded to 5.
    expect(mods).to.deep.include({ baseScore: 17, finalScore: 11 });
    expect(mods.modifiers.map((m: { type: string; impact: number }) => [m.type, m.impact])).to.deep.equal([
      ["late_payment", -1],
      ["default", -5],
    ]);
    expect((await score(bob.token, bob.id)).score).to.equal(11);
    expect((await inputs(bob.id)).onTimeRepayments).to.equal(0);

    const history = await api.request("GET", `/v1/trust-score/${bob.id}/history?period=all`, { token: bob.token });
    expect(history.body.data.history.map((h: { reason: string }) => h.reason)).to.include("loan defaulted");
    const updates = await db.prisma.domainEvent.findMany({
      where: { userId: bob.id, type: "trust_score.updated" },
      orderBy: { createdAt: "asc" },
    });
    expect(updates.at(-1)!.data).to.deep.include({ previousScore: 16, newScore: 11, change: -5, reason: "loan defaulted" });
  });

  it("a repayment after the due date is late, not on time, even when nobody marked the loan overdue", async () => {
    const carol = await walletUser("carol", 7);
    await deposit(chain, carol.signer, usdc(1_000));
    const loanId = await fundLoan(chain, carol.signer, crypto.randomUUID(), usdc(100), usdc(5));
    await advance(31 * DAY_S);
    await repay(chain, carol.signer, loanId, usdc(200));
    await settle();
    const loan = await db.prisma.loanChainState.findFirstOrThrow({ where: { loanId } });
    expect(loan.status).to.equal("repaid");
    const row = await inputs(carol.id);
    expect(row.onTimeRepayments).to.equal(0);
    // A late repayment adds no volume; what she held in the vault does.
    expect(row.totalVolumeMicro).to.equal(0n);
    expect(row.peakHeldMicro).to.equal(usdc(1_000));
    // Nor XP: the repayment shows in her activity with none.
    const repaid = await db.prisma.activity.findMany({ where: { userId: carol.id, type: "loan_repaid" } });
    expect(repaid.map((entry) => entry.xpEarned)).to.deep.equal([0]);
    const mods = await modifiers(carol.token, carol.id);
    expect(mods.modifiers.map((m: { type: string; reason: string }) => [m.type, m.reason])).to.deep.equal([
      ["late_payment", "late repayment"],
    ]);
  });

  it("guardians count once active and only as vouchers of standing, leave on removal, and are listed for their owner", async () => {
    const dave = await walletUser("dave", 8);
    const erin = await walletUser("erin", 9);
    // Erin vouches with standing (D-88): an account over 30 days old with a score of at least 31.
    await db.prisma.user.update({
      where: { id: erin.id },
      data: { createdAt: new Date(api.clock.now().getTime() - 40 * DAY_S * 1_000), trustScore: 45 },
    });
    const outsider = ethers.Wallet.createRandom().address;
    await send(
      (chain.contracts.factory.connect(dave.signer) as Contract).getFunction("createVault")(usdc(100), TIMELOCK_S, 1, ethers.id("pin")),
    );
    const vaultAddress = (await chain.contracts.factory.getFunction("vaultOf")(await dave.signer.getAddress())) as string;
    const vault = chain.at(["social/SocialVault.sol", "SocialVault"], vaultAddress, dave.signer);
    const erinAdded = (await send(vault.getFunction("addGuardian")(await erin.signer.getAddress()))) as { blockNumber: number };
    await send(vault.getFunction("addGuardian")(outsider));
    await settle();

    // Added, but pending until the timelock has passed: no social points yet.
    expect((await db.prisma.trustScoreInput.findUnique({ where: { userId: dave.id } }))?.activeGuardians ?? 0).to.equal(0);
    let listed = await api.request("GET", "/v1/users/me/guardians", { token: dave.token });
    expect(listed.status, listed.text).to.equal(200);
    expect(listed.body.data.map((g: { id: string; status: string }) => [g.id, g.status])).to.have.deep.members([
      [erin.id, "pending"],
      [outsider.toLowerCase(), "pending"],
    ]);
    const erinEntry = listed.body.data.find((g: { id: string }) => g.id === erin.id);
    expect(erinEntry).to.deep.include({ displayName: "erin", walletAddress: await erin.signer.getAddress() });
    // When the chain added her: her GuardianAdded block's time.
    const addedBlock = await chain.provider.getBlock(erinAdded.blockNumber);
    expect(erinEntry.addedAt).to.equal(new Date(addedBlock!.timestamp * 1000).toISOString());
    // Guardians earn XP once a day (D-88): the second guardian of the day shows with none.
    expect((await api.request("GET", "/v1/users/me", { token: dave.token })).body.data.xp).to.equal(30);
    const added = await db.prisma.activity.findMany({ where: { userId: dave.id, type: "guardian_added" }, orderBy: { xpEarned: "desc" } });
    expect(added.map((entry) => entry.xpEarned)).to.deep.equal([30, 0]);
    // Erin guards Dave's vault; she owns none, so her own list is empty.
    expect((await api.request("GET", "/v1/users/me/guardians", { token: erin.token })).body.data).to.deep.equal([]);

    await advance(TIMELOCK_S + CHAIN_AHEAD_S);
    expect(await guardiansJob.run(api.clock.now())).to.deep.equal({ changed: 1 });
    expect(await guardiansJob.run(api.clock.now())).to.deep.equal({ changed: 0 });
    // Both are active guardians of the vault; only Erin vouches for Dave's score.
    expect((await inputs(dave.id)).activeGuardians).to.equal(1);
    expect((await score(dave.token, dave.id)).breakdown.socialNetwork).to.equal(5);
    listed = await api.request("GET", "/v1/users/me/guardians", { token: dave.token });
    expect(listed.body.data.map((g: { status: string }) => g.status)).to.deep.equal(["active", "active"]);

    // A voucher whose own score falls below Building's vouches no more, and again once it is back.
    await db.prisma.user.update({ where: { id: erin.id }, data: { trustScore: 30 } });
    expect(await guardiansJob.run(api.clock.now())).to.deep.equal({ changed: 1 });
    expect((await score(dave.token, dave.id)).breakdown.socialNetwork).to.equal(0);
    await db.prisma.user.update({ where: { id: erin.id }, data: { trustScore: 45 } });
    expect(await guardiansJob.run(api.clock.now())).to.deep.equal({ changed: 1 });
    expect((await score(dave.token, dave.id)).breakdown.socialNetwork).to.equal(5);

    // Removing an active guardian waits for the timelock; it counts until the removal is accepted.
    const erinWallet = await erin.signer.getAddress();
    await send(vault.getFunction("removeGuardian")(erinWallet));
    await advance(TIMELOCK_S + CHAIN_AHEAD_S);
    await waitForHead(db, chain);
    expect(await guardiansJob.run(api.clock.now())).to.deep.equal({ changed: 0 });
    await send(vault.getFunction("acceptGuardianRemoval")(erinWallet));
    await waitForHead(db, chain);
    expect(await guardiansJob.run(api.clock.now())).to.deep.equal({ changed: 1 });
    expect((await inputs(dave.id)).activeGuardians).to.equal(0);
    expect((await score(dave.token, dave.id)).breakdown.socialNetwork).to.equal(0);
    const history = await db.prisma.trustScoreHistory.findMany({ where: { userId: dave.id }, orderBy: { day: "asc" } });
    expect(history.at(-1)!.reason).to.equal("guardian removed");

    const exported = (await api.request("GET", "/v1/users/me/export", { token: dave.token })).body.data;
    expect(exported.guardians.map((g: { id: string }) => g.id)).to.deep.equal([outsider.toLowerCase()]);
  });
});
