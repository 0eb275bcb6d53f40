// Merchants' payments (service-spec part 4 Payments; D-81): a merchant creates a payment and sends
// its payer to the hosted checkout, where the payer pays it with one of the allowed methods; the
// merchant reads it, lists it, cancels it while open and refunds it. Every movement of USDC is a
// transaction of the PaymentRouter (contracts/payments), the payer's or the merchant's own, through
// the one user write; whether a payment was paid and which refunds were made is the mirror's.
import { createHash, randomUUID } from "node:crypto";
import { type Contract, getAddress } from "ethers";
import type { Clock } from "../../core/clock.js";
import { formatUsdc2, usdcNumber } from "../../core/money.js";
import { refFromUuid } from "../../core/refs.js";
import { isUuid } from "../../core/text.js";
import type { Db } from "../db.js";
import { AppError } from "../errors.js";
import { domainEvent, recordEvents } from "../events/outbox.js";
import type { OperationKey } from "../idempotency/operation-key.js";
import type { LoanFinancing } from "../loans/financing.js";
import { chainFailure } from "../transactions/failures.js";
import type { MirrorWait } from "../transactions/read-your-writes.js";
import type { TransactionSender } from "../transactions/sender.js";
import type { UserWrite } from "../transactions/user-write.js";
import type { UserRecord } from "../users/repo.js";
import type { PaymentEvents } from "./events.js";
import { type FinancingPlan, type Frequency, loanCountOf, planOf, splitSchedule } from "./financing.js";
import type { PaymentRow, PaymentStatus, PaymentsRepo, RefundRow } from "./repo.js";

export const PAYMENT_METHODS = ["direct", "credit", "split"] as const;
export type PaymentMethod = (typeof PAYMENT_METHODS)[number];
/** The fee of each method, in basis points of the amount (service-spec part 2); the router charges direct's on chain. */
export const FEE_BPS: Record<PaymentMethod, bigint> = { direct: 100n, credit: 200n, split: 150n };
/** A checkout's life (Stripe Checkout's bounds): 30 minutes to 24 hours, 24 hours unless the merchant says otherwise. */
export const MIN_EXPIRY_S = 1_800;
export const MAX_EXPIRY_S = 86_400;
/** The merchant's metadata, serialized, at most (Stripe allows 50 keys of 500 characters: about this much). */
export const METADATA_MAX_BYTES = 4_096;
/** run-and-sandbox.md section 4: payers at these addresses always fail, outside the real flow. */
export const DECLINING_ADDRESS = "0x000000000000000000000000000000000000dec1";
export const INSUFFICIENT_FUNDS_ADDRESS = "0x00000000000000000000000000000000000f0001";
/** Why an attempt failed, in `payment.failed`: the test addresses, an empty wallet, the payer's eligibility, the pool's liquidity. */
export type FailureReason = "declined" | "insufficient_funds" | "not_eligible" | "insufficient_liquidity";

/** The router's and the pool's refusals of a payment on credit, as the spec's codes. */
function financedRevert(revert: { name: string; args: unknown[] }): AppError | undefined {
  switch (revert.name) {
    case "PaymentRouterAlreadyPaid":
      return new AppError("ALREADY_PAID", "This payment was paid already");
    case "StakingVaultInsufficientLiquidity":
      return new AppError("INSUFFICIENT_LIQUIDITY", "The lending pool cannot fund this payment now; pay directly or try later", {
        field: "method",
        reason: "not enough liquidity in the pool",
      });
    case "EnforcedPause":
      return new AppError("VAULT_PAUSED", "The lending pool is temporarily paused");
    default:
      return undefined;
  }
}

export interface CreatePaymentInput {
  amount: bigint;
  description: string;
  paymentMethods: PaymentMethod[];
  metadata: Record<string, unknown>;
  redirectUrl?: string | undefined;
  cancelUrl?: string | undefined;
  expiresIn: number;
  creditOptions?: { maxDuration?: number | undefined; maxInterest?: number | undefined } | undefined;
  splitOptions?: { installments?: number | undefined; frequency?: string | undefined } | undefined;
}

export interface PaymentsServiceDeps {
  db: Db;
  clock: Pick<Clock, "now">;
  repo: PaymentsRepo;
  /** The PaymentRouter (writes go through `userWrite`). */
  router: Contract;
  userWrite: UserWrite;
  /** Turns mirrored facts into the merchant's events; run after a write so its event exists when it answers. */
  events: Pick<PaymentEvents, "run">;
  /** The payer's loans of a payment on credit or in installments (the loans domain's rules). */
  financing: Pick<LoanFinancing, "eligibility" | "reserve" | "settle">;
  /** The service's own sender: the router's OPERATOR_ROLE pays a payment on credit (the pool lends, the payer owes). */
  sender: Pick<TransactionSender, "send">;
  mirror: Pick<MirrorWait, "untilIndexed">;
  /** Where payers are sent: `${checkoutBase}/checkout/{id}` (PUBLIC_BASE_URL). */
  checkoutBase: string;
  production: boolean;
}

/** A fee in micro-USDC: the basis points of `amount`, rounded down as the router does (the merchant's favour). */
export const feeOf = (amount: bigint, method: PaymentMethod) => (amount * FEE_BPS[method]) / 10_000n;

/** The fee a method takes from a payment: split's is each installment's, rounded down one by one. */
function methodFee(amount: bigint, method: PaymentMethod, splitOptions: { installments?: number } | null): bigint {
  if (method !== "split") return feeOf(amount, method);
  return splitSchedule(amount, splitOptions).reduce((sum, part) => sum + feeOf(part.amount, "split"), 0n);
}

/** Why a redirect URL is refused, or null: https, or http on loopback outside production (no user name, no fragment). */
export function redirectRefusal(text: string, production: boolean): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "must be an absolute https URL";
  }
  if (url.username || url.password) return "must not carry a user name or password";
  const loopback = ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname);
  if (url.protocol === "https:" || (url.protocol === "http:" && loopback && !production)) return null;
  return production ? "must be an https URL" : "must be an https URL (or http on 127.0.0.1, localhost or [::1] outside production)";
}

/** The id of a refund asked for with this operation: a retry of the request (the same Idempotency-Key) finds it, and the router makes it once. */
function refundIdOf(merchantId: string, operation: OperationKey): string {
  const hex = createHash("sha256").update(`payment-refund:${merchantId}:${operation.idempotencyKey}`).digest("hex");
  // A version-4-shaped UUID from the hash's first 16 bytes.
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${((Number.parseInt(hex[16]!, 16) & 3) | 8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

export function createPaymentsService(deps: PaymentsServiceDeps) {
  const { repo, router } = deps;
  const routerAddress = router.target as string;
  const checkoutUrlOf = (id: string) => `${deps.checkoutBase}/checkout/${id}`;

  /** What each allowed method costs the merchant and leaves them. */
  const feesOf = (
    row: Pick<PaymentRow, "amount" | "methods" | "splitOptions">,
  ): Partial<Record<PaymentMethod, { fee: number; net: number }>> =>
    Object.fromEntries(
      row.methods.map((method) => {
        const fee = methodFee(row.amount, method as PaymentMethod, row.splitOptions as { installments?: number } | null);
        return [method, { fee: usdcNumber(fee), net: usdcNumber(row.amount - fee) }];
      }),
    );

  /** The merchant's view (service-spec part 4: "not shown"; D-81). */
  function viewOf(row: PaymentRow) {
    const paid = row.paidTxHash !== null;
    const fee = paid ? (row.fee ?? 0n) : null;
    return {
      id: row.id,
      status: row.status,
      amount: usdcNumber(row.amount),
      currency: "USDC" as const,
      description: row.description,
      paymentMethods: row.methods as PaymentMethod[],
      metadata: row.metadata,
      fees: feesOf(row),
      checkoutUrl: checkoutUrlOf(row.id),
      redirectUrl: row.redirectUrl,
      cancelUrl: row.cancelUrl,
      expiresAt: row.expiresAt.toISOString(),
      createdAt: row.createdAt.toISOString(),
      cancelledAt: row.cancelledAt?.toISOString() ?? null,
      method: paid || row.status === "processing" ? (row.method as PaymentMethod | null) : null,
      payerId: paid ? row.payerId : null,
      paidAt: row.paidAt?.toISOString() ?? null,
      fee: fee === null ? null : usdcNumber(fee),
      net: fee === null ? null : usdcNumber(row.amount - fee),
      amountRefunded: usdcNumber(row.refunded),
      txHash: row.paidTxHash,
      lastFailure: row.lastFailure,
    };
  }

  const refundViewOf = (row: RefundRow) => ({
    id: row.id,
    paymentId: row.paymentId,
    amount: usdcNumber(row.amount),
    reason: row.reason,
    status: row.status,
    failure: row.failure,
    txHash: row.txHash,
    createdAt: row.createdAt.toISOString(),
  });

  /** The merchant's own payment, or PAYMENT_NOT_FOUND (another merchant's, an unknown or malformed id). */
  async function ownPayment(merchant: UserRecord, id: string): Promise<PaymentRow> {
    const row = isUuid(id) ? await repo.find(id, deps.clock.now()) : null;
    if (!row || row.merchantId !== merchant.id) throw new AppError("PAYMENT_NOT_FOUND", "No such payment");
    return row;
  }

  async function anyPayment(id: string): Promise<PaymentRow> {
    const row = isUuid(id) ? await repo.find(id, deps.clock.now()) : null;
    if (!row) throw new AppError("PAYMENT_NOT_FOUND", "No such payment");
    return row;
  }

  /** Why an attempt cannot pay this payment now, as its error; null when it may. */
  function payRefusal(row: PaymentRow): AppError | null {
    switch (row.status) {
      case "success":
        return new AppError("ALREADY_PAID", "This payment was paid already");
      case "cancelled":
        return new AppError("PAYMENT_CANCELLED", "The merchant cancelled this payment");
      case "expired":
        return new AppError("PAYMENT_EXPIRED", `This payment expired at ${row.expiresAt.toISOString()}`);
      case "processing":
        return new AppError("PAYMENT_IN_PROGRESS", "An attempt to pay this payment is under way; try again in a moment", undefined, 5);
      default:
        return null;
    }
  }

  /** A failed attempt: said on the payment and as `payment.failed` to the merchant, the payment open for another. */
  async function recordFailure(row: PaymentRow, method: string, reason: FailureReason, held: boolean) {
    const now = deps.clock.now();
    const failure = { reason, method, at: now.toISOString() };
    await deps.db.prisma.$transaction(async (tx) => {
      if (held) await repo.release(tx, row.id, failure);
      else await repo.recordFailure(tx, row.id, failure);
      await recordEvents(tx, [
        domainEvent({
          type: "payment.failed",
          userId: row.merchantId,
          data: {
            type: "payment.failed",
            paymentId: row.id,
            amount: usdcNumber(row.amount),
            currency: "USDC",
            method,
            reason,
            metadata: row.metadata,
            failedAt: failure.at,
          },
          dedupeKey: `payment-failed:${row.id}:${randomUUID()}`,
          now,
        }),
      ]);
    });
  }

  /** The payer's plan for a payment on credit or in installments, at their tier now; NOT_ELIGIBLE otherwise. */
  async function planFor(payer: UserRecord, row: PaymentRow, method: "credit" | "split"): Promise<FinancingPlan> {
    const tier = await deps.financing.eligibility(payer, loanCountOf(method, row.splitOptions as { installments?: number } | null));
    return planOf(method, row.amount, FEE_BPS[method], tier, {
      creditOptions: row.creditOptions as { maxDuration?: number; maxInterest?: number } | null,
      splitOptions: row.splitOptions as { installments?: number; frequency?: Frequency } | null,
    });
  }

  /**
   * Pays a payment on credit or in installments: the payer's plan at their tier, then, in one
   * transaction, the payment's hold and the plan's loans (eligibility checked again under the
   * payer's row lock, so the cap of open loans holds), then the router's `payWithLoans` sent by
   * the service (the pool lends, the merchant and the treasury are paid, the payer owes).
   */
  async function payFinanced(payer: UserRecord, row: PaymentRow, method: "credit" | "split") {
    let plan: FinancingPlan;
    try {
      plan = await planFor(payer, row, method);
    } catch (error) {
      if (error instanceof AppError && error.code === "NOT_ELIGIBLE") await recordFailure(row, method, "not_eligible", false);
      throw error;
    }
    const wallet = payer.walletAddress!.toLowerCase();
    const held = await deps.db.prisma
      .$transaction(async (tx) => {
        if (!(await repo.claim(row.id, { method, payerId: payer.id, payerAddress: wallet }, deps.clock.now(), tx))) return false;
        const purpose = `Payment to ${row.merchantName}${row.description ? `: ${row.description}` : ""}`.slice(0, 200);
        await deps.financing.reserve(tx, payer, { paymentId: row.id, installments: plan.loans, purpose, rateBps: plan.rateBps });
        return true;
      })
      .catch(async (error: unknown) => {
        if (error instanceof AppError && error.code === "NOT_ELIGIBLE") await recordFailure(row, method, "not_eligible", false);
        throw error;
      });
    if (!held) throw payRefusal(await anyPayment(row.id)) ?? new AppError("PAYMENT_IN_PROGRESS", "Try again in a moment", undefined, 5);
    let sent: Awaited<ReturnType<TransactionSender["send"]>>;
    try {
      sent = await deps.sender
        .send({
          purpose: "payment.finance",
          userId: payer.id,
          // This attempt's: its loans are new, so a later attempt is a transaction of its own.
          idempotencyKey: `payment:${row.id}:${plan.loans[0]!.id}`,
          to: routerAddress,
          data: router.interface.encodeFunctionData("payWithLoans", [
            refFromUuid(row.id),
            getAddress(row.merchantWallet),
            getAddress(wallet),
            plan.loans.map((loan) => [refFromUuid(loan.id), loan.principal, loan.interest, loan.fee, loan.durationDays]),
          ]),
        })
        .catch((error) => chainFailure(error, financedRevert));
    } catch (error) {
      // Refused before anything moved: the loans are cancelled and the hold goes back (a shortfall of the pool's is the merchant's payment.failed).
      if (error instanceof AppError && error.code !== "SERVICE_UNAVAILABLE") {
        await deps.financing.settle(row.id, null);
        if (error.code === "INSUFFICIENT_LIQUIDITY") await recordFailure(row, method, "insufficient_liquidity", true);
        else await deps.db.prisma.$transaction((tx) => repo.release(tx, row.id, null));
      }
      throw error;
    }
    await deps.mirror.untilIndexed(sent.blockNumber);
    await deps.financing.settle(row.id, sent.txHash);
    await deps.events.run(deps.clock.now());
    return {
      paymentId: row.id,
      status: "success" as const,
      method,
      amount: usdcNumber(row.amount),
      fee: usdcNumber(plan.fee),
      net: usdcNumber(row.amount - plan.fee),
      txHash: sent.txHash,
      redirectUrl: row.redirectUrl === null ? null : withPaymentId(row.redirectUrl, row.id),
      loans: plan.loans.map((loan) => ({
        loanId: loan.id,
        amount: usdcNumber(loan.principal),
        totalRepayment: usdcNumber(loan.principal + loan.interest),
        durationDays: loan.durationDays,
      })),
    };
  }

  return {
    async create(merchant: UserRecord, input: CreatePaymentInput) {
      for (const field of ["redirectUrl", "cancelUrl"] as const) {
        const url = input[field];
        const refused = url === undefined ? null : redirectRefusal(url, deps.production);
        if (refused) throw new AppError("VALIDATION_ERROR", `${field} ${refused}`, { field, reason: refused });
      }
      const now = deps.clock.now();
      const id = randomUUID();
      await repo.create({
        id,
        merchantId: merchant.id,
        amount: input.amount,
        description: input.description,
        methods: [...new Set(input.paymentMethods)],
        metadata: input.metadata,
        redirectUrl: input.redirectUrl ?? null,
        cancelUrl: input.cancelUrl ?? null,
        creditOptions: input.creditOptions ?? null,
        splitOptions: input.splitOptions ?? null,
        createdAt: now,
        expiresAt: new Date(now.getTime() + input.expiresIn * 1_000),
      });
      return viewOf((await repo.find(id, now))!);
    },

    /** One of the merchant's payments, with its refunds. */
    async get(merchant: UserRecord, id: string) {
      const row = await ownPayment(merchant, id);
      return { ...viewOf(row), refunds: (await repo.refunds(row.id)).map(refundViewOf) };
    },

    async list(merchant: UserRecord, query: { limit: number; offset: number; status?: PaymentStatus | undefined }) {
      const { rows, total } = await repo.list(merchant.id, deps.clock.now(), query);
      return {
        data: rows.map((row) => viewOf(row)),
        pagination: { total, limit: query.limit, offset: query.offset, hasMore: query.offset + rows.length < total },
      };
    },

    /** Expires an open payment now, as Stripe's expire does (an attempt under way or a paid one cannot be). */
    async cancel(merchant: UserRecord, id: string) {
      const row = await ownPayment(merchant, id);
      if (!(await repo.cancel(row.id, deps.clock.now()))) {
        const now = await anyPayment(row.id);
        throw payRefusal(now) ?? new AppError("CONFLICT", "This payment can no longer be cancelled");
      }
      return viewOf((await repo.find(row.id, deps.clock.now()))!);
    },

    /** What the hosted checkout shows of a payment: public to whoever has its link (the merchant's name, never its ids or metadata). */
    async checkout(id: string) {
      const row = await anyPayment(id);
      return {
        id: row.id,
        status: row.status,
        merchantName: row.merchantName,
        description: row.description,
        amount: row.amount,
        methods: row.methods as PaymentMethod[],
        expiresAt: row.expiresAt,
        redirectUrl: row.redirectUrl,
        cancelUrl: row.cancelUrl,
        schedule: row.methods.includes("split")
          ? splitSchedule(row.amount, row.splitOptions as { installments?: number; frequency?: Frequency } | null)
          : [],
      };
    },

    /**
     * A payer pays (run-and-sandbox.md section 4). The payment is held for this attempt in one
     * statement (20 concurrent attempts: one holds it, the others are refused), then paid by the
     * payer's own transaction through the router, which pays a ref at most once whatever happens
     * to the hold. The test addresses fail without moving anything.
     */
    async pay(payer: UserRecord, id: string, input: { method: PaymentMethod; payerAddress?: string | undefined }, operation: OperationKey) {
      const row = await anyPayment(id);
      const refused = payRefusal(row);
      if (refused) throw refused;
      if (!row.methods.includes(input.method)) {
        throw new AppError("VALIDATION_ERROR", `This payment takes ${row.methods.join(", ")}`, {
          field: "method",
          reason: `one of ${row.methods.join(", ")}`,
        });
      }
      const wallet = payer.walletAddress!.toLowerCase();
      const payerAddress = (input.payerAddress ?? wallet).toLowerCase();
      if (payerAddress === DECLINING_ADDRESS || payerAddress === INSUFFICIENT_FUNDS_ADDRESS) {
        const declined = payerAddress === DECLINING_ADDRESS;
        await recordFailure(row, input.method, declined ? "declined" : "insufficient_funds", false);
        throw declined
          ? new AppError("PAYMENT_DECLINED", "The payment was declined (test address)", { field: "payerAddress", reason: "declined" })
          : new AppError("INSUFFICIENT_BALANCE", "Not enough USDC to pay (test address)", {
              field: "payerAddress",
              reason: "insufficient funds",
            });
      }
      // The service signs only for the payer's managed wallet: in production the address must be it.
      if (deps.production && payerAddress !== wallet) {
        throw new AppError("VALIDATION_ERROR", "payerAddress must be your own wallet", {
          field: "payerAddress",
          reason: "not your wallet",
        });
      }
      if (input.method !== "direct") return payFinanced(payer, row, input.method);
      if (!(await repo.claim(row.id, { method: input.method, payerId: payer.id, payerAddress: wallet }, deps.clock.now()))) {
        throw payRefusal(await anyPayment(row.id)) ?? new AppError("PAYMENT_IN_PROGRESS", "Try again in a moment", undefined, 5);
      }
      let sent: Awaited<ReturnType<UserWrite["send"]>>;
      try {
        sent = await deps.userWrite.send({
          user: payer,
          purpose: "payment.pay",
          operation,
          to: routerAddress,
          call: {
            permit: { spender: routerAddress, value: row.amount },
            data: (permit) =>
              router.interface.encodeFunctionData("payWithPermit", [
                refFromUuid(row.id),
                getAddress(row.merchantWallet),
                row.amount,
                permit.deadline,
                permit.v,
                permit.r,
                permit.s,
              ]),
          },
          reverts: (revert) =>
            revert.name === "PaymentRouterAlreadyPaid" ? new AppError("ALREADY_PAID", "This payment was paid already") : undefined,
        });
      } catch (error) {
        // Refused before anything moved: the hold goes back (and a wallet short of USDC is the merchant's payment.failed).
        if (error instanceof AppError && error.code !== "SERVICE_UNAVAILABLE") {
          if (error.code === "INSUFFICIENT_BALANCE") await recordFailure(row, input.method, "insufficient_funds", true);
          else await deps.db.prisma.$transaction((tx) => repo.release(tx, row.id, null));
        }
        throw error;
      }
      await deps.events.run(deps.clock.now());
      const after = (await repo.find(row.id, deps.clock.now()))!;
      const fee = after.fee ?? feeOf(row.amount, "direct");
      return {
        paymentId: row.id,
        status: "success" as const,
        method: input.method,
        amount: usdcNumber(row.amount),
        fee: usdcNumber(fee),
        net: usdcNumber(row.amount - fee),
        txHash: sent.txHash,
        redirectUrl: row.redirectUrl === null ? null : withPaymentId(row.redirectUrl, row.id),
        loans: [],
      };
    },

    /**
     * The merchant refunds part or all of a paid payment from their own wallet (they bear the
     * fee). The refund is recorded before its transaction is sent, under an id its operation gives
     * (a retry with the same Idempotency-Key is the same refund); the router keeps the refunds
     * within the amount and makes each once.
     */
    async refund(merchant: UserRecord, id: string, input: { amount?: bigint | undefined; reason: string }, operation: OperationKey) {
      const row = await ownPayment(merchant, id);
      if (row.paidTxHash === null) throw new AppError("PAYMENT_NOT_PAID", "Only a paid payment can be refunded");
      const refundId = refundIdOf(merchant.id, operation);
      const earlier = await repo.refund(refundId);
      if (earlier?.status === "succeeded") return refundViewOf(earlier);
      const pending = (await repo.refunds(row.id)).filter((refund) => refund.status === "pending" && refund.id !== refundId);
      const left = row.amount - row.refunded - pending.reduce((sum, refund) => sum + refund.amount, 0n);
      const amount = input.amount ?? left;
      if (amount <= 0n || amount > left) {
        throw new AppError("INVALID_AMOUNT", `At most ${formatUsdc2(left)} USDC of this payment is left to refund`, {
          field: "amount",
          reason: `more than 0 and at most ${usdcNumber(left)}`,
        });
      }
      if (!earlier) await repo.addRefund({ id: refundId, paymentId: row.id, amount, reason: input.reason, createdAt: deps.clock.now() });
      try {
        await deps.userWrite.send({
          user: merchant,
          purpose: "payment.refund",
          operation,
          to: routerAddress,
          call: {
            permit: { spender: routerAddress, value: amount },
            data: (permit) =>
              router.interface.encodeFunctionData("refundWithPermit", [
                refFromUuid(row.id),
                row.amount,
                refFromUuid(refundId),
                amount,
                permit.deadline,
                permit.v,
                permit.r,
                permit.s,
              ]),
          },
          reverts: (revert) => {
            if (revert.name === "PaymentRouterRefundTooLarge") {
              return new AppError("INVALID_AMOUNT", `At most ${formatUsdc2(revert.args[2] as bigint)} USDC is left to refund`, {
                field: "amount",
                reason: `at most ${usdcNumber(revert.args[2] as bigint)}`,
              });
            }
            return undefined;
          },
        });
      } catch (error) {
        // Refused before anything moved (a wallet short of USDC, say): the refund failed, and says why.
        if (error instanceof AppError && error.code !== "SERVICE_UNAVAILABLE") await repo.failRefund(refundId, error.message);
        throw error;
      }
      await deps.events.run(deps.clock.now());
      return refundViewOf((await repo.refund(refundId))!);
    },

    /** What each of the payment's methods would cost the signed-in payer now (the checkout shows it before they choose). */
    async terms(payer: UserRecord, id: string) {
      const row = await anyPayment(id);
      const now = deps.clock.now().getTime();
      const dueDate = (days: number) => new Date(now + days * 86_400_000).toISOString();
      const quote = async (method: "credit" | "split") => {
        try {
          return { plan: await planFor(payer, row, method), reason: null };
        } catch (error) {
          if (error instanceof AppError && error.code === "NOT_ELIGIBLE")
            return { plan: null, reason: error.details?.reason ?? "NOT_ELIGIBLE" };
          throw error;
        }
      };
      const terms: {
        direct?: { total: number };
        credit?: {
          eligible: boolean;
          reason: string | null;
          interestRate: number | null;
          interest: number | null;
          totalRepayment: number | null;
          dueDate: string | null;
        };
        split?: { eligible: boolean; reason: string | null; installments: { amount: number; totalRepayment: number; dueDate: string }[] };
      } = {};
      if (row.methods.includes("direct")) terms.direct = { total: usdcNumber(row.amount) };
      if (row.methods.includes("credit")) {
        const { plan, reason } = await quote("credit");
        const loan = plan?.loans[0];
        terms.credit = {
          eligible: plan !== null,
          reason,
          interestRate: plan ? plan.rateBps / 10_000 : null,
          interest: loan ? usdcNumber(loan.interest) : null,
          totalRepayment: plan ? usdcNumber(plan.totalRepayment) : null,
          dueDate: loan ? dueDate(loan.durationDays) : null,
        };
      }
      if (row.methods.includes("split")) {
        const { plan, reason } = await quote("split");
        terms.split = {
          eligible: plan !== null,
          reason,
          installments: (plan?.loans ?? []).map((loan) => ({
            amount: usdcNumber(loan.principal),
            totalRepayment: usdcNumber(loan.principal + loan.interest),
            dueDate: dueDate(loan.durationDays),
          })),
        };
      }
      return terms;
    },

    async refunds(merchant: UserRecord, id: string) {
      const row = await ownPayment(merchant, id);
      return (await repo.refunds(row.id)).map(refundViewOf);
    },
  };
}

/** `url` with `paymentId` added to its query (the merchant reads which payment came back). */
export function withPaymentId(url: string, paymentId: string): string {
  const target = new URL(url);
  target.searchParams.set("paymentId", paymentId);
  return target.href;
}

export type PaymentsService = ReturnType<typeof createPaymentsService>;
