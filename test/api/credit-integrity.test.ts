// Credit that cannot be gamed (#41, D-88): each farming path a red team tried against the Trust
// Score, XP and purchase loans, over real HTTP on a real chain with the worker's jobs running, and
// the bound the issue sets: a new account with 100 USDC of its own, alone or with two colluding
// accounts, stays in tier New through its first day and at most 50 through its first 7 days.
import { randomUUID } from "node:crypto";
import { expect } from "chai";
import { Wallet } from "ethers";
import { createLogger } from "../../core/logger.js";
import { startPlatformWorkers } from "../../worker/jobs.js";
import type { Workers } from "../../worker/scheduler.js";
import type { TestApi } from "../helpers/api.js";
import type { TestChain } from "../helpers/chain.js";
import { type TestDatabase, usingPostgres } from "../helpers/database.js";
import { expectErrorEnvelope } from "../helpers/envelope.js";
import { waitFor, waitForHead } from "../helpers/mirror.js";
import { type MoneyStack, newTestUser, postWithKey, startMoneyStack } from "../helpers/money-stack.js";

const DAY_S = 86_400;
type User = Awaited<ReturnType<typeof newTestUser>>;

describe(`credit that cannot be gamed (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(300_000);
  let stack: MoneyStack | undefined;
  let chain: TestChain;
  let db: TestDatabase;
  let api: TestApi;
  let workers: Workers;
  /** Tokens expire on the service clock: `advance` gives every user a fresh one. */
  const users: User[] = [];

  before(async () => {
    stack = await startMoneyStack();
    ({ chain, db, api } = stack);
    workers = startPlatformWorkers({ services: api.services, clock: api.clock, logger: createLogger("silent"), tickMs: 100 });
    // The pool's liquidity: a depositor's 3,000 USDC in the staking vault.
    const depositor = await user("depositor", 3_000);
    expect((await postWithKey(api, "/v1/vault/deposit", depositor.token, { amount: 3_000 })).status).to.equal(200);
  });
  after(async () => {
    await workers?.stop();
    await stack?.close();
  });

  async function user(prefix: string, funds = 0) {
    const created = await newTestUser(api, prefix, funds);
    users.push(created);
    return created;
  }
  async function advance(seconds: number) {
    const moved = await api.request("POST", "/dev/time/advance", { body: { seconds } });
    expect(moved.status, moved.text).to.equal(200);
    for (const one of users) one.token = await api.token(one.subject, { expiresIn: 86_400 * 30 });
  }
  /**
   * The mirror at the chain's head, and every chain fact's XP and Trust Score inputs applied. The
   * worker may have applied one just before: its commit is followed by its drop of the cached user
   * row, which a read right after the drain could come before (D-27's cache), so the drop is done here.
   */
  async function settle(...ofUsers: User[]) {
    await waitForHead(db, chain);
    await api.services.rewards.drain(api.clock.now());
    for (const one of ofUsers) api.services.invalidateUser(one.id);
  }
  async function scoreOf(one: User): Promise<{ score: number; breakdown: Record<string, number> }> {
    await settle(one);
    const answer = await api.request("GET", `/v1/trust-score/${one.id}`, { token: one.token });
    expect(answer.status, answer.text).to.equal(200);
    return answer.body.data;
  }
  const xpOf = async (one: User): Promise<number> => {
    await settle(one);
    return (await api.request("GET", "/v1/users/me", { token: one.token })).body.data.xp;
  };
  const ok = async (method: string, path: string, token: string, body?: unknown) => {
    const answer = method === "POST" ? await postWithKey(api, path, token, body ?? {}) : await api.request(method, path, { token, body });
    expect(answer.status, `${method} ${path}: ${answer.text}`).to.be.oneOf([200, 201]);
    return answer.body.data;
  };
  const usdcOf = async (one: User) => Number((await chain.contracts.usdc.balanceOf(one.wallet)) as bigint) / 1e6;
  const payment = (merchant: User, amount: number, paymentMethods: string[]) =>
    ok("POST", "/v1/payments", merchant.token, { amount, paymentMethods, description: "farming", metadata: { order: randomUUID() } });
  const pay = (payer: User, id: string, method: string, payerAddress?: string) =>
    api.request("POST", `/checkout/${id}/pay`, { token: payer.token, body: { method, ...(payerAddress && { payerAddress }) } });
  /** Deposits all of the user's USDC, then withdraws all of its tmUSDC. */
  async function depositWithdrawCycle(one: User) {
    await ok("POST", "/v1/vault/deposit", one.token, { amount: await usdcOf(one) });
    const { tmUSDCBalance } = await ok("GET", "/v1/vault/position", one.token);
    await ok("POST", "/v1/vault/withdraw", one.token, { tmUSDCAmount: Number(tmUSDCBalance) });
  }
  /** A P2P loan asked for, funded by the sandbox at once, and repaid in full: the repayment's answer. */
  async function borrowAndRepay(one: User, amount = 20) {
    const loan = await ok("POST", "/v1/loans", one.token, { amount, duration: 7 });
    await ok("POST", `/dev/loans/${loan.id}/fund`, one.token);
    const { remainingBalance } = await ok("GET", `/v1/loans/${loan.id}`, one.token);
    return ok("POST", `/v1/loans/${loan.id}/repay`, one.token, { amount: remainingBalance });
  }

  it("deposit-everything / withdraw-everything cycles earn one day's XP and count the money once", async () => {
    const saver = await user("cycler", 100);
    for (let i = 0; i < 8; i++) await depositWithdrawCycle(saver);
    // Before: 8 x (20 + 5) = 200 XP (level Explorer) and 800 USDC of volume (11 points). Now one
    // deposit and one withdrawal earn XP a day, and the volume is the most held at once: 100 USDC.
    expect(await xpOf(saver)).to.equal(25);
    const activity = (await ok("GET", "/v1/users/me/activity?limit=50", saver.token)) as { type: string; xpEarned: number }[];
    expect(activity.filter((entry) => entry.type === "vault_deposit")).to.have.length(8);
    expect(activity.filter((entry) => entry.xpEarned > 0).map((entry) => entry.type)).to.have.members(["vault_deposit", "vault_withdraw"]);
    expect((await db.prisma.trustScoreInput.findUniqueOrThrow({ where: { userId: saver.id } })).peakHeldMicro).to.equal(100_000_000n);
    expect((await scoreOf(saver)).breakdown).to.deep.include({ transactionVolume: 8, levelBonus: 0 });
    // The next day's first cycle earns that day's XP; more held money raises the volume.
    await advance(DAY_S);
    await ok("POST", "/dev/faucet", saver.token, { amount: 900 });
    await depositWithdrawCycle(saver);
    expect(await xpOf(saver)).to.equal(50);
    expect((await scoreOf(saver)).breakdown.transactionVolume).to.equal(12);
  });

  it("refuses a merchant paying its own payment, by any method or from its own wallet", async () => {
    const merchant = await user("self-merchant", 30);
    const own = await payment(merchant, 20, ["direct", "credit", "split"]);
    for (const method of ["direct", "credit", "split"]) {
      const answer = await pay(merchant, own.id, method);
      expectErrorEnvelope(answer, 403, "SELF_PAYMENT");
    }
    // Another account naming the merchant's wallet as the payer's address is refused the same way.
    const other = await user("self-merchant-friend");
    expectErrorEnvelope(await pay(other, own.id, "direct", merchant.wallet), 403, "SELF_PAYMENT");
    expect((await ok("GET", "/v1/loans", merchant.token)) as unknown[]).to.deep.equal([]);
    expect((await ok("GET", `/v1/payments/${own.id}`, merchant.token)).status).to.equal("pending");
  });

  it("borrowing and repaying in a loop: +2 and 50 XP at once for the first, nothing more until 7 days on", async () => {
    const borrower = await user("looper", 30);
    const projected = await ok("POST", "/v1/trust-score/simulate", borrower.token, { actions: [{ type: "repayment", count: 1 }] });
    const first = await borrowAndRepay(borrower);
    expect(first).to.deep.include({ status: "repaid", trustScoreChange: 2, xpEarned: 50 });
    // The simulation said what really happened.
    expect((await scoreOf(borrower)).score).to.equal(projected.projectedScore);
    for (let i = 0; i < 3; i++) {
      const again = await borrowAndRepay(borrower);
      expect(again).to.deep.include({ status: "repaid", trustScoreChange: 0, xpEarned: 0 });
    }
    expect((await scoreOf(borrower)).breakdown.repaymentHistory).to.equal(2);
    await advance(7 * DAY_S);
    const weekLater = await borrowAndRepay(borrower);
    // +2 for the repayment, +2 for the level its 100 XP reach (Explorer).
    expect(weekLater).to.deep.include({ trustScoreChange: 4, xpEarned: 50 });
    expect((await scoreOf(borrower)).breakdown).to.deep.include({ repaymentHistory: 4, levelBonus: 2 });
  });

  it("pay and refund with a colluding merchant: money back through a refund earns no score, XP or bonus", async () => {
    const merchant = await user("refunding-merchant", 50);
    const payer = await user("refunded-payer", 10);
    for (let round = 0; round < 3; round++) {
      const bought = await payment(merchant, 15, ["credit"]);
      const paid = await pay(payer, bought.id, "credit");
      expect(paid.status, paid.text).to.equal(200);
      // Most of it refunded (the router repays the payer's loan with it); the payer closes the rest on time.
      const refunded = await postWithKey(api, `/v1/payments/${bought.id}/refunds`, merchant.token, { amount: 14, reason: "returned" });
      expect(refunded.status, refunded.text).to.equal(201);
      const loanId = paid.body.data.loans[0].loanId;
      const { remainingBalance } = await ok("GET", `/v1/loans/${loanId}`, payer.token);
      const closed = await ok("POST", `/v1/loans/${loanId}/repay`, payer.token, { amount: remainingBalance });
      expect(closed).to.deep.include({ status: "repaid", trustScoreChange: 0, xpEarned: 0 });
    }
    const { score, breakdown } = await scoreOf(payer);
    expect(breakdown.repaymentHistory).to.equal(0);
    expect(score).to.equal(0);
    expect(await xpOf(payer)).to.equal(0);
    expect(await db.prisma.trustScoreModifier.count({ where: { userId: payer.id, type: "on_time_bonus" } })).to.equal(0);
  });

  it("pay, repay, then refund: the refund gives the payer's money back and takes the repayment's credit back", async () => {
    const merchant = await user("late-refunding-merchant", 50);
    const payer = await user("repaid-then-refunded", 20);
    const bought = await payment(merchant, 15, ["credit"]);
    const paid = await pay(payer, bought.id, "credit");
    expect(paid.status, paid.text).to.equal(200);
    const loanId = paid.body.data.loans[0].loanId;
    const { remainingBalance } = await ok("GET", `/v1/loans/${loanId}`, payer.token);
    const repaid = await ok("POST", `/v1/loans/${loanId}/repay`, payer.token, { amount: remainingBalance });
    expect(repaid).to.deep.include({ status: "repaid", trustScoreChange: 2 });
    const refunded = await postWithKey(api, `/v1/payments/${bought.id}/refunds`, merchant.token, { amount: 15, reason: "returned" });
    expect(refunded.status, refunded.text).to.equal(201);
    // The payer has its money back but for the insurance fee its terms added and that part's interest (D-127): 17.15
    // repaid, 15 + 0.75 returned. No repayment to show for it: the refund's event reaches the Trust Score's consumer on
    // the job queue, after the answer.
    expect(await usdcOf(payer)).to.equal(18.6);
    await waitFor(async () => (await scoreOf(payer)).breakdown.repaymentHistory === 0, 20_000, "the repayment's credit taken back");
    expect(await db.prisma.trustScoreModifier.count({ where: { userId: payer.id, type: "on_time_bonus" } })).to.equal(0);
  });

  it("guardians that vouch for nothing (arbitrary addresses, new accounts) add no points", async () => {
    const owner = await user("vouched", 10);
    const friend = await user("new-friend");
    // XP counts one guardian a UTC day: start just after a midnight of the service clock, so that
    // the hour this test moves on stays within one day whatever the time it runs at.
    const intoDay = Math.floor(api.clock.now().getTime() / 1_000) % DAY_S;
    await advance(DAY_S - intoDay + 60);
    await ok("POST", "/v1/social-vault", owner.token, {
      dailyLimit: 100,
      timelockDuration: 3600,
      requiredSignatures: 1,
      duressPin: "4821",
    });
    for (const walletAddress of [friend.wallet, Wallet.createRandom().address, Wallet.createRandom().address]) {
      await ok("POST", "/v1/social-vault/guardians", owner.token, { walletAddress });
    }
    await advance(3_700);
    await api.services.trust.syncActiveGuardians(api.clock.now());
    const guardians = (await ok("GET", "/v1/social-vault/guardians", owner.token)) as { status: string }[];
    expect(guardians.map((guardian) => guardian.status)).to.deep.equal(["active", "active", "active"]);
    expect((await scoreOf(owner)).breakdown.socialNetwork).to.equal(0);
    // One guardian's XP a day.
    expect(await xpOf(owner)).to.equal(30);
  });

  it("bound: a new account with 100 USDC and two colluding accounts stays New through day 1 and at most 50 through day 7", async () => {
    const attacker = await user("attacker", 100);
    const merchant = await user("colluding-merchant", 100);
    const voucher = await user("colluding-voucher");
    const scores: number[] = [];
    const check = async (limit: number) => {
      const { score } = await scoreOf(attacker);
      scores.push(score);
      expect(score, `day ${scores.length}: ${scores.join(", ")}`).to.be.at.most(limit);
    };
    // Its colluders and some addresses guard its social vault (day 0, active after the timelock).
    await ok("POST", "/v1/social-vault", attacker.token, {
      dailyLimit: 100,
      timelockDuration: 3600,
      requiredSignatures: 1,
      duressPin: "4821",
    });
    for (const walletAddress of [merchant.wallet, voucher.wallet, Wallet.createRandom().address]) {
      await ok("POST", "/v1/social-vault/guardians", attacker.token, { walletAddress });
    }
    for (let day = 0; day < 7; day++) {
      // The pool's loans, borrowed and repaid at once, twice.
      for (let i = 0; i < 2; i++) await borrowAndRepay(attacker);
      // A purchase on credit from the colluding merchant, who sends the money back by paying the
      // attacker's own payment; the attacker repays the loan with it.
      const bought = await payment(merchant, 18, ["credit"]); // a 19.60 loan (D-127), within New's 20
      const paid = await pay(attacker, bought.id, "credit");
      expect(paid.status, paid.text).to.equal(200);
      const back = await payment(attacker, 17.6, ["direct"]);
      expect((await pay(merchant, back.id, "direct")).status).to.equal(200);
      const loanId = paid.body.data.loans[0].loanId;
      const { remainingBalance } = await ok("GET", `/v1/loans/${loanId}`, attacker.token);
      await ok("POST", `/v1/loans/${loanId}/repay`, attacker.token, { amount: remainingBalance });
      // Everything it holds through the vault and back, three times.
      for (let i = 0; i < 3; i++) await depositWithdrawCycle(attacker);
      await check(day === 0 ? 30 : 50);
      await advance(DAY_S - 60);
      await api.services.trust.syncActiveGuardians(api.clock.now());
      await check(day === 0 ? 30 : 50);
      await advance(60);
    }
    // Through the week it stayed in tier New: two repayments a week apart counted, nothing else did.
    expect((await db.prisma.trustScoreInput.findUniqueOrThrow({ where: { userId: attacker.id } })).onTimeRepayments).to.equal(1);
    expect(Math.max(...scores)).to.be.at.most(30);
  });
});
