import { ApiError, createClient, type TrustMintClient, toMicro } from "@trustmint/sdk";
import { expect } from "chai";
import { Wallet } from "ethers";
import { createWalletClient, custom } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createSiweMessage } from "viem/siwe";
import { eip1193Wallet } from "../../../test/helpers/test-wallet.js";
import { apiErrorOf, type SignedIn, sharedService, signIn } from "./support.js";

// Every resource method of @trustmint/sdk once, against the service as `npm start` runs it: each
// returns part 2's shape (the envelope unwrapped), and an error answer throws one ApiError.

describe("@trustmint/sdk: every resource method against npm start", function () {
  this.timeout(180_000);
  let baseUrl: string;
  let anonymous: TrustMintClient;

  before(async () => {
    baseUrl = (await sharedService()).url;
    anonymous = createClient({ baseUrl });
  });

  it("auth: a wallet signs in with Sign-In with Ethereum, and its token reaches /v1", async () => {
    const wallet = Wallet.createRandom();
    const { nonce } = await anonymous.auth.siweNonce();
    const message = createSiweMessage({
      address: wallet.address as `0x${string}`,
      chainId: 31337,
      domain: "127.0.0.1:5173",
      uri: "http://127.0.0.1:5173/",
      nonce,
      version: "1",
      issuedAt: new Date(),
    });
    const signedIn = await anonymous.auth.siweVerify({ message, signature: await wallet.signMessage(message) });
    expect(signedIn.user).to.include({ walletAddress: wallet.address, custody: "self" });
    const client = createClient({ baseUrl, getToken: async () => signedIn.accessToken });
    expect((await client.users.me()).id).to.equal(signedIn.user.id);
  });

  it("auth.signIn: one call signs in an ethers signer, an EIP-1193 provider and a viem wallet client", async () => {
    const uri = "http://127.0.0.1:5173/app";
    const ethersWallet = Wallet.createRandom();
    const viaEthers = await anonymous.auth.signIn(ethersWallet, { uri, statement: "Sign in to the savings app" });
    expect(viaEthers.user).to.include({ walletAddress: ethersWallet.address, custody: "self" });

    // A browser wallet as EIP-1193 gives it: lower-case accounts, personal_sign of the hex text.
    const browserKey = Wallet.createRandom();
    const { provider, asked } = eip1193Wallet(browserKey);
    const viaProvider = await anonymous.auth.signIn(provider, { uri });
    expect(viaProvider.user.walletAddress).to.equal(browserKey.address);
    expect(asked).to.deep.equal(["eth_requestAccounts", "personal_sign"]);

    const account = privateKeyToAccount(generatePrivateKey());
    const walletClient = createWalletClient({ account, transport: custom({ request: async () => null }) });
    const viaViem = await anonymous.auth.signIn(walletClient, { uri });
    expect(viaViem.user.walletAddress).to.equal(account.address);
    const client = createClient({ baseUrl, getToken: async () => viaViem.accessToken });
    expect((await client.users.me()).custody).to.equal("self");
  });

  it("users: me, update, get, xp, activity, guardians, export, delete", async () => {
    const alice = await signIn(baseUrl, "sdk-alice");
    const bob = await signIn(baseUrl, "sdk-bob");
    const me = await alice.client.users.me();
    expect(me).to.include({ id: alice.id, walletAddress: alice.wallet, level: "Newcomer" });
    const updated = await alice.client.users.update({ displayName: "Alice", settings: { language: "fr", publicTrustScore: true } });
    expect(updated.displayName).to.equal("Alice");
    expect(updated.settings.language).to.equal("fr");
    const publicAlice = await bob.client.users.get(alice.id);
    expect(publicAlice).to.include({ id: alice.id, displayName: "Alice" });
    expect(publicAlice).to.not.have.property("email");
    const xp = await alice.client.users.xp(alice.id);
    expect(xp).to.include({ userId: alice.id, level: "Newcomer" });
    const activity = await alice.client.users.activity({ limit: 5 });
    expect(activity.pagination).to.include({ limit: 5, offset: 0 });
    expect(await alice.client.users.guardians()).to.deep.equal([]);
    const exported = await alice.client.users.export();
    expect(exported).to.have.property("profile");
    const deleted = await bob.client.users.delete({ confirmation: "DELETE_MY_ACCOUNT" });
    // An answer without data comes back as what it says: its message and the fields beside it.
    expect(deleted).to.have.keys("message", "deletionDate");
    expect(deleted.message).to.be.a("string");
    expect(deleted.lastResponse.requestId).to.be.a("string");
  });

  it("trust score: get, history, modifiers, simulate, tiers", async () => {
    const carol = await signIn(baseUrl, "sdk-carol");
    const score = await carol.client.trustScore.get(carol.id);
    expect(score).to.include({ userId: carol.id });
    expect(score.score).to.be.a("number");
    const history = await carol.client.trustScore.history(carol.id, { period: "30d" });
    expect(history).to.be.an("object");
    expect((await carol.client.trustScore.modifiers(carol.id)).userId).to.equal(carol.id);
    const simulated = await carol.client.trustScore.simulate({ actions: [{ type: "repayment", count: 3 }] });
    expect(simulated.projectedScore).to.be.above(simulated.currentScore);
    const tiers = await anonymous.trustScore.tiers();
    expect(tiers.map((tier) => tier.tier)).to.include("New");
  });

  it("vault: status, position, deposit, withdraw, yield history and calculation, rates, transactions", async () => {
    const saver = await signIn(baseUrl, "sdk-saver", { funds: 100 });
    const deposit = await saver.client.vault.deposit({ amount: 40 });
    expect(deposit.depositAmount).to.equal("40.00");
    const position = await saver.client.vault.position();
    expect(toMicro(position.usdcValue)).to.equal(40_000_000n);
    const withdrawal = await saver.client.vault.withdraw({ tmUSDCAmount: 10 });
    expect(withdrawal.txHash).to.match(/^0x[0-9a-f]{64}$/);
    expect((await anonymous.vault.status()).exchangeRate).to.be.a("number");
    expect(await saver.client.vault.yieldHistory({ period: "7d" })).to.be.an("object");
    const calculated = await anonymous.vault.calculateYield({ amount: 1000, duration: 365 });
    expect(calculated).to.be.an("object");
    expect(await anonymous.vault.rates()).to.be.an("object");
    const transactions = await saver.client.vault.transactions();
    expect(transactions.data.map((entry) => entry.type)).to.deep.equal(["withdraw", "deposit"]);
  });

  it("loans: eligibility, create, cancel, list, get, payoff, repay, extend (the sandbox funds them)", async () => {
    const depositor = await signIn(baseUrl, "sdk-depositor", { funds: 500 });
    await depositor.client.vault.deposit({ amount: 500 });
    const borrower = await signIn(baseUrl, "sdk-borrower");
    const eligibility = await borrower.client.loans.eligibility();
    expect(eligibility).to.include({ eligible: true, tier: "New", maxAmount: 20 });

    const cancelled = await borrower.client.loans.create({ amount: 10, duration: 7, purpose: "books" });
    expect((await borrower.client.loans.cancel(cancelled.id)).status).to.equal("cancelled");
    const loan = await borrower.client.loans.create({ amount: 20, duration: 7, purpose: "rent" });
    expect(loan).to.include({ status: "pending", amount: 20 });
    const funded = await borrower.client.sandbox.fundLoan(loan.id);
    expect(funded.status).to.equal("active");
    const list = await borrower.client.loans.list({ status: "active" });
    expect(list.data.map((entry) => entry.id)).to.deep.equal([loan.id]);
    expect((await borrower.client.loans.get(loan.id)).borrower).to.equal(borrower.id);
    expect((await borrower.client.loans.payoff(loan.id)).loanId).to.equal(loan.id);

    await borrower.client.sandbox.faucet({ amount: 10 });
    const partial = await borrower.client.loans.repay(loan.id, { amount: 5 });
    expect(partial.status).to.equal("active");
    // A New borrower's loan cannot be extended: the call's part 7 code, as an ApiError.
    const refusal = await apiErrorOf(borrower.client.loans.extend(loan.id, { days: 7 }));
    expect(refusal).to.include({ status: 409, code: "EXTENSION_NOT_ALLOWED" });
    const full = await borrower.client.loans.repay(loan.id, { amount: partial.remainingBalance });
    expect(full).to.include({ status: "repaid", remainingBalance: 0 });
  });

  it("social vault: create, deposit, instant and guarded withdrawals, guardians, lock and unlock, duress PIN", async () => {
    const owner = await signIn(baseUrl, "sdk-owner", { funds: 300 });
    const guardian = await signIn(baseUrl, "sdk-guardian");
    const second = await signIn(baseUrl, "sdk-second-guardian");
    const friend = await signIn(baseUrl, "sdk-friend");
    const vault = owner.client.socialVault;
    expect((await vault.config()).isConfigured).to.equal(false);
    const created = await vault.create({ dailyLimit: 50, timelockDuration: 3600, requiredSignatures: 1, duressPin: "4821" });
    expect(created.dailyLimit).to.equal("50.00");
    expect((await vault.deposit({ amount: 200 })).newBalance).to.equal("200.00");
    expect((await vault.withdrawInstant({ amount: 10, recipient: friend.wallet })).remainingDailyLimit).to.equal("40.00");

    const added = await vault.addGuardian({ walletAddress: guardian.wallet });
    expect(added.status).to.equal("pending");
    const pendingSecond = await vault.addGuardian({ walletAddress: second.wallet });
    expect((await vault.removeGuardian(pendingSecond.id)).status).to.equal("removed");
    await owner.client.sandbox.advanceTime({ seconds: 3_601 });
    const [active] = await vault.guardians();
    expect(active).to.include({ id: added.id, status: "active" });
    expect((await vault.removeGuardian(added.id)).status).to.equal("removal_pending");
    expect((await vault.keepGuardian(added.id)).status).to.equal("active");
    expect((await owner.client.users.guardians()).map((entry) => entry.walletAddress)).to.deep.equal([guardian.wallet]);

    const dropped = await vault.requestWithdrawal({ amount: 100, recipient: friend.wallet });
    expect((await vault.cancelWithdrawal(dropped.withdrawalId)).status).to.equal("cancelled");
    const withdrawal = await vault.requestWithdrawal({ amount: 120, recipient: friend.wallet });
    expect((await vault.pendingWithdrawals()).map((entry) => entry.withdrawalId)).to.deep.equal([withdrawal.withdrawalId]);
    const guarding = await guardian.client.socialVault.guarding();
    expect(JSON.stringify(guarding)).to.include(withdrawal.withdrawalId);
    expect((await guardian.client.socialVault.approve(withdrawal.withdrawalId)).status).to.equal("approved");
    expect((await guardian.client.socialVault.withdrawal(withdrawal.withdrawalId)).status).to.equal("approved");
    await owner.client.sandbox.advanceTime({ seconds: 3_601 });
    expect((await vault.execute(withdrawal.withdrawalId)).newBalance).to.equal("70.00");
    expect((await vault.withdrawals()).map((entry) => entry.status)).to.deep.equal(["executed", "cancelled"]);

    expect((await vault.lock({ duressPin: "4821" })).status).to.equal("locked");
    const refused = await apiErrorOf(vault.deposit({ amount: 1 }));
    expect(refused).to.include({ status: 400, code: "VAULT_LOCKED" });
    expect((await vault.unlock()).status).to.equal("unlock_requested");
    expect((await guardian.client.socialVault.approveUnlock({ vaultAddress: created.vaultAddress })).approvalsReceived).to.equal(1);
    await owner.client.sandbox.advanceTime({ seconds: 3_601 });
    expect((await vault.unlock()).status).to.equal("unlocked");
    expect((await vault.setDuressPin({ duressPin: "1357" })).txHash).to.match(/^0x/);
    expect((await vault.config()).hasDuressPin).to.equal(true);

    // The owner's key is lost: its one active guardian hands the vault to the owner's new account.
    const renewed = await signIn(baseUrl, "sdk-renewed-owner");
    const approval = await guardian.client.socialVault.approveRecovery({
      vaultAddress: created.vaultAddress,
      newOwnerAddress: renewed.wallet,
    });
    expect(approval).to.include({ status: "started", approvalsReceived: 1, approvalsRequired: 1 });
    expect((await vault.config()).recovery).to.deep.include({ newOwnerAddress: renewed.wallet });
    await owner.client.sandbox.advanceTime({ seconds: 3_601 });
    const finalized = await friend.client.socialVault.finalizeRecovery({ vaultAddress: created.vaultAddress });
    expect(finalized).to.include({ vaultAddress: created.vaultAddress, ownerAddress: renewed.wallet, isLocked: false });
    expect((await renewed.client.socialVault.config()).isConfigured).to.equal(true);
    expect((await vault.config()).isConfigured).to.equal(false);
  });

  it("notifications: test, list, unread count, mark read, mark all read, delete, preferences, push devices", async () => {
    const dora = await signIn(baseUrl, "sdk-dora");
    const notifications = dora.client.notifications;
    expect(Object.keys(await notifications.test({ type: "in_app" }))).to.deep.equal(["message"]);
    await notifications.test({ type: "in_app" });
    const list = await notifications.list();
    expect(list.data.length).to.be.at.least(2);
    expect(list.unreadCount).to.equal(await notifications.unreadCount());
    const [first, second] = list.data;
    expect((await notifications.markRead(first!.id)).read).to.equal(true);
    expect(await notifications.unreadCount()).to.equal(list.unreadCount - 1);
    await notifications.markAllRead();
    expect(await notifications.unreadCount()).to.equal(0);
    expect(await notifications.delete(second!.id)).to.have.keys("message");
    expect((await notifications.list()).data.map((entry) => entry.id)).to.not.include(second!.id);
    const missing = await apiErrorOf(notifications.markRead(second!.id));
    expect(missing).to.include({ status: 404, code: "NOTIFICATION_NOT_FOUND" });

    const preferences = await notifications.updatePreferences({ email: { weekly_summary: false } });
    expect(preferences.email.weekly_summary).to.equal(false);
    expect((await notifications.preferences()).email.weekly_summary).to.equal(false);
    const device = await notifications.registerPush({ token: "ExponentPushToken[sdk-test]", platform: "ios", deviceId: "phone-1" });
    expect(device.deviceId).to.equal("phone-1");
    await notifications.unregisterPush({ deviceId: "phone-1" });
  });

  it("api keys and plans: setPlan, create, list, a client with the key, revoke", async () => {
    const merchant = await signIn(baseUrl, "sdk-keys");
    const free = await apiErrorOf(merchant.client.apiKeys.create({ name: "server" }));
    expect(free).to.include({ status: 403, code: "FORBIDDEN" });
    await merchant.client.sandbox.setPlan(merchant.id, { plan: "pro" });
    const created = await merchant.client.apiKeys.create({ name: "server" });
    expect(created.key).to.be.a("string");
    expect((await merchant.client.apiKeys.list()).map((key) => key.id)).to.deep.equal([created.id]);
    const server = createClient({ baseUrl, apiKey: created.key });
    expect((await server.users.me()).id).to.equal(merchant.id);
    // Revoking answers the revoked key (its data), as every call with data does.
    const revokedKey = await merchant.client.apiKeys.revoke(created.id);
    expect(revokedKey).to.have.keys("id", "revokedAt");
    expect(revokedKey.id).to.equal(created.id);
    const revoked = await apiErrorOf(server.users.me());
    expect(revoked).to.include({ status: 401, code: "UNAUTHORIZED" });
  });

  it("sandbox: a snapshot, then a reorganisation back to it; the deposit it removed comes back (D-90)", async () => {
    const saver = await signIn(baseUrl, "sdk-reorg", { funds: 10 });
    const { snapshotId, blockNumber } = await saver.client.sandbox.snapshot();
    const deposit = await saver.client.vault.deposit({ amount: 5 });
    const reorg = await saver.client.sandbox.reorg({ snapshotId });
    expect(reorg).to.include({ forkBlock: blockNumber });
    expect(reorg.removedBlocks).to.be.at.least(1);
    expect(reorg.head).to.be.greaterThan(blockNumber);
    // The service sends its removed transactions again: the deposit is back in the mirror.
    const deadline = Date.now() + 20_000;
    let back = false;
    while (!back && Date.now() < deadline) {
      back = (await saver.client.vault.transactions()).data.some((entry) => entry.txHash === deposit.txHash);
      if (!back) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(back).to.equal(true);
  });

  describe("errors", () => {
    let eve: SignedIn;
    before(async () => {
      eve = await signIn(baseUrl, "sdk-eve");
    });

    it("throws one ApiError with status, part 7's code, message, details and requestId", async () => {
      const error = await apiErrorOf(eve.client.loans.create({ amount: 0, duration: 7, purpose: "x" }));
      expect(error).to.be.instanceOf(ApiError);
      expect(error).to.include({ name: "ApiError", status: 400, code: "INVALID_AMOUNT" });
      expect(error.message).to.be.a("string").and.not.equal("");
      expect(error.requestId).to.be.a("string").and.not.equal("");
      const validation = await apiErrorOf(eve.client.users.update({ settings: { language: "x".repeat(300) } }));
      expect(validation).to.include({ status: 400, code: "VALIDATION_ERROR" });
      expect(validation.details?.field).to.equal("settings.language");
    });

    it("maps each area's codes: not found, insufficient balance, unauthorized", async () => {
      expect(await apiErrorOf(eve.client.loans.get("no-such-loan"))).to.include({ status: 404, code: "LOAN_NOT_FOUND" });
      expect(await apiErrorOf(eve.client.users.get("no-such-user"))).to.include({ status: 404, code: "USER_NOT_FOUND" });
      expect(await apiErrorOf(eve.client.vault.deposit({ amount: 5 }))).to.include({ status: 400, code: "INSUFFICIENT_BALANCE" });
      expect(await apiErrorOf(eve.client.socialVault.deposit({ amount: 5 }))).to.include({ status: 404, code: "SOCIAL_VAULT_NOT_FOUND" });
      expect(await apiErrorOf(anonymous.users.me())).to.include({ status: 401, code: "UNAUTHORIZED" });
    });

    it("a 401 asks getToken once more (forceRefresh) and retries once", async () => {
      let calls = 0;
      const fresh = (await anonymous.sandbox.token({ sub: eve.sub })).accessToken;
      // An app's cached token that no longer passes (here its signature's first character changed).
      const [header, payload, signature] = fresh.split(".") as [string, string, string];
      const stale = `${header}.${payload}.${signature[0] === "A" ? "B" : "A"}${signature.slice(1)}`;
      const client = createClient({
        baseUrl,
        getToken: ({ forceRefresh }) => {
          calls++;
          return forceRefresh ? fresh : stale;
        },
      });
      expect((await client.users.me()).id).to.equal(eve.id);
      expect(calls).to.equal(2);
      // A token that stays bad: one refresh, then the 401 is the caller's.
      let badCalls = 0;
      const bad = createClient({ baseUrl, getToken: () => `${++badCalls}.not.a.jwt` });
      expect(await apiErrorOf(bad.users.me())).to.include({ status: 401, code: "UNAUTHORIZED" });
      expect(badCalls).to.equal(2);
    });
  });

  it("pagination: a page, next(), and the async iterator over every page", async () => {
    const frank = await signIn(baseUrl, "sdk-frank");
    for (let i = 0; i < 5; i++) await frank.client.notifications.test({ type: "in_app" });
    const first = await frank.client.notifications.list({ limit: 2 });
    expect(first.data).to.have.length(2);
    expect(first.pagination).to.include({ total: 5, limit: 2, offset: 0, hasMore: true });
    const second = await first.next();
    expect(second!.pagination).to.include({ offset: 2, hasMore: true });
    const seen: string[] = [];
    for await (const notification of first) seen.push(notification.id);
    expect(seen).to.have.length(5);
    expect(new Set(seen).size).to.equal(5);
    expect(seen.slice(0, 2)).to.deep.equal(first.data.map((entry) => entry.id));
    const last = await (await second!.next())!.next();
    expect(last).to.equal(null);
    // Back from the last page: previous() reads by ending_before.
    const third = await second!.next();
    expect((await third!.previous())!.data.map((entry) => entry.id)).to.deep.equal(second!.data.map((entry) => entry.id));
    expect(await first.previous()).to.equal(null);
  });

  it("pagination: a walk over payments sees each once while new ones arrive", async () => {
    const shop = await signIn(baseUrl, "sdk-shop");
    await shop.client.sandbox.setPlan(shop.id, { plan: "pro" });
    const create = (n: number) =>
      shop.client.payments.create({ amount: 1 + n, currency: "USDC", description: `p${n}`, paymentMethods: ["direct"] });
    const created: string[] = [];
    for (let n = 1; n <= 5; n++) created.unshift((await create(n)).id);
    const seen: string[] = [];
    let arrivals = 0;
    for await (const payment of await shop.client.payments.list({ limit: 2 })) {
      seen.push(payment.id);
      // A new payment while the walk is on its way: the next page is read after the last one seen.
      if (seen.length % 2 === 0) await create(10 + ++arrivals);
    }
    expect(arrivals).to.be.greaterThan(1);
    expect(seen).to.deep.equal(created);
    const newest = await shop.client.payments.list({ limit: 2 });
    expect(newest.pagination).to.include({ total: 5 + arrivals, offset: 0 });
    const older = await shop.client.payments.list({ limit: 2, starting_after: created[1] });
    expect(older.data.map((payment) => payment.id)).to.deep.equal(created.slice(2, 4));
    expect(older.pagination).to.include({ offset: arrivals + 2, hasMore: true });
    expect((await older.previous())!.data.map((payment) => payment.id)).to.deep.equal(created.slice(0, 2));
    const error = await apiErrorOf(shop.client.payments.list({ starting_after: created[0], ending_before: created[1] }));
    expect(error).to.include({ status: 400, code: "VALIDATION_ERROR" });
    expect(error.details).to.deep.include({ field: "ending_before" });
  });
});
