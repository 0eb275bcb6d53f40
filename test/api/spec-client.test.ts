import { expect } from "chai";
import { usingPostgres } from "../helpers/database.js";
import { type MoneyStack, startMoneyStack } from "../helpers/money-stack.js";

// A client that knows only the interface specification and the sandbox's run contract: fresh
// users on the default (free) plan, no header beyond Authorization and Content-Type, every
// answer checked against the spec's envelope (part 1), the field list and types of part 2 and
// the rate-limit headers of part 8. It walks the money paths end to end: faucet, staking vault,
// a new user's loan, the social vault with a guardian.

type FieldType = "string" | "money" | "number" | "integer" | "boolean" | "iso" | "date" | "address" | "txHash" | "array" | "object";
// biome-ignore lint/suspicious/noExplicitAny: answers are checked field by field against the spec
type Json = any;

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const CHECKS: Record<FieldType, (value: unknown) => boolean> = {
  string: (v) => typeof v === "string",
  // Vault and social-vault money: decimal strings with two fraction digits (part 1, item 8).
  money: (v) => typeof v === "string" && /^-?\d+\.\d{2}$/.test(v),
  number: (v) => typeof v === "number" && Number.isFinite(v),
  integer: (v) => Number.isInteger(v),
  boolean: (v) => typeof v === "boolean",
  iso: (v) => typeof v === "string" && ISO_8601.test(v) && !Number.isNaN(Date.parse(v)),
  date: (v) => typeof v === "string" && /^\d{4}-\d{2}-\d{2}$/.test(v),
  address: (v) => typeof v === "string" && /^0x[0-9a-fA-F]{40}$/.test(v),
  txHash: (v) => typeof v === "string" && /^0x[0-9a-f]{64}$/.test(v),
  array: (v) => Array.isArray(v),
  object: (v) => typeof v === "object" && v !== null && !Array.isArray(v),
};

/** Every field the spec lists is there, with its type (never null). */
function expectShape(what: string, value: Json, shape: Record<string, FieldType>) {
  expect(value, what).to.be.an("object");
  for (const [field, type] of Object.entries(shape)) {
    expect(value, `${what}: field ${field}`).to.have.property(field);
    expect(CHECKS[type](value[field]), `${what}: ${field} = ${JSON.stringify(value[field])} is not ${type}`).to.equal(true);
  }
}

const PAGINATION = { total: "integer", limit: "integer", offset: "integer", hasMore: "boolean" } as const;

describe(`a client that knows only the spec moves money (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(300_000);
  let stack: MoneyStack;

  /** The spec's client: Authorization and Content-Type, nothing else. */
  async function call(method: string, path: string, options: { token?: string; body?: unknown } = {}) {
    const headers: Record<string, string> = {};
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.body !== undefined) headers["content-type"] = "application/json";
    const response = await fetch(`${stack.api.url}${path}`, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    const text = await response.text();
    const body = JSON.parse(text);
    // Part 8: every response carries the rate-limit headers.
    for (const header of ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"]) {
      expect(response.headers.get(header), `${method} ${path}: ${header}`).to.be.a("string");
    }
    expect(body.success, `${method} ${path}: success`).to.be.a("boolean");
    expectShape(`${method} ${path}: meta`, body.meta, { timestamp: "iso", requestId: "string" });
    return { status: response.status, body, text };
  }

  /** A success answer of `method path`, its `data`. */
  async function ok(method: string, path: string, options: { token?: string; body?: unknown } = {}) {
    const response = await call(method, path, options);
    expect(response.status, `${method} ${path}: ${response.text}`).to.be.oneOf([200, 201]);
    expect(response.body.success).to.equal(true);
    return response.body;
  }

  async function signIn(sub: string) {
    // A day: the walk moves the sandbox clock past the tokens' default hour (run contract section 3).
    const data = (await ok("POST", "/dev/token", { body: { sub, name: sub, email: `${sub}@example.com`, expiresIn: 86_400 } })).data;
    expectShape("POST /dev/token", data, { accessToken: "string", tokenType: "string", expiresIn: "integer" });
    const token = data.accessToken as string;
    const me = (await ok("GET", "/v1/users/me", { token })).data;
    expectShape("GET /v1/users/me", me, {
      id: "string",
      email: "string",
      displayName: "string",
      walletAddress: "address",
      trustScore: "integer",
      level: "string",
      xp: "integer",
      createdAt: "iso",
      settings: "object",
    });
    expectShape("GET /v1/users/me: settings", me.settings, { notifications: "boolean", emailAlerts: "boolean", language: "string" });
    return { token, id: me.id as string, wallet: me.walletAddress as string };
  }

  before(async () => {
    stack = await startMoneyStack();
  });
  after(async () => {
    await stack?.close();
  });

  it("faucet, then the staking vault: deposit, position, withdraw, history", async () => {
    const saver = await signIn("spec-saver");
    const faucet = (await ok("POST", "/dev/faucet", { token: saver.token, body: { amount: 200 } })).data;
    expectShape("POST /dev/faucet", faucet, { walletAddress: "address", amount: "money", balance: "money", txHash: "txHash" });
    expect(faucet.balance).to.equal("200.00");

    const deposit = (await ok("POST", "/v1/vault/deposit", { token: saver.token, body: { amount: 50 } })).data;
    expectShape("POST /v1/vault/deposit", deposit, {
      depositAmount: "money",
      exchangeRate: "number",
      tmUSDCReceived: "money",
      newBalance: "money",
      txHash: "txHash",
      xpEarned: "integer",
    });
    expect(deposit.depositAmount).to.equal("50.00");

    const position = (await ok("GET", "/v1/vault/position", { token: saver.token })).data;
    expectShape("GET /v1/vault/position", position, {
      userId: "string",
      tmUSDCBalance: "money",
      usdcValue: "money",
      earnedYield: "money",
      depositedAt: "iso",
      lastYieldClaim: "iso",
    });
    expect(position.usdcValue).to.equal("50.00");

    const withdraw = (await ok("POST", "/v1/vault/withdraw", { token: saver.token, body: { tmUSDCAmount: 10 } })).data;
    expectShape("POST /v1/vault/withdraw", withdraw, {
      tmUSDCRedeemed: "money",
      exchangeRate: "number",
      usdcReceived: "money",
      remainingBalance: "money",
      txHash: "txHash",
    });
    expect(withdraw.usdcReceived).to.equal("10.00");

    const history = await ok("GET", "/v1/vault/transactions?limit=10", { token: saver.token });
    expectShape("GET /v1/vault/transactions: pagination", history.pagination, PAGINATION);
    expect(history.data.map((t: Json) => t.type)).to.deep.equal(["withdraw", "deposit"]);
    for (const entry of history.data) {
      expectShape("vault transaction", entry, {
        id: "string",
        type: "string",
        usdcAmount: "money",
        tmUSDCAmount: "money",
        exchangeRate: "number",
        timestamp: "iso",
        txHash: "txHash",
      });
    }
    const status = (await ok("GET", "/v1/vault/status")).data;
    expectShape("GET /v1/vault/status", status, {
      totalDeposits: "string",
      totalBorrowed: "string",
      utilization: "number",
      currentAPY: "number",
      exchangeRate: "number",
      tmUSDCSupply: "string",
    });
  });

  it("a new user borrows 20 USDC for 7 days: eligibility, request, funding, partial and full repayment", async () => {
    // The pool needs liquidity: a depositor first.
    const depositor = await signIn("spec-depositor");
    await ok("POST", "/dev/faucet", { token: depositor.token, body: { amount: 500 } });
    await ok("POST", "/v1/vault/deposit", { token: depositor.token, body: { amount: 500 } });

    const borrower = await signIn("spec-borrower");
    const eligibility = (await ok("GET", "/v1/loans/eligibility", { token: borrower.token })).data;
    expectShape("GET /v1/loans/eligibility", eligibility, {
      eligible: "boolean",
      trustScore: "integer",
      tier: "string",
      maxAmount: "number",
      maxDuration: "integer",
      currentLoans: "integer",
      maxActiveLoans: "integer",
      interestRate: "number",
      restrictions: "array",
    });
    expect(eligibility).to.deep.include({ eligible: true, tier: "New", maxAmount: 20, maxDuration: 7, restrictions: [] });

    const created = (await ok("POST", "/v1/loans", { token: borrower.token, body: { amount: 20, duration: 7, purpose: "rent" } })).data;
    // The creation answer's fields (part 4), all of which the Loan detail of part 2 has too.
    const createdShape = {
      id: "string",
      status: "string",
      amount: "number",
      netAmount: "number",
      insuranceFee: "number",
      duration: "number",
      interestRate: "number",
      totalRepayment: "number",
      purpose: "string",
      createdAt: "iso",
      expiresAt: "iso",
    } as const;
    expectShape("POST /v1/loans", created, createdShape);
    expect(created).to.deep.include({ status: "pending", amount: 20, duration: 7 });

    const funded = (await ok("POST", `/dev/loans/${created.id}/fund`)).data;
    expect(funded.status).to.equal("active");
    const loanShape = {
      ...createdShape,
      borrower: "string",
      amountPaid: "number",
      remainingBalance: "number",
      fundedAt: "iso",
      dueDate: "iso",
      daysRemaining: "integer",
      txHash: "txHash",
    } as const;
    const detail = (await ok("GET", `/v1/loans/${created.id}`, { token: borrower.token })).data;
    expectShape("GET /v1/loans/{loanId}", detail, loanShape);
    expect(detail.borrower).to.equal(borrower.id);

    const list = await ok("GET", "/v1/loans", { token: borrower.token });
    expectShape("GET /v1/loans: pagination", list.pagination, PAGINATION);
    expectShape("GET /v1/loans: item", list.data[0], {
      id: "string",
      status: "string",
      amount: "number",
      remainingBalance: "number",
      dueDate: "iso",
      daysRemaining: "integer",
    });

    const payoff = (await ok("GET", `/v1/loans/${created.id}/payoff`, { token: borrower.token })).data;
    expectShape("GET /v1/loans/{loanId}/payoff", payoff, {
      loanId: "string",
      originalTotal: "number",
      earlyPayoffAmount: "number",
      interestSaved: "number",
      daysEarly: "integer",
    });

    // The payout is netAmount; the loan costs totalRepayment: the difference comes from elsewhere.
    await ok("POST", "/dev/faucet", { token: borrower.token, body: { amount: 10 } });
    const repayShape = {
      loanId: "string",
      amountPaid: "number",
      remainingBalance: "number",
      status: "string",
      trustScoreChange: "integer",
      xpEarned: "integer",
      txHash: "txHash",
    } as const;
    const partial = (await ok("POST", `/v1/loans/${created.id}/repay`, { token: borrower.token, body: { amount: 5 } })).data;
    expectShape("POST /v1/loans/{loanId}/repay (partial)", partial, repayShape);
    expect(partial.status).to.equal("active");
    const rest = partial.remainingBalance as number;
    const full = (await ok("POST", `/v1/loans/${created.id}/repay`, { token: borrower.token, body: { amount: rest } })).data;
    expectShape("POST /v1/loans/{loanId}/repay (full)", full, repayShape);
    // Part 2's visible rule: +2 for an on-time repayment (D-88 keeps it for a borrower's own money).
    expect(full).to.deep.include({ status: "repaid", remainingBalance: 0, trustScoreChange: 2 });
  });

  it("the social vault: creation, deposit, instant withdrawal, a guardian, a request, its approval and execution, the lock", async () => {
    const owner = await signIn("spec-owner");
    const guardian = await signIn("spec-guardian");
    const friend = await signIn("spec-friend");
    await ok("POST", "/dev/faucet", { token: owner.token, body: { amount: 300 } });

    const created = (
      await ok("POST", "/v1/social-vault", {
        token: owner.token,
        body: { dailyLimit: 50, timelockDuration: 3600, requiredSignatures: 1, duressPin: "4821" },
      })
    ).data;
    expectShape("POST /v1/social-vault", created, {
      vaultAddress: "address",
      dailyLimit: "money",
      timelockDuration: "integer",
      requiredSignatures: "integer",
      txHash: "txHash",
      createdAt: "iso",
    });
    const config = (await ok("GET", "/v1/social-vault/config", { token: owner.token })).data;
    expectShape("GET /v1/social-vault/config", config, {
      isConfigured: "boolean",
      dailyLimit: "money",
      timelockDuration: "integer",
      requiredSignatures: "integer",
      guardianCount: "integer",
      isLocked: "boolean",
      hasDuressPin: "boolean",
    });
    expect(config).to.deep.include({ isConfigured: true, dailyLimit: "50.00", isLocked: false, hasDuressPin: true });

    const deposit = (await ok("POST", "/v1/social-vault/deposit", { token: owner.token, body: { amount: 200 } })).data;
    expectShape("POST /v1/social-vault/deposit", deposit, { amount: "money", newBalance: "money", txHash: "txHash" });
    expect(deposit.newBalance).to.equal("200.00");

    const instant = (
      await ok("POST", "/v1/social-vault/withdraw/instant", { token: owner.token, body: { amount: 10, recipient: friend.wallet } })
    ).data;
    expectShape("POST /v1/social-vault/withdraw/instant", instant, {
      amount: "money",
      recipient: "address",
      remainingDailyLimit: "money",
      newBalance: "money",
      txHash: "txHash",
    });
    expect(instant).to.deep.include({ remainingDailyLimit: "40.00", newBalance: "190.00" });

    await ok("POST", "/v1/social-vault/guardians", { token: owner.token, body: { walletAddress: guardian.wallet } });
    // A new guardian becomes active once the vault's timelock has passed (run contract section 2).
    await ok("POST", "/dev/time/advance", { body: { seconds: 3_601 } });
    const guardians = (await ok("GET", "/v1/users/me/guardians", { token: owner.token })).data;
    expect(guardians).to.have.length(1);
    expectShape("GET /v1/users/me/guardians", guardians[0], {
      id: "string",
      walletAddress: "address",
      displayName: "string",
      status: "string",
      addedAt: "iso",
    });
    expect(guardians[0].status).to.equal("active");

    // Above what today's window still allows: the path with guardians and a timelock.
    const requested = (
      await ok("POST", "/v1/social-vault/withdraw/request", { token: owner.token, body: { amount: 120, recipient: friend.wallet } })
    ).data;
    const withdrawal = requested.withdrawal ?? requested;
    expectShape("POST /v1/social-vault/withdraw/request", withdrawal, {
      withdrawalId: "string",
      amount: "money",
      recipient: "address",
      status: "string",
      approvalsRequired: "integer",
      approvalsReceived: "integer",
      executeAfter: "iso",
      expiresAt: "iso",
    });
    expect(withdrawal).to.deep.include({ status: "pending", approvalsReceived: 0, approvalsRequired: 1 });

    const pending = (await ok("GET", "/v1/social-vault/withdrawals/pending", { token: owner.token })).data;
    expectShape("GET /v1/social-vault/withdrawals/pending", pending[0], {
      withdrawalId: "string",
      amount: "money",
      recipient: "address",
      status: "string",
      approvalsRequired: "integer",
      approvalsReceived: "integer",
      executeAfter: "iso",
      approvers: "array",
    });

    const approved = (await ok("POST", `/v1/social-vault/withdrawals/${withdrawal.withdrawalId}/approve`, { token: guardian.token })).data;
    expectShape("POST .../approve", approved, {
      withdrawalId: "string",
      approvalsReceived: "integer",
      approvalsRequired: "integer",
      status: "string",
      canExecuteAt: "iso",
    });
    expect(approved.status).to.equal("approved");

    await ok("POST", "/dev/time/advance", { body: { seconds: 3_601 } });
    const executed = (await ok("POST", `/v1/social-vault/withdrawals/${withdrawal.withdrawalId}/execute`, { token: owner.token })).data;
    expectShape("POST .../execute", executed, {
      withdrawalId: "string",
      amount: "money",
      recipient: "address",
      status: "string",
      txHash: "txHash",
      newBalance: "money",
    });
    expect(executed).to.deep.include({ status: "executed", newBalance: "70.00" });

    const locked = (await ok("POST", "/v1/social-vault/lock", { token: owner.token, body: { duressPin: "4821" } })).data;
    expectShape("POST /v1/social-vault/lock", locked, { status: "string", lockedAt: "iso", guardiansNotified: "boolean" });
    expect(locked.status).to.equal("locked");
    const refused = await call("POST", "/v1/social-vault/deposit", { token: owner.token, body: { amount: 1 } });
    expect(refused.status).to.equal(400);
    expect(refused.body.error.code).to.equal("VAULT_LOCKED");
  });

  it("a merchant takes a payment: part 2's request shape, the checkout URL, a payer pays (run contract section 4), the list's status filter", async () => {
    const merchant = await signIn(`spec-merchant-${Date.now()}`);
    const payer = await signIn(`spec-payer-${Date.now()}`);
    await ok("POST", "/dev/faucet", { token: payer.token, body: { amount: 30 } });
    // Part 2's Payment request shape, every field.
    const created = (
      await ok("POST", "/v1/payments", {
        token: merchant.token,
        body: {
          amount: 25,
          currency: "USDC",
          description: "Order 17",
          paymentMethods: ["direct", "credit", "split"],
          metadata: { orderId: "17" },
          redirectUrl: "https://shop.example/thanks",
          cancelUrl: "https://shop.example/cart",
        },
      })
    ).data;
    expectShape("POST /v1/payments", created, {
      id: "string",
      status: "string",
      amount: "number",
      checkoutUrl: "string",
      expiresAt: "iso",
    });
    const page = await fetch(created.checkoutUrl);
    expect(page.status).to.equal(200);
    // The payer pays on the checkout's endpoint (run-and-sandbox.md section 4); a declining address first.
    const declined = await call("POST", `/checkout/${created.id}/pay`, {
      token: payer.token,
      body: { method: "direct", payerAddress: "0x000000000000000000000000000000000000dEc1" },
    });
    expect(declined.body.success).to.equal(false);
    expect(declined.body.error.code).to.be.a("string");
    await ok("POST", `/checkout/${created.id}/pay`, { token: payer.token, body: { method: "direct" } });
    const got = (await ok("GET", `/v1/payments/${created.id}`, { token: merchant.token })).data;
    expectShape("GET /v1/payments/{paymentId}", got, { id: "string", status: "string", amount: "number", txHash: "txHash" });
    expect(got.status).to.equal("success");
    const listed = await ok("GET", "/v1/payments?limit=10&status=success", { token: merchant.token });
    expectShape("GET /v1/payments: pagination", listed.pagination, PAGINATION);
    expect(listed.data.map((payment: { id: string }) => payment.id)).to.deep.equal([created.id]);
  });
});
