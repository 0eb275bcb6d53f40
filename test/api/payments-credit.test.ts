// Payments on credit and in installments (#31, D-81) over real HTTP on a real chain: the lending
// pool pays the merchant at once (less 2 % for credit, 1.5 % per installment, to the treasury) and
// the payer owes loans at their Trust Score tier's terms, which the loan endpoints show and repay;
// eligibility decides (NOT_ELIGIBLE with the reason), the cap of open loans holds under
// concurrency, and a refund first reduces what the payer still owes.
import { randomUUID } from "node:crypto";
import { expect } from "chai";
import { createLogger } from "../../core/logger.js";
import { startPlatformWorkers } from "../../worker/jobs.js";
import type { Workers } from "../../worker/scheduler.js";
import type { TestApi } from "../helpers/api.js";
import { type TestChain, usdc } from "../helpers/chain.js";
import { type TestDatabase, usingPostgres } from "../helpers/database.js";
import { expectErrorEnvelope } from "../helpers/envelope.js";
import { waitFor } from "../helpers/mirror.js";
import { type MoneyStack, newTestUser, postWithKey, startMoneyStack } from "../helpers/money-stack.js";

type Loan = { id: string; status: string; amount: number; remainingBalance: number; dueDate: string };

describe(`payments on credit and in installments (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(240_000);
  let stack: MoneyStack | undefined;
  let chain: TestChain;
  let db: TestDatabase;
  let api: TestApi;
  let workers: Workers;

  before(async () => {
    stack = await startMoneyStack();
    ({ chain, db, api } = stack);
    workers = startPlatformWorkers({ services: api.services, clock: api.clock, logger: createLogger("silent"), tickMs: 100 });
    // The pool's liquidity: a depositor's 2,000 USDC in the staking vault.
    const depositor = await newTestUser(api, "depositor", 2_000);
    expect((await postWithKey(api, "/v1/vault/deposit", depositor.token, { amount: 2_000 })).status).to.equal(200);
  });
  after(async () => {
    await workers?.stop();
    await stack?.close();
  });

  async function newMerchant() {
    const merchant = await newTestUser(api, "credit-merchant");
    await api.request("PATCH", "/v1/users/me", { token: merchant.token, body: { displayName: "Bike Shop" } });
    await api.request("PUT", `/dev/users/${merchant.id}/plan`, { body: { plan: "enterprise" } });
    const create = async (body: Record<string, unknown>) => {
      const created = await api.request("POST", "/v1/payments", {
        token: merchant.token,
        body: { description: "A bell", metadata: { orderId: randomUUID() }, ...body },
      });
      expect(created.status, created.text).to.equal(201);
      return created.body.data;
    };
    return { ...merchant, create };
  }
  const pay = (token: string, id: string, method: string) => api.request("POST", `/checkout/${id}/pay`, { token, body: { method } });
  const balanceOf = async (address: string) => (await chain.contracts.usdc.balanceOf(address)) as bigint;
  const loansOf = async (token: string): Promise<Loan[]> => (await api.request("GET", "/v1/loans?limit=100", { token })).body.data;

  it("pays on credit: the pool pays the merchant less 2 %, the payer owes one loan at their tier's terms, shown and repaid by the loan endpoints", async () => {
    const merchant = await newMerchant();
    const payment = await merchant.create({ amount: 15, paymentMethods: ["direct", "credit"] });
    expect(payment.fees.credit).to.deep.equal({ fee: 0.3, net: 14.7 });
    const payer = await newTestUser(api, "credit-payer", 5);
    // Tier New (score 0): up to 20 USDC for 7 days at 5 %.
    const terms = await api.request("GET", `/checkout/${payment.id}/terms`, { token: payer.token });
    expect(terms.status, terms.text).to.equal(200);
    expect(terms.body.data.direct).to.deep.equal({ total: 15 });
    expect(terms.body.data.credit).to.deep.include({
      eligible: true,
      reason: null,
      interestRate: 0.05,
      interest: 0.75,
      totalRepayment: 15.75,
    });
    const [merchantBefore, treasuryBefore] = [await balanceOf(merchant.wallet), await balanceOf(chain.deployment.deployer)];

    const paid = await pay(payer.token, payment.id, "credit");
    expect(paid.status, paid.text).to.equal(200);
    expect(paid.body.data).to.deep.include({ status: "success", method: "credit", amount: 15, fee: 0.3, net: 14.7 });
    expect(paid.body.data.loans).to.have.length(1);
    const [loan] = paid.body.data.loans;
    expect(loan).to.deep.include({ amount: 15, totalRepayment: 15.75, durationDays: 7 });
    expect((await balanceOf(merchant.wallet)) - merchantBefore).to.equal(usdc(15) - 300_000n);
    expect((await balanceOf(chain.deployment.deployer)) - treasuryBefore).to.equal(300_000n);
    // The payer's wallet did not pay: it owes.
    expect(await balanceOf(payer.wallet)).to.equal(usdc(5));
    const detail = (await api.request("GET", `/v1/payments/${payment.id}`, { token: merchant.token })).body.data;
    expect(detail).to.deep.include({ status: "success", method: "credit", fee: 0.3, net: 14.7, payerId: payer.id });

    // The loan is the payer's like any other: listed active, and repaid through the loan endpoints.
    const listed = (await loansOf(payer.token)).find((entry) => entry.id === loan.loanId)!;
    expect(listed).to.deep.include({ status: "active", amount: 15, remainingBalance: 15.75 });
    const got = (await api.request("GET", `/v1/loans/${loan.loanId}`, { token: payer.token })).body.data;
    expect(got).to.deep.include({ borrower: payer.id, amount: 15, totalRepayment: 15.75 });
    expect(got.purpose).to.include("Bike Shop");
    const repaid = await postWithKey(api, `/v1/loans/${loan.loanId}/repay`, payer.token, { amount: 5 });
    expect(repaid.status, repaid.text).to.equal(200);
    expect(repaid.body.data).to.deep.include({ remainingBalance: 10.75 });
    // The receipt, not "a loan in your wallet".
    await waitFor(
      async () =>
        (await api.request("GET", "/v1/notifications", { token: payer.token })).body.data.some(
          (n: { type: string }) => n.type === "payment_receipt",
        ),
      20_000,
      "the receipt",
    );
    const types = (await api.request("GET", "/v1/notifications", { token: payer.token })).body.data.map((n: { type: string }) => n.type);
    expect(types).to.not.include("loan_funded");
  });

  it("refuses credit the payer may not have: above the tier's amount, above the merchant's interest, with payment.failed; nothing moves", async () => {
    const merchant = await newMerchant();
    const payer = await newTestUser(api, "ineligible-payer");
    const big = await merchant.create({ amount: 25, paymentMethods: ["credit"] });
    const refused = await pay(payer.token, big.id, "credit");
    expectErrorEnvelope(refused, 403, "NOT_ELIGIBLE");
    expect(refused.body.error.details).to.deep.equal({ field: "eligibility", reason: "AMOUNT_ABOVE_TIER" });
    const cheap = await merchant.create({ amount: 10, paymentMethods: ["credit"], creditOptions: { maxInterest: 0.03 } });
    const tooDear = await pay(payer.token, cheap.id, "credit");
    expectErrorEnvelope(tooDear, 403, "NOT_ELIGIBLE");
    expect(tooDear.body.error.details.reason).to.equal("INTEREST_ABOVE_OFFER");
    const terms = (await api.request("GET", `/checkout/${cheap.id}/terms`, { token: payer.token })).body.data;
    expect(terms.credit).to.deep.include({ eligible: false, reason: "INTEREST_ABOVE_OFFER", totalRepayment: null });
    const failed = await db.prisma.domainEvent.findMany({ where: { type: "payment.failed", userId: merchant.id } });
    expect(failed.map((event) => (event.data as { reason: string }).reason)).to.deep.equal(["not_eligible", "not_eligible"]);
    expect((await api.request("GET", `/v1/payments/${big.id}`, { token: merchant.token })).body.data.status).to.equal("pending");
    expect(await loansOf(payer.token)).to.deep.equal([]);
    expect(await db.prisma.loanRequest.count({ where: { paymentId: { in: [big.id, cheap.id] } } })).to.equal(0);
  });

  it("pays in installments: one loan per installment without interest, due a week apart, 1.5 % each to the treasury", async () => {
    const merchant = await newMerchant();
    const payment = await merchant.create({
      amount: 12.5,
      paymentMethods: ["split"],
      splitOptions: { installments: 3, frequency: "weekly" },
    });
    // 4.166666 per part, the first taking the rest: 4.166668; fees 62,500 + 62,499 + 62,499.
    expect(payment.fees.split).to.deep.equal({ fee: 0.187498, net: 12.312502 });
    const payer = await newTestUser(api, "split-payer");
    const terms = (await api.request("GET", `/checkout/${payment.id}/terms`, { token: payer.token })).body.data;
    expect(terms.split.eligible).to.equal(true);
    expect(terms.split.installments.map((part: { amount: number }) => part.amount)).to.deep.equal([4.166668, 4.166666, 4.166666]);
    const merchantBefore = await balanceOf(merchant.wallet);
    const paid = await pay(payer.token, payment.id, "split");
    expect(paid.status, paid.text).to.equal(200);
    expect(paid.body.data).to.deep.include({ method: "split", fee: 0.187498, net: 12.312502 });
    expect(
      paid.body.data.loans.map((loan: { durationDays: number; totalRepayment: number }) => [loan.durationDays, loan.totalRepayment]),
    ).to.deep.equal([
      [7, 4.166668],
      [14, 4.166666],
      [21, 4.166666],
    ]);
    expect((await balanceOf(merchant.wallet)) - merchantBefore).to.equal(12_312_502n);
    const loans = await loansOf(payer.token);
    expect(loans.map((loan) => loan.status)).to.deep.equal(["active", "active", "active"]);
    // The first installment missed: overdue by the existing rules, a week on.
    expect((await api.request("POST", "/dev/time/advance", { body: { seconds: 8 * 86_400 } })).status).to.equal(200);
    await waitFor(
      async () => (await loansOf(payer.token)).some((loan) => loan.status === "overdue"),
      20_000,
      "the first installment overdue",
    );
    // With three loans open, the payer may not take another.
    const next = await merchant.create({ amount: 3, paymentMethods: ["credit"] });
    const refused = await pay(payer.token, next.id, "credit");
    expectErrorEnvelope(refused, 403, "NOT_ELIGIBLE");
  });

  it("keeps the cap of 3 open loans when a payer pays 4 payments on credit at once, and pays one payment once under 20 attempts", async () => {
    const merchant = await newMerchant();
    const payer = await newTestUser(api, "racing-credit-payer");
    await api.request("PUT", `/dev/users/${payer.id}/plan`, { body: { plan: "enterprise" } });
    const payments = await Promise.all(Array.from({ length: 4 }, () => merchant.create({ amount: 2, paymentMethods: ["credit"] })));
    const answers = await Promise.all(payments.map((payment) => pay(payer.token, payment.id, "credit")));
    const statuses = answers.map((answer) => answer.status);
    expect(
      statuses.filter((status) => status === 200),
      statuses.join(","),
    ).to.have.length(3);
    expect(statuses.filter((status) => status === 403)).to.have.length(1);
    expect((await loansOf(payer.token)).filter((loan) => loan.status === "active")).to.have.length(3);

    const other = await newTestUser(api, "racing-credit-payer-2");
    await api.request("PUT", `/dev/users/${other.id}/plan`, { body: { plan: "enterprise" } });
    const one = await merchant.create({ amount: 4, paymentMethods: ["credit"] });
    const many = await Promise.all(Array.from({ length: 20 }, () => pay(other.token, one.id, "credit")));
    expect(many.filter((answer) => answer.status === 200)).to.have.length(1);
    for (const answer of many.filter((a) => a.status !== 200)) {
      expect(["PAYMENT_IN_PROGRESS", "ALREADY_PAID"]).to.include(answer.body.error.code);
    }
    expect(await loansOf(other.token)).to.have.length(1);
  });

  it("refunds a payment on credit to the payer's loan first, the rest to the payer", async () => {
    const merchant = await newMerchant();
    const payer = await newTestUser(api, "refunded-credit-payer");
    const payment = await merchant.create({ amount: 10, paymentMethods: ["credit"] });
    const paid = await pay(payer.token, payment.id, "credit");
    expect(paid.status, paid.text).to.equal(200);
    const loanId = paid.body.data.loans[0].loanId;
    // The merchant holds 9.80 of it; top it up so it can refund the whole amount.
    await postWithKey(api, "/dev/faucet", merchant.token, { amount: 1 });
    const refund = (amount: number) =>
      api.request("POST", `/v1/payments/${payment.id}/refunds`, { token: merchant.token, body: { amount, reason: "returned" } });
    const first = await refund(4);
    expect(first.status, first.text).to.equal(201);
    expect(first.body.data).to.deep.include({ amount: 4, status: "succeeded" });
    // Owed 10.50 (5 % for the week): 4 of it repaid by the merchant's refund, nothing to the payer's wallet.
    let loan = (await api.request("GET", `/v1/loans/${loanId}`, { token: payer.token })).body.data;
    expect(loan.remainingBalance).to.equal(6.5);
    expect(await balanceOf(payer.wallet)).to.equal(0n);
    // The payer repays 3 themselves (3.50 left); the rest of the amount, 6, closes the loan and 2.50 reaches the payer.
    await postWithKey(api, "/dev/faucet", payer.token, { amount: 3 });
    expect((await postWithKey(api, `/v1/loans/${loanId}/repay`, payer.token, { amount: 3 })).status).to.equal(200);
    expect((await refund(6)).status).to.equal(201);
    loan = (await api.request("GET", `/v1/loans/${loanId}`, { token: payer.token })).body.data;
    expect(loan).to.deep.include({ status: "repaid", remainingBalance: 0 });
    expect(await balanceOf(payer.wallet)).to.equal(2_500_000n);
    expectErrorEnvelope(await refund(0.01), 400, "INVALID_AMOUNT");
    const detail = (await api.request("GET", `/v1/payments/${payment.id}`, { token: merchant.token })).body.data;
    expect(detail.amountRefunded).to.equal(10);
  });
});
