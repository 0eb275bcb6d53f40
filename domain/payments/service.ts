// Merchants' payments (service-spec part 4 Payments; D-81), the merchant's side: a merchant creates
// a payment and sends its payer to the hosted checkout (the payer's side: checkout.ts), reads it,
// lists it, cancels it while open and refunds it. Every movement of USDC is a transaction of the
// PaymentRouter (contracts/payments), the payer's or the merchant's own, through the one user
// write; whether a payment was paid and which refunds were made is the mirror's.
import { createHash, randomUUID } from "node:crypto";
import type { Contract } from "ethers";
import type { Clock } from "../../core/clock.js";
import { formatUsdc2, usdcNumber } from "../../core/money.js";
import { refFromUuid } from "../../core/refs.js";
import { isUuid } from "../../core/text.js";
import { AppError } from "../errors.js";
import type { OperationKey } from "../idempotency/operation-key.js";
import { type PageRequest, paginate } from "../pagination.js";
import type { UserWrite } from "../transactions/user-write.js";
import type { UserRecord } from "../users/repo.js";
import type { PaymentEvents } from "./events.js";
import { financingRefusal } from "./financing.js";
import type { PaymentRow, PaymentStatus, PaymentsRepo, RefundRow } from "./repo.js";
import { methodFee, type PaymentMethod, payRefusal, redirectRefusal, requirePayment } from "./rules.js";

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
  clock: Pick<Clock, "now">;
  repo: PaymentsRepo;
  /** The PaymentRouter (refunds go through `userWrite`). */
  router: Contract;
  userWrite: UserWrite;
  /** Turns mirrored facts into the merchant's events; run after a write so its event exists when it answers. */
  events: Pick<PaymentEvents, "take" | "consumer">;
  /** Where payers are sent: `${checkoutBase}/checkout/{id}` (PUBLIC_BASE_URL). */
  checkoutBase: string;
  production: boolean;
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

  return {
    async create(merchant: UserRecord, input: CreatePaymentInput) {
      for (const field of ["redirectUrl", "cancelUrl"] as const) {
        const url = input[field];
        const refused = url === undefined ? null : redirectRefusal(url, deps.production);
        if (refused) throw new AppError("VALIDATION_ERROR", `${field} ${refused}`, { field, reason: refused });
      }
      // A method no payer could use is refused now, not at the checkout (D-89).
      for (const method of ["credit", "split"] as const) {
        const tooSmall = input.paymentMethods.includes(method)
          ? financingRefusal(method, input.amount, input.splitOptions as { installments?: number } | null)
          : null;
        if (tooSmall) throw new AppError("VALIDATION_ERROR", `paymentMethods: ${tooSmall}`, { field: "paymentMethods", reason: tooSmall });
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

    async list(merchant: UserRecord, filter: { status?: PaymentStatus | undefined }, page: PageRequest) {
      const { data, pagination } = await paginate(page, repo.listing(merchant.id, deps.clock.now(), filter));
      return { data: data.map((row) => viewOf(row)), pagination };
    },

    /** Expires an open payment now, as Stripe's expire does (an attempt under way or a paid one cannot be). */
    async cancel(merchant: UserRecord, id: string) {
      const row = await ownPayment(merchant, id);
      if (!(await repo.cancel(row.id, deps.clock.now()))) {
        const now = requirePayment(await repo.find(row.id, deps.clock.now()));
        throw payRefusal(now) ?? new AppError("CONFLICT", "This payment can no longer be cancelled");
      }
      return viewOf((await repo.find(row.id, deps.clock.now()))!);
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
      let sent: Awaited<ReturnType<UserWrite["send"]>>;
      try {
        sent = await deps.userWrite.send({
          user: merchant,
          purpose: "payment.refund",
          operation,
          to: routerAddress,
          call: {
            pulls: { spender: routerAddress, value: amount },
            data: router.interface.encodeFunctionData("refund", [refFromUuid(row.id), row.amount, refFromUuid(refundId), amount]),
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
      await deps.events.take(deps.clock.now(), deps.userWrite.eventIds(sent, deps.events.consumer.types));
      return refundViewOf((await repo.refund(refundId))!);
    },

    async refunds(merchant: UserRecord, id: string) {
      const row = await ownPayment(merchant, id);
      return (await repo.refunds(row.id)).map(refundViewOf);
    },
  };
}

export type PaymentsService = ReturnType<typeof createPaymentsService>;
