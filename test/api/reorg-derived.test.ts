// What a chain fact gave follows the chain (#42 item 4, D-94): when a reorganisation removes a
// deposit or a repayment for good, its XP, activity, level, badges and Trust Score inputs are
// taken back, and the history says why; when the fact comes back, they are given again, once.
// The worker's jobs are stopped so that the test drives each step: the outbox's consumers are
// drained and the relay restores at the moments the test chooses.
import { expect } from "chai";
import type { TestApi } from "../helpers/api.js";
import type { TestChain } from "../helpers/chain.js";
import { type TestDatabase, usingPostgres } from "../helpers/database.js";
import { waitForHead } from "../helpers/mirror.js";
import { type MoneyStack, newTestUser, postWithKey, startMoneyStack } from "../helpers/money-stack.js";

type User = Awaited<ReturnType<typeof newTestUser>>;

describe(`what a removed fact gave follows the chain (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(180_000);
  let stack: MoneyStack | undefined;
  let chain: TestChain;
  let db: TestDatabase;
  let api: TestApi;

  before(async () => {
    stack = await startMoneyStack();
    ({ chain, db, api } = stack);
    // The pool's liquidity, for the loans.
    const depositor = await newTestUser(api, "depositor", 500);
    expect((await postWithKey(api, "/v1/vault/deposit", depositor.token, { amount: 500 })).status).to.equal(200);
  });
  after(async () => stack?.close());

  /** The mirror at the head, and every consumer of the outbox drained, as the worker would. */
  async function settle(...users: User[]) {
    await waitForHead(db, chain);
    const { outbox, outboxConsumers } = api.services;
    for (const consumer of outboxConsumers) await outbox.drain(consumer, api.clock.now());
    for (const user of users) api.services.invalidateUser(user.id);
  }
  const ok = async (method: string, path: string, token: string, body?: unknown) => {
    const answer = method === "POST" ? await postWithKey(api, path, token, body ?? {}) : await api.request(method, path, { token, body });
    expect(answer.status, `${method} ${path}: ${answer.text}`).to.be.oneOf([200, 201]);
    return answer.body.data;
  };
  /** What the user sees of their standing. */
  async function standing(user: User) {
    await settle(user);
    const me = await ok("GET", "/v1/users/me", user.token);
    const score = await ok("GET", `/v1/trust-score/${user.id}`, user.token);
    const xp = await ok("GET", `/v1/users/${user.id}/xp`, user.token);
    const activity = (await ok("GET", "/v1/users/me/activity?limit=50", user.token)) as { type: string; xpEarned: number }[];
    return {
      xp: me.xp as number,
      level: xp.level as string,
      badges: (xp.badges as { id: string }[]).map((badge) => badge.id),
      score: score.score as number,
      breakdown: score.breakdown as Record<string, number>,
      activity: activity.map((entry) => `${entry.type}:${entry.xpEarned}`),
    };
  }
  /** Removes every block since `fork` for good: the new branch is an hour later, past the removed requests' deadlines. */
  async function reorganiseForGood(fork: string) {
    await chain.revert(fork);
    await chain.provider.send("evm_increaseTime", [3_700]);
    await chain.mine(1);
    await waitForHead(db, chain);
    // The relay broadcasts them again: the permit reverts and the forwarder skips the request.
    expect(await api.services.relay!.restore()).to.be.above(0);
  }

  it("takes back a removed deposit's XP, activity, badge and volume, and the score's history says why", async () => {
    const user = await newTestUser(api, "undone", 50);
    const before = await standing(user);
    const fork = await chain.snapshot();
    await ok("POST", "/v1/vault/deposit", user.token, { amount: 20 });
    const deposited = await standing(user);
    expect(deposited.xp).to.equal(20);
    expect(deposited.badges).to.include("first_deposit");
    expect(deposited.activity).to.include("vault_deposit:20");
    expect(deposited.breakdown.transactionVolume).to.be.above(0);

    await reorganiseForGood(fork);
    expect((await chain.contracts.vault.balanceOf(user.wallet)) as bigint, "the chain holds no deposit").to.equal(0n);
    // Before (#42): XP 20, the badge, the activity entry and the volume stayed.
    expect(await standing(user)).to.deep.equal(before);
    expect((await db.prisma.trustScoreInput.findUnique({ where: { userId: user.id } }))?.peakHeldMicro ?? 0n).to.equal(0n);
    const reasons = (await db.prisma.domainEvent.findMany({ where: { userId: user.id, type: "trust_score.updated" } })).map(
      (event) => (event.data as { reason: string; change: number }).reason,
    );
    expect(reasons).to.include("chain reorganisation");

    // The user deposits again: the day's XP and the badge are earned again.
    await ok("POST", "/v1/vault/deposit", user.token, { amount: 20 });
    expect(await standing(user)).to.deep.include({ xp: 20, badges: ["first_deposit"] });
  });

  it("gives a deposit's XP and badge again, once, when the removed deposit comes back after they were taken back", async () => {
    const user = await newTestUser(api, "redone", 50);
    const fork = await chain.snapshot();
    await ok("POST", "/v1/vault/deposit", user.token, { amount: 20 });
    const deposited = await standing(user);
    await chain.revert(fork);
    await chain.mine(3);
    // Taken back while the deposit is gone...
    expect(await standing(user)).to.deep.include({ xp: 0, badges: [], activity: [] });
    // ...and given again, once, when the relay brings the same transaction back.
    await api.services.relay!.restore();
    expect(await standing(user)).to.deep.equal(deposited);
    expect(await standing(user)).to.deep.equal(deposited);
  });

  it("takes back a removed on-time repayment's +2, bonus and XP; the loan is active again and its next repayment counts", async () => {
    const borrower = await newTestUser(api, "repaid-undone", 30);
    const loan = await ok("POST", "/v1/loans", borrower.token, { amount: 20, duration: 7 });
    await ok("POST", `/dev/loans/${loan.id}/fund`, borrower.token);
    const before = await standing(borrower);
    const { remainingBalance } = await ok("GET", `/v1/loans/${loan.id}`, borrower.token);
    const fork = await chain.snapshot();
    const repaid = await ok("POST", `/v1/loans/${loan.id}/repay`, borrower.token, { amount: remainingBalance });
    expect(repaid).to.deep.include({ status: "repaid", trustScoreChange: 2, xpEarned: 50 });
    expect((await standing(borrower)).breakdown.repaymentHistory).to.equal(2);
    const feed = async () =>
      (
        (await ok("GET", "/v1/notifications?limit=50", borrower.token)) as { id: string; type: string; data: Record<string, unknown> }[]
      ).filter((row) => row.type === "loan_repaid" || row.type === "transaction_reverted");
    const [announced] = await feed();
    expect(announced?.type).to.equal("loan_repaid");

    await reorganiseForGood(fork);
    // Before (#42): the +2, its on_time_bonus and the 50 XP stayed for a repayment the chain does not hold.
    expect(await standing(borrower)).to.deep.equal(before);
    expect((await ok("GET", `/v1/loans/${loan.id}`, borrower.token)).status).to.equal("active");
    expect(await db.prisma.trustScoreModifier.count({ where: { userId: borrower.id, type: "on_time_bonus" } })).to.equal(0);

    // The repayment's notification is corrected, not deleted. Before (#42): no correction.
    const corrected = await feed();
    expect(corrected.map((row) => row.type)).to.deep.equal(["transaction_reverted", "loan_repaid"]);
    expect(corrected[0]!.data).to.deep.include({ notificationId: announced!.id, revertedType: "loan_repaid", loanId: loan.id });

    // Repaid again (on time, the same day): it counts, as the first one did, and is announced again.
    const again = await ok("POST", `/v1/loans/${loan.id}/repay`, borrower.token, { amount: remainingBalance });
    expect(again).to.deep.include({ status: "repaid", trustScoreChange: 2, xpEarned: 50 });
    expect((await standing(borrower)).breakdown.repaymentHistory).to.equal(2);
    expect((await feed()).map((row) => row.type)).to.deep.equal(["loan_repaid", "transaction_reverted", "loan_repaid"]);
  });

  it("puts a loan whose funding was removed back to pending: cancellable, funded anew by the sandbox (or the job), never stuck", async () => {
    const borrower = await newTestUser(api, "unfunded", 5);
    // Established, so that it may hold the second loan below beside the first (tier New holds one: D-122).
    await db.prisma.user.update({ where: { id: borrower.id }, data: { trustScore: 55 } });
    api.services.invalidateUser(borrower.id);
    const loan = await ok("POST", "/v1/loans", borrower.token, { amount: 20, duration: 7 });
    const fork = await chain.snapshot();
    const funded = await ok("POST", `/dev/loans/${loan.id}/fund`, borrower.token);
    expect(funded.status).to.equal("active");
    const fundingOf = async (id: string) => (await db.prisma.loanRequest.findUniqueOrThrow({ where: { id } })).fundTxHash;
    const firstFunding = await fundingOf(loan.id);
    await settle(borrower);
    /** A new branch from `at` where the pool is paused before the funding is broadcast again, so it reverts there; `then` runs while paused. */
    const removeFunding = async (at: string, then: () => Promise<void> = async () => {}) => {
      await chain.revert(at);
      await (await chain.contracts.vault.getFunction("pause")()).wait();
      try {
        await chain.mine(2);
        await waitForHead(db, chain);
        await api.services.relay!.restore();
        await settle(borrower);
        await then();
      } finally {
        await (await chain.contracts.vault.connect(await chain.asTimelock()).getFunction("unpause")()).wait();
      }
    };
    await removeFunding(fork, async () => {
      // Before (#42): pending for ever, counted in currentLoans; the sandbox's fund answered 200 pending and did nothing.
      const detail = await ok("GET", `/v1/loans/${loan.id}`, borrower.token);
      expect(detail.status).to.equal("pending");
      const refused = await postWithKey(api, `/dev/loans/${loan.id}/fund`, borrower.token, {});
      expect(refused.status, refused.text).to.equal(400);
      expect(refused.body.error.code).to.equal("INSUFFICIENT_LIQUIDITY");
    });
    const again = await ok("POST", `/dev/loans/${loan.id}/fund`, borrower.token);
    expect(again.status).to.equal("active");
    expect(await fundingOf(loan.id), "a new funding")
      .to.match(/^0x/)
      .and.not.equal(firstFunding);
    expect((await chain.contracts.usdc.balanceOf(borrower.wallet)) as bigint).to.be.above(5_000_000n);
    // A second request, its funding removed the same way, is the borrower's to cancel.
    const other = await ok("POST", "/v1/loans", borrower.token, { amount: 20, duration: 7 });
    const fork2 = await chain.snapshot();
    await ok("POST", `/dev/loans/${other.id}/fund`, borrower.token);
    await settle(borrower);
    await removeFunding(fork2);
    const cancelled = await postWithKey(api, `/v1/loans/${other.id}/cancel`, borrower.token, {});
    expect(cancelled.status, cancelled.text).to.equal(200);
    expect((await ok("GET", `/v1/loans/${other.id}`, borrower.token)).status).to.equal("cancelled");
  });
});
