import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { getAddress } from "ethers";
import { platformContractAt } from "../../core/platform-abi.js";
import type { TestApi } from "../helpers/api.js";
import { type TestChain, usdc } from "../helpers/chain.js";
import { type TestDatabase, usingPostgres } from "../helpers/database.js";
import { expectErrorEnvelope } from "../helpers/envelope.js";
import { waitForHead } from "../helpers/mirror.js";
import { advanceSandbox, type MoneyStack, newTestUser, postWithKey, startMoneyStack } from "../helpers/money-stack.js";

// The social vault from the guardians' side, over real HTTP on a real chain with the indexer:
// what waits for a guardian, a guardian approving with a plain wallet call, a guardian removed
// while a request waits, a request's expiry, the silent alert of a lock, a new duress PIN after
// an unlock, and the events, activity and export entries these leave.

const MIGRATIONS = join(import.meta.dirname, "../../prisma/migrations");

describe(`social vault API: guardians, expiry, alerts (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(240_000);
  let chain: TestChain;
  let db: TestDatabase;
  let api: TestApi;
  const users: { subject: string; token: string }[] = [];

  async function newUser(funds = 0) {
    const user = await newTestUser(api, "guard", funds);
    users.push(user);
    return user;
  }
  const post = (path: string, token: string, body: unknown = {}, key?: string) => postWithKey(api, path, token, body, key);
  const get = (path: string, token: string) => api.request("GET", path, { token });
  const remove = (token: string, guardianId: string) =>
    api.request("DELETE", `/v1/social-vault/guardians/${guardianId}`, { token, headers: { "idempotency-key": randomUUID() } });
  /** Moves the clocks on a little past `seconds` (the dev chain's time runs a few seconds ahead). */
  const advance = (seconds: number) => advanceSandbox(api, seconds + 100, users);
  async function vaultWithGuardians(
    owner: { token: string },
    guardians: string[],
    config: { requiredSignatures: number; deposit: number; duressPin?: string },
  ) {
    const created = await post("/v1/social-vault", owner.token, {
      dailyLimit: 100,
      timelockDuration: 3_600,
      requiredSignatures: config.requiredSignatures,
      duressPin: config.duressPin ?? "2468",
    });
    expect(created.status, created.text).to.equal(200);
    if (config.deposit > 0) expect((await post("/v1/social-vault/deposit", owner.token, { amount: config.deposit })).status).to.equal(200);
    for (const walletAddress of guardians) {
      const added = await post("/v1/social-vault/guardians", owner.token, { walletAddress });
      expect(added.status, added.text).to.equal(200);
    }
    await advance(3_600);
    return created.body.data.vaultAddress as string;
  }
  const eventsOf = (type: string, userId?: string) =>
    db.prisma.domainEvent.findMany({ where: { type, ...(userId ? { userId } : {}) }, orderBy: { createdAt: "asc" } });

  let stack: MoneyStack | undefined;
  before(async () => {
    stack = await startMoneyStack();
    ({ chain, db, api } = stack);
  });
  after(async () => {
    await stack?.close();
  });

  it("lists what waits for a guardian, takes a plain wallet's approval, executes, and leaves the events, activity and export entries", async () => {
    const owner = await newUser(500);
    const guardian = await newUser();
    const walletGuardian = await chain.signer(9);
    const walletAddress = await walletGuardian.getAddress();
    const vaultAddress = await vaultWithGuardians(owner, [guardian.wallet, walletAddress], { requiredSignatures: 2, deposit: 400 });
    const recipient = (await newUser()).wallet;

    const requested = await post("/v1/social-vault/withdraw/request", owner.token, { amount: 250, recipient });
    expect(requested.status, requested.text).to.equal(200);
    const { withdrawalId } = requested.body.data;

    // The guardian's own list: the vault, their standing, the request waiting for them.
    const guarding = await get("/v1/social-vault/guarding", guardian.token);
    expect(guarding.status, guarding.text).to.equal(200);
    expect(guarding.body.data).to.have.length(1);
    expect(guarding.body.data[0]).to.deep.include({
      vaultAddress,
      guardianStatus: "active",
      removableAt: null,
      isLocked: false,
      unlock: null,
    });
    expect(guarding.body.data[0].owner.id).to.equal(owner.id);
    expect(guarding.body.data[0].withdrawals).to.have.length(1);
    expect(guarding.body.data[0].withdrawals[0]).to.deep.include({
      withdrawalId,
      amount: "250.00",
      status: "pending",
      approvalsReceived: 0,
      approvedByYou: false,
    });
    expect((await get("/v1/social-vault/guarding", owner.token)).body.data).to.deep.equal([]);
    const detail = await get(`/v1/social-vault/withdrawals/${withdrawalId}`, guardian.token);
    expect(detail.status, detail.text).to.equal(200);
    expect(detail.body.data).to.deep.include({ withdrawalId, vaultAddress, status: "pending" });
    expectErrorEnvelope(await get(`/v1/social-vault/withdrawals/${withdrawalId}`, (await newUser()).token), 404, "WITHDRAWAL_NOT_FOUND");

    // A guardian who is a plain wallet approves on the contract itself; the API shows it.
    const vault = platformContractAt("socialVault", vaultAddress, walletGuardian);
    const requestId = BigInt(withdrawalId.split("-")[1]);
    await (await vault.approveWithdrawal!(requestId)).wait();
    await waitForHead(db, chain);
    const pending = (await get("/v1/social-vault/withdrawals/pending", owner.token)).body.data;
    expect(pending[0]).to.deep.include({ withdrawalId, approvalsReceived: 1, status: "pending", approvers: [walletAddress.toLowerCase()] });

    const approved = await post(`/v1/social-vault/withdrawals/${withdrawalId}/approve`, guardian.token);
    expect(approved.status, approved.text).to.equal(200);
    expect(approved.body.data).to.deep.include({
      approvalsReceived: 2,
      status: "approved",
      canExecuteAt: requested.body.data.executeAfter,
    });
    expect((await get("/v1/social-vault/guarding", guardian.token)).body.data[0].withdrawals[0]).to.deep.include({
      status: "approved",
      approvedByYou: true,
    });
    expectErrorEnvelope(await post(`/v1/social-vault/withdrawals/${withdrawalId}/approve`, guardian.token), 409, "CONFLICT");

    await advance(3_600);
    const executed = await post(`/v1/social-vault/withdrawals/${withdrawalId}/execute`, owner.token);
    expect(executed.status, executed.text).to.equal(200);
    expect(await chain.contracts.usdc.balanceOf(recipient)).to.equal(usdc(250));
    expect((await get("/v1/social-vault/guarding", guardian.token)).body.data[0].withdrawals).to.deep.equal([]);

    // Part 6 events, each for the owner, with the spec's fields.
    await waitForHead(db, chain);
    const [requestedEvent] = await eventsOf("social_vault.withdrawal_requested", owner.id);
    expect(requestedEvent!.data).to.deep.include({ withdrawalId, amount: "250.00", requiredApprovals: 2 });
    const approvals = await eventsOf("social_vault.withdrawal_approved", owner.id);
    expect(approvals.map((e) => (e.data as { approver: string }).approver)).to.deep.equal([walletAddress.toLowerCase(), guardian.id]);
    expect(approvals.map((e) => (e.data as { totalApprovals: number }).totalApprovals)).to.deep.equal([1, 2]);
    const [executedEvent] = await eventsOf("social_vault.withdrawal_executed", owner.id);
    expect(executedEvent!.data).to.deep.include({ withdrawalId, amount: "250.00", recipient: getAddress(recipient) });
    const added = await eventsOf("user.guardian_added", owner.id);
    expect(added.map((e) => (e.data as { guardianUserId: string | null }).guardianUserId)).to.deep.equal([guardian.id, null]);

    // Activity (the rewards consumer's guardian_added entries) and the export.
    await api.services.rewards.drain(api.clock.now());
    const activity = (await get("/v1/users/me/activity?limit=50", owner.token)).body.data as { type: string; xpEarned: number }[];
    expect(activity.filter((entry) => entry.type === "guardian_added")).to.have.length(2);
    const exported = (await get("/v1/users/me/export", owner.token)).body.data;
    expect(exported.socialVault.vault).to.deep.include({ vaultAddress, balance: "150.00", isLocked: false, hasDuressPin: true });
    expect(exported.socialVault.withdrawals).to.have.length(1);
    expect(exported.socialVault.withdrawals[0]).to.deep.include({
      withdrawalId,
      status: "executed",
      approvers: [walletAddress.toLowerCase(), guardian.id],
    });
    expect(exported.guardians.map((g: { id: string }) => g.id)).to.deep.equal([guardian.id, walletAddress.toLowerCase()]);
    const guardianExport = (await get("/v1/users/me/export", guardian.token)).body.data;
    expect(guardianExport.socialVault).to.deep.include({ vault: null, withdrawals: [] });
    expect(guardianExport.socialVault.guarding.map((g: { vaultAddress: string }) => g.vaultAddress)).to.deep.equal([vaultAddress]);
  });

  it("removes a guardian while a request waits: the removal waits for the timelock, then its approval stops counting", async () => {
    const owner = await newUser(500);
    const [first, second] = [await newUser(), await newUser()];
    await vaultWithGuardians(owner, [first.wallet, second.wallet], { requiredSignatures: 1, deposit: 300 });
    const recipient = (await newUser()).wallet;
    const { withdrawalId } = (await post("/v1/social-vault/withdraw/request", owner.token, { amount: 200, recipient })).body.data;
    const approved = await post(`/v1/social-vault/withdrawals/${withdrawalId}/approve`, first.token);
    expect(approved.body.data).to.deep.include({ status: "approved", approvalsReceived: 1 });

    // A submitted removal can be withdrawn: the guardian stays.
    expect((await remove(owner.token, second.id)).body.data.status).to.equal("removal_pending");
    const keep = () => post(`/v1/social-vault/guardians/${second.id}/keep`, owner.token);
    const kept = await keep();
    expect(kept.status, kept.text).to.equal(200);
    expect(kept.body.data).to.deep.include({ id: second.id, status: "active", removableAt: null });
    expectErrorEnvelope(await keep(), 409, "CONFLICT");
    expectErrorEnvelope(await post(`/v1/social-vault/guardians/${randomUUID()}/keep`, owner.token), 404, "GUARDIAN_NOT_FOUND");

    const submitted = await remove(owner.token, first.id);
    expect(submitted.status, submitted.text).to.equal(200);
    expect(submitted.body.data).to.deep.include({ guardianId: first.id, status: "removal_pending" });
    const listed = (await get("/v1/social-vault/guardians", owner.token)).body.data as {
      id: string;
      status: string;
      removableAt: string | null;
    }[];
    expect(listed.find((g) => g.id === first.id)).to.deep.include({ status: "active", removableAt: submitted.body.data.removableAt });
    expect((await get("/v1/social-vault/guarding", first.token)).body.data[0].removableAt).to.equal(submitted.body.data.removableAt);
    // Until the timelock has passed the guardian keeps its power, and its approval counts.
    expectErrorEnvelope(await remove(owner.token, first.id), 409, "TIMELOCK_ACTIVE");
    expect((await get(`/v1/social-vault/withdrawals/${withdrawalId}`, owner.token)).body.data.status).to.equal("approved");

    await advance(3_600);
    const completed = await remove(owner.token, first.id);
    expect(completed.status, completed.text).to.equal(200);
    expect(completed.body.data).to.deep.include({ guardianId: first.id, status: "removed", removableAt: null });
    const after = (await get("/v1/social-vault/withdrawals/pending", owner.token)).body.data;
    expect(after[0]).to.deep.include({ withdrawalId, status: "pending", approvalsReceived: 0, approvers: [] });
    expectErrorEnvelope(await post(`/v1/social-vault/withdrawals/${withdrawalId}/execute`, owner.token), 409, "CONFLICT");
    expectErrorEnvelope(await post(`/v1/social-vault/withdrawals/${withdrawalId}/approve`, first.token), 403, "NOT_GUARDIAN");
    expect((await get("/v1/social-vault/guarding", first.token)).body.data).to.deep.equal([]);
    expect((await get("/v1/social-vault/guardians", owner.token)).body.data.map((g: { id: string }) => g.id)).to.deep.equal([second.id]);

    // The remaining guardian's approval carries it.
    expect((await post(`/v1/social-vault/withdrawals/${withdrawalId}/approve`, second.token)).body.data.status).to.equal("approved");
    const executed = await post(`/v1/social-vault/withdrawals/${withdrawalId}/execute`, owner.token);
    expect(executed.status, executed.text).to.equal(200);
    expect(executed.body.data).to.deep.include({ status: "executed", newBalance: "100.00" });
  });

  it("shows a request past its execution window as expired; executing it is WITHDRAWAL_EXPIRED", async () => {
    const owner = await newUser(300);
    const guardian = await newUser();
    await vaultWithGuardians(owner, [guardian.wallet], { requiredSignatures: 1, deposit: 250 });
    const recipient = (await newUser()).wallet;
    const requested = (await post("/v1/social-vault/withdraw/request", owner.token, { amount: 150, recipient })).body.data;
    expect((await post(`/v1/social-vault/withdrawals/${requested.withdrawalId}/approve`, guardian.token)).status).to.equal(200);
    const window = (Date.parse(requested.expiresAt) - Date.parse(requested.executeAfter)) / 1_000;
    expect(window).to.equal(7 * 86_400);

    await advance(3_600 + window);
    const history = (await get("/v1/social-vault/withdrawals", owner.token)).body.data;
    expect(history[0]).to.deep.include({ withdrawalId: requested.withdrawalId, status: "expired", closedAt: null });
    expect((await get(`/v1/social-vault/withdrawals/${requested.withdrawalId}`, guardian.token)).body.data.status).to.equal("expired");
    expect((await get("/v1/social-vault/withdrawals/pending", owner.token)).body.data).to.deep.equal([]);
    expect((await get("/v1/social-vault/guarding", guardian.token)).body.data[0].withdrawals).to.deep.equal([]);
    const execute = await post(`/v1/social-vault/withdrawals/${requested.withdrawalId}/execute`, owner.token);
    expectErrorEnvelope(execute, 409, "WITHDRAWAL_EXPIRED");
    expectErrorEnvelope(
      await post(`/v1/social-vault/withdrawals/${requested.withdrawalId}/approve`, guardian.token),
      409,
      "WITHDRAWAL_EXPIRED",
    );
    expect(await chain.contracts.usdc.balanceOf(recipient)).to.equal(0n);

    // A new request reuses the slot: the chain marks the old one expired, and the history keeps both.
    const again = await post("/v1/social-vault/withdraw/request", owner.token, { amount: 150, recipient });
    expect(again.status, again.text).to.equal(200);
    const both = (await get("/v1/social-vault/withdrawals", owner.token)).body.data as {
      withdrawalId: string;
      status: string;
      closedAt: string | null;
    }[];
    expect(both.map((w) => [w.withdrawalId, w.status])).to.deep.equal([
      [again.body.data.withdrawalId, "pending"],
      [requested.withdrawalId, "expired"],
    ]);
    expect(both[1]!.closedAt).to.be.a("string");
  });

  it("alerts each guardian silently on a lock, shows the unlock waiting for them, and takes a new duress PIN after the unlock", async () => {
    const owner = await newUser(100);
    const guardian = await newUser();
    const outsider = "0x00000000000000000000000000000000000b0b00";
    const vaultAddress = await vaultWithGuardians(owner, [guardian.wallet, outsider], {
      requiredSignatures: 1,
      deposit: 50,
      duressPin: "5555",
    });

    const locked = await post("/v1/social-vault/lock", owner.token, { duressPin: "5555" });
    expect(locked.status, locked.text).to.equal(200);
    expect(locked.body.data.guardiansNotified).to.equal(true);
    // One alert, addressed to the guardian who is a platform user; nothing of it in the owner's events.
    const alerts = await eventsOf("social_vault.guardian_alert");
    const mine = alerts.filter((e) => (e.data as { vaultAddress: string }).vaultAddress === vaultAddress);
    expect(mine).to.have.length(1);
    expect(mine[0]).to.deep.include({ userId: guardian.id });
    expect(mine[0]!.data).to.deep.include({
      vaultOwner: owner.id,
      guardianAddress: guardian.wallet,
      reason: "locked",
      lockedAt: locked.body.data.lockedAt,
    });
    expect(await api.services.guardianAlerts.drain(api.clock.now())).to.equal(0);
    expect(await db.prisma.domainEvent.count({ where: { type: "social_vault.guardian_alert", userId: owner.id } })).to.equal(0);
    expect((await get("/v1/social-vault/guarding", guardian.token)).body.data[0]).to.deep.include({ isLocked: true, unlock: null });
    expectErrorEnvelope(
      await api.request("PUT", "/v1/social-vault/duress-pin", {
        token: owner.token,
        body: { duressPin: "12" },
        headers: { "idempotency-key": randomUUID() },
      }),
      400,
      "VALIDATION_ERROR",
    );

    const asked = await post("/v1/social-vault/unlock", owner.token);
    expect(asked.body.data).to.deep.include({ status: "unlock_requested", approvalsReceived: 0, approvalsRequired: 1 });
    const waiting = (await get("/v1/social-vault/guarding", guardian.token)).body.data[0].unlock;
    expect(waiting).to.deep.include({
      approvalsReceived: 0,
      approvalsRequired: 1,
      approvedByYou: false,
      guardiansCanUnlockAt: asked.body.data.guardiansCanUnlockAt,
    });
    expect((await post("/v1/social-vault/unlock/approve", guardian.token, { vaultAddress })).status).to.equal(200);
    expect((await get("/v1/social-vault/guarding", guardian.token)).body.data[0].unlock).to.deep.include({
      approvalsReceived: 1,
      approvedByYou: true,
    });
    await advance(3_600);
    expect((await post("/v1/social-vault/unlock", owner.token)).body.data.status).to.equal("unlocked");
    expect((await get("/v1/social-vault/config", owner.token)).body.data).to.deep.include({ isLocked: false, hasDuressPin: false });
    expectErrorEnvelope(await post("/v1/social-vault/lock", owner.token, { duressPin: "5555" }), 403, "FORBIDDEN");

    // A new PIN: without one set, no current PIN is asked; changing it afterwards needs the current one.
    const setPin = (body: Record<string, string>) =>
      api.request("PUT", "/v1/social-vault/duress-pin", { token: owner.token, body, headers: { "idempotency-key": randomUUID() } });
    // The PIN that locked it is public on chain now: never taken again (D-104; before, anyone could replay the lock).
    const spent = await setPin({ duressPin: "5555" });
    expectErrorEnvelope(spent, 400, "VALIDATION_ERROR");
    expect(spent.body.error.details.field).to.equal("duressPin");
    const first = await setPin({ duressPin: "777777" });
    expect(first.status, first.text).to.equal(200);
    expect(first.body.data.hasDuressPin).to.equal(true);
    expect(first.text).to.not.include("777777");
    expect((await get("/v1/social-vault/config", owner.token)).body.data.hasDuressPin).to.equal(true);
    expectErrorEnvelope(await setPin({ duressPin: "1234" }), 403, "FORBIDDEN");
    expectErrorEnvelope(await setPin({ duressPin: "1234", currentPin: "5555" }), 403, "FORBIDDEN");
    expect((await setPin({ duressPin: "1234", currentPin: "777777" })).status).to.equal(200);
    expectErrorEnvelope(await post("/v1/social-vault/lock", owner.token, { duressPin: "777777" }), 403, "FORBIDDEN");

    // Locked again with the new PIN: a fresh lock, its unlock asked for anew, a second alert.
    const relocked = await post("/v1/social-vault/lock", owner.token, { duressPin: "1234" });
    expect(relocked.status, relocked.text).to.equal(200);
    expect((await get("/v1/social-vault/guarding", guardian.token)).body.data[0]).to.deep.include({ isLocked: true, unlock: null });
    expect((await post("/v1/social-vault/unlock", owner.token)).body.data.status).to.equal("unlock_requested");
    expect(await db.prisma.domainEvent.count({ where: { type: "social_vault.guardian_alert", userId: guardian.id } })).to.equal(2);

    // The migration that added the mirrored unlock request backfills it from the kept logs.
    expect((await post("/v1/social-vault/unlock/approve", guardian.token, { vaultAddress })).status).to.equal(200);
    await waitForHead(db, chain);
    const mirrored = () =>
      db.prisma.socialVaultState.findFirstOrThrow({
        where: { address: vaultAddress },
        select: { unlockRequestedAt: true, unlockApprovers: true },
      });
    const folded = await mirrored();
    expect(folded.unlockApprovers).to.equal(guardian.wallet.toLowerCase());
    const migration = readFileSync(
      join(MIGRATIONS, readdirSync(MIGRATIONS).find((name) => name.endsWith("_social_vault_unlock"))!, "migration.sql"),
      "utf8",
    );
    const backfill = migration.slice(migration.indexOf("WITH"));
    await db.prisma.$executeRawUnsafe(
      `UPDATE "SocialVaultState" SET "unlockRequestedAt" = NULL, "unlockApprovers" = '' WHERE "address" = $1`,
      vaultAddress,
    );
    await db.prisma.$executeRawUnsafe(backfill);
    expect(await mirrored()).to.deep.equal(folded);
  });

  it("replays a write retried with its Idempotency-Key (the first result, nothing moved), refuses more than the balance and an eleventh guardian", async () => {
    const owner = await newUser(200);
    const created = await post("/v1/social-vault", owner.token, {
      dailyLimit: 50,
      timelockDuration: 3_600,
      requiredSignatures: 1,
      duressPin: "1357",
    });
    expect(created.status, created.text).to.equal(200);
    const recipient = (await newUser()).wallet;

    const key = randomUUID();
    const deposit = await post("/v1/social-vault/deposit", owner.token, { amount: 120 }, key);
    expect(deposit.status, deposit.text).to.equal(200);
    const replay = await post("/v1/social-vault/deposit", owner.token, { amount: 120 }, key);
    expect(replay.status).to.equal(200);
    expect(replay.body.data).to.deep.equal(deposit.body.data);
    expect(await chain.contracts.usdc.balanceOf(created.body.data.vaultAddress)).to.equal(usdc(120));
    const withdrawKey = randomUUID();
    const sent = await post("/v1/social-vault/withdraw/instant", owner.token, { amount: 30, recipient }, withdrawKey);
    expect((await post("/v1/social-vault/withdraw/instant", owner.token, { amount: 30, recipient }, withdrawKey)).body.data).to.deep.equal(
      sent.body.data,
    );
    expect(await chain.contracts.usdc.balanceOf(recipient)).to.equal(usdc(30));

    expectErrorEnvelope(await post("/v1/social-vault/deposit", owner.token, { amount: 81 }), 400, "INSUFFICIENT_BALANCE");
    // 90 left in the vault, 20 of today's 50 left: the limit speaks first, then the balance.
    expectErrorEnvelope(
      await post("/v1/social-vault/withdraw/instant", owner.token, { amount: 25, recipient }),
      400,
      "DAILY_LIMIT_EXCEEDED",
    );

    for (let index = 1; index <= 10; index++) {
      const walletAddress = `0x${index.toString(16).padStart(40, "0")}`;
      const added = await post("/v1/social-vault/guardians", owner.token, { walletAddress });
      expect(added.status, added.text).to.equal(200);
    }
    expectErrorEnvelope(await post("/v1/social-vault/guardians", owner.token, { walletAddress: recipient }), 409, "GUARDIAN_LIMIT_REACHED");
  });
});
