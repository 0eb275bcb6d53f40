// Webhooks and chain reorganisations (#22 item 4), on a real chain, indexer, API and workers: a
// deposit delivered as vault.deposit, then removed by a reorg, reaches its subscriber as
// vault.deposit.reverted carrying the original payload (its id); a webhook that never received
// the deposit is told nothing; and when the same transaction comes back in the new branch, the
// fact is sent again under its original id. With CONFIRMATIONS set, a chain event goes out only
// once its block has that many blocks on top.
import { verify as verifyGithubStyle } from "@octokit/webhooks-methods";
import { expect } from "chai";
import { type Contract, Transaction } from "ethers";
import { createLogger } from "../../core/logger.js";
import { REORG_FOLLOW_UP_DELAY_MS } from "../../domain/webhooks/deliveries.js";
import { startPlatformWorkers } from "../../worker/jobs.js";
import type { Workers } from "../../worker/scheduler.js";
import { deposit, distributeYield } from "../helpers/activity.js";
import { usdc } from "../helpers/chain.js";
import { usingPostgres } from "../helpers/database.js";
import { waitForHead } from "../helpers/mirror.js";
import { type MoneyStack, newTestUser, startMoneyStack } from "../helpers/money-stack.js";
import { sleep, until } from "../helpers/waiting.js";
import { startWebhookReceiver, type WebhookReceiver } from "../helpers/webhook-receiver.js";

const SECRET = "reorg-test-secret-0123456789";

/** A chain, indexer, API and the platform workers, with a webhook receiver: started before the suite's tests, stopped after. */
function runningStack(options: { confirmations?: number } = {}) {
  const running = {} as { stack: MoneyStack; workers: Workers; receiver: WebhookReceiver };
  before(async () => {
    running.stack = await startMoneyStack(options);
    running.receiver = await startWebhookReceiver();
    const { api } = running.stack;
    running.workers = startPlatformWorkers({ services: api.services, clock: api.clock, logger: createLogger("silent"), tickMs: 100 });
  });
  after(async () => {
    await running.workers?.stop();
    await running.stack?.close();
    await running.receiver?.close();
  });
  return running;
}

describe(`webhooks across a chain reorganisation (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(120_000);
  const running = runningStack();

  const bodies = (path: string) => running.receiver.of(path).map((hit) => JSON.parse(hit.body));
  /** Waits until the workers have queued the reorg follow-ups (due REORG_FOLLOW_UP_DELAY_MS later), then lets that time pass. */
  async function followUpsDue(kind: "reverted" | "restored", count: number) {
    await until(async () => {
      const rows = await running.stack.db.sql.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM "Job" WHERE "kind" = 'webhook.delivery' AND "payload"->'items'->0->>'reorg' = $1`,
        [kind],
      );
      return rows.rows[0]!.n >= count;
    }, `${kind} follow-ups queued`);
    await running.stack.api.clock.advance(REORG_FOLLOW_UP_DELAY_MS / 1000 + 1);
  }

  it("sends <event>.reverted with the original payload after a reorg removes a delivered deposit, and the fact again when it comes back", async () => {
    const { stack, receiver } = running;
    const { api, chain, db } = stack;
    // A wallet calling the vault itself (the service's own transactions a reorg removes come back by
    // themselves, D-90: this test brings the fact back by hand). Its USDC and approval come before the fork.
    const signer = await chain.signer(9);
    const wallet = await signer.getAddress();
    const now = api.clock.now();
    const subject = `reorg-${crypto.randomUUID()}`;
    const owner = await db.prisma.user.create({
      data: { id: `user-${subject}`, subject, displayName: "reorg", walletAddress: wallet, createdAt: now, updatedAt: now },
    });
    const user = { id: owner.id, token: await api.token(subject) };
    await (await chain.contracts.usdc.getFunction("mint")(wallet, usdc(100))).wait();
    await (
      await (chain.contracts.usdc.connect(signer) as Contract).getFunction("approve")(await chain.contracts.vault.getAddress(), usdc(100))
    ).wait();
    const subscribe = async (path: string, events: string[]) => {
      const created = await api.request("POST", "/v1/webhooks", {
        token: user.token,
        body: { url: `${receiver.base}${path}`, events, secret: SECRET },
      });
      expect(created.status, created.text).to.equal(201);
    };
    await subscribe("/deposits", ["vault.deposit"]);
    await subscribe("/withdrawals", ["vault.withdraw"]);
    await waitForHead(db, chain);
    const fork = await chain.snapshot();

    const sent = await (chain.contracts.vault.connect(signer) as Contract).getFunction("deposit")(usdc(100), wallet);
    await sent.wait();
    const txHash = sent.hash as string;
    // The wallet's signed transaction, to send again in the new branch.
    const signed = Transaction.from((await chain.provider.getTransaction(txHash))!).serialized;
    await until(() => receiver.of("/deposits").length === 1, "the deposit's delivery");
    const [original] = bodies("/deposits");
    expect(original).to.deep.include({ event: "vault.deposit" });
    expect(original.data).to.include({ userId: user.id, usdcAmount: "100.00", txHash });
    // Subscribed after the deposit was sent: it never had it, so it is told nothing of its revert.
    await subscribe("/late", ["vault.deposit"]);

    // The reorg: the deposit's block is replaced by a longer branch without it.
    await chain.revert(fork);
    await chain.mine(3);
    await until(async () => (await db.prisma.domainEvent.findUnique({ where: { id: original.id } }))?.revertedAt != null, "the revert");
    await followUpsDue("reverted", 2);
    await until(() => receiver.of("/deposits").length === 2, "the .reverted delivery", 20_000);
    const [, reverted] = receiver.of("/deposits");
    const payload = JSON.parse(reverted!.body);
    expect(payload.event).to.equal("vault.deposit.reverted");
    expect(payload.id, "an id of its own: receivers de-duplicate by id").to.not.equal(original.id);
    expect(payload.data, "the original payload, its id among it").to.deep.equal(original);
    expect(reverted!.headers["webhook-id"]).to.equal(payload.id);
    expect(await verifyGithubStyle(SECRET, reverted!.body, reverted!.headers["x-service-signature"] as string)).to.equal(true);
    const depositsHook = (await db.prisma.webhook.findFirstOrThrow({ where: { url: `${receiver.base}/deposits` } })).id;
    const logOf = () => api.request("GET", `/v1/webhooks/${depositsHook}/deliveries`, { token: user.token });
    // An attempt's row is written once its answer is in, a few ms after the receiver has the request.
    await until(async () => (await logOf()).body.data.length === 2, "the .reverted attempt's log row");
    const log = await logOf();
    expect(log.body.data.map((row: { event: string; status: string }) => [row.event, row.status])).to.deep.include.members([
      ["vault.deposit", "success"],
      ["vault.deposit.reverted", "success"],
    ]);

    // The same transaction comes back in the new branch: the deposit is sent again, under its original id.
    await chain.provider.broadcastTransaction(signed);
    await until(async () => (await db.prisma.domainEvent.findUnique({ where: { id: original.id } }))?.revertedAt === null, "the fact back");
    await followUpsDue("restored", 1);
    await until(() => receiver.of("/deposits").length === 3, "the deposit sent again", 20_000);
    const again = bodies("/deposits")[2];
    expect(again.id).to.equal(original.id);
    expect(again.event).to.equal("vault.deposit");
    expect(again.data).to.deep.equal(original.data);

    await sleep(500);
    expect(receiver.of("/late"), "never had the deposit: no .reverted, no resend").to.deep.equal([]);
    expect(receiver.of("/withdrawals")).to.deep.equal([]);
    expect(receiver.of("/deposits")).to.have.length(3);
  });
});

describe(`webhooks with CONFIRMATIONS=2 (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(120_000);
  const running = runningStack({ confirmations: 2 });

  it("sends a chain event only once its block has two blocks on top", async () => {
    const { stack, receiver } = running;
    const { api, chain } = stack;
    const user = await newTestUser(api, "confirmations");
    const created = await api.request("POST", "/v1/webhooks", {
      token: user.token,
      body: { url: `${receiver.base}/yield`, events: ["vault.yield_distributed"], secret: SECRET },
    });
    expect(created.status, created.text).to.equal(201);
    await deposit(chain, await chain.signer(3), usdc(100));
    await distributeYield(chain, usdc(20));
    const block = await chain.provider.getBlockNumber();
    await chain.mine(1);
    await sleep(1_500);
    expect(receiver.of("/yield"), "one block on top: not yet").to.deep.equal([]);
    await chain.mine(1);
    await until(() => receiver.of("/yield").length === 1, "the delivery once confirmed");
    const payload = JSON.parse(receiver.of("/yield")[0]!.body);
    expect(payload.event).to.equal("vault.yield_distributed");
    expect(payload.data).to.include({ totalYield: "20.00" });
    const event = await stack.db.prisma.domainEvent.findUniqueOrThrow({ where: { id: payload.id } });
    expect(event.blockNumber).to.equal(block);
  });
});
