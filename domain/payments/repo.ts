// The only code that reads or writes the payment tables: Payment and PaymentRefund (the service's
// own records) and, read only, the mirror's PaymentChainEvent, which says whether a payment was
// paid and which refunds were made. The router knows a payment by its terms (ref, merchant,
// amount): only an event of the payment's own terms counts for it (OWN_EVENT), so paying its ref
// to another wallet or of another amount does not make it paid. Its status is derived in one
// place (STATUS_SQL).
import { MIRRORED_CHAIN_ID } from "../../core/chain-identity.js";
import { isUuid } from "../../core/text.js";
import { Prisma } from "../../generated/prisma/client.js";
import type { Db, Tx } from "../db.js";
import { aheadOf, type Listing, sqlBeside, sqlWindow } from "../pagination.js";
import { attemptHolds, HOLD_UNTIL, type ProcessPresence } from "../processes/presence.js";

export const PAYMENT_STATUSES = ["pending", "processing", "success", "failed", "expired", "cancelled"] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];
export const REFUND_STATUSES = ["pending", "succeeded", "failed"] as const;
export type RefundStatus = (typeof REFUND_STATUSES)[number];

export interface PaymentRow {
  id: string;
  merchantId: string;
  merchantName: string;
  merchantWallet: string;
  amount: bigint;
  currency: string;
  description: string;
  methods: string[];
  metadata: Record<string, unknown>;
  redirectUrl: string | null;
  cancelUrl: string | null;
  creditOptions: Record<string, unknown> | null;
  splitOptions: Record<string, unknown> | null;
  status: PaymentStatus;
  method: string | null;
  payerId: string | null;
  payerAddress: string | null;
  lastFailure: { reason: string; method: string; at: string } | null;
  createdAt: Date;
  expiresAt: Date;
  cancelledAt: Date | null;
  /** From the mirror, once paid. */
  paidAt: Date | null;
  paidTxHash: string | null;
  paidPayer: string | null;
  fee: bigint | null;
  /** The refunds the mirror has, summed. */
  refunded: bigint;
}

export interface RefundRow {
  id: string;
  paymentId: string;
  amount: bigint;
  reason: string;
  status: RefundStatus;
  failure: string | null;
  createdAt: Date;
  txHash: string | null;
  madeAt: Date | null;
}

/** A UUID's on-chain ref (core/refs.ts), in SQL, of a column (constant text). */
const refOf = (column: string) => Prisma.raw(`'0x' || replace(${column}::text, '-', '') || repeat('0', 32)`);

/** The router's events of payment `p` (its ref, its merchant's wallet, its amount), of `kind`, as `e`. */
const OWN_EVENT = (kind: "paid" | "refunded") => Prisma.sql`e."chainId" = ${MIRRORED_CHAIN_ID} AND e."ref" = ${refOf('p."id"')}
   AND e."merchant" = (SELECT lower(m."walletAddress") FROM "User" m WHERE m."id" = p."merchantId")
   AND e."paymentAmount" = p."amount" AND e."kind" = ${Prisma.raw(`'${kind}'`)}`;

/** A timestamp parameter: the service's timestamps are UTC, without a zone. */
const at = (date: Date) => Prisma.sql`${date.toISOString()}::timestamp(3)`;

/**
 * Whether an attempt holds payment `p`: its process beats and its `heldUntil` (ATTEMPT_HOLD_MAX_S
 * after the claim, real time) has not passed. An attempt that outlived it holds nothing (D-89): no
 * payment stays `processing` for longer, whatever happened to the attempt.
 */
const HELD = attemptHolds("p");

/**
 * A payment's status at `now`: paid (the mirror), cancelled, expired, an attempt holding it, its
 * last attempt failed (the merchant was sent payment.failed; another attempt may still pay it), or
 * pending.
 */
const STATUS_SQL = (now: Date) => Prisma.sql`CASE WHEN paid."txHash" IS NOT NULL THEN 'success'
                         WHEN p."status" = 'cancelled' THEN 'cancelled'
                         WHEN p."expiresAt" <= ${at(now)} THEN 'expired'
                         WHEN ${HELD} THEN 'processing'
                         WHEN p."lastFailure" IS NOT NULL THEN 'failed'
                         ELSE 'pending' END`;

/** The payments as they are at `now`, as `payment`, each a PaymentRow. */
/** A payment's place in a merchant's list. */
type PaymentPlace = { createdAt: Date; id: string };
const PAYMENT_ORDER = [Prisma.sql`"createdAt"`, Prisma.sql`"id"`] as const;

const selectPayments = (now: Date) => Prisma.sql`
  SELECT * FROM (
    SELECT p."id", p."merchantId", u."displayName" AS "merchantName", lower(u."walletAddress") AS "merchantWallet",
           p."amount", p."currency", p."description", p."methods", p."metadata", p."redirectUrl", p."cancelUrl",
           p."creditOptions", p."splitOptions", ${STATUS_SQL(now)} AS "status", p."method", p."payerId", p."payerAddress",
           p."lastFailure", p."createdAt", p."expiresAt", p."cancelledAt",
           paid."timestamp" AS "paidAt", paid."txHash" AS "paidTxHash", paid."payer" AS "paidPayer", paid."fee",
           -- sum() of an int8 is a numeric: back to the column's type.
           coalesce((SELECT sum(e."amount") FROM "PaymentChainEvent" e WHERE ${OWN_EVENT("refunded")}), 0)::bigint AS "refunded"
      FROM "Payment" p
      JOIN "User" u ON u."id" = p."merchantId"
      LEFT JOIN LATERAL (SELECT e."timestamp", e."txHash", e."payer", e."fee" FROM "PaymentChainEvent" e
                          WHERE ${OWN_EVENT("paid")} LIMIT 1) paid ON true
  ) payment`;

/** The refunds, each a RefundRow. */
const SELECT_REFUNDS = Prisma.sql`
  SELECT r."id", r."paymentId", r."amount", r."reason",
         CASE WHEN made."txHash" IS NOT NULL THEN 'succeeded' WHEN r."status" = 'failed' THEN 'failed' ELSE 'pending' END AS "status",
         r."failure", r."createdAt", made."txHash", made."timestamp" AS "madeAt"
    FROM "PaymentRefund" r
    JOIN "Payment" p ON p."id" = r."paymentId"
    LEFT JOIN LATERAL (SELECT e."txHash", e."timestamp" FROM "PaymentChainEvent" e
                        WHERE ${OWN_EVENT("refunded")} AND e."refundRef" = ${refOf('r."id"')} LIMIT 1) made ON true`;

export interface NewPayment {
  id: string;
  merchantId: string;
  amount: bigint;
  description: string;
  methods: string[];
  metadata: Record<string, unknown>;
  redirectUrl: string | null;
  cancelUrl: string | null;
  creditOptions: Record<string, unknown> | null;
  splitOptions: Record<string, unknown> | null;
  createdAt: Date;
  expiresAt: Date;
}

export function createPaymentsRepo({ db, presence }: { db: Db; presence: Pick<ProcessPresence, "id"> }) {
  const { prisma } = db;
  const json = (value: unknown) => value as Prisma.InputJsonValue;
  return {
    async create(payment: NewPayment): Promise<void> {
      await prisma.payment.create({
        data: {
          ...payment,
          currency: "USDC",
          metadata: json(payment.metadata),
          creditOptions: payment.creditOptions === null ? undefined : json(payment.creditOptions),
          splitOptions: payment.splitOptions === null ? undefined : json(payment.splitOptions),
          status: "open",
        },
      });
    },

    /** One payment as it is now (any merchant's: the caller checks who may see it). */
    async find(id: string, now: Date): Promise<PaymentRow | null> {
      const [row] = await prisma.$queryRaw<PaymentRow[]>`${selectPayments(now)} WHERE "id" = ${id}::uuid`;
      return row ?? null;
    },

    /** A merchant's payments for `paginate`, newest first. */
    listing(merchantId: string, now: Date, filter: { status?: PaymentStatus | undefined }): Listing<PaymentPlace, PaymentRow> {
      const where = Prisma.sql`"merchantId" = ${merchantId}${filter.status ? Prisma.sql` AND "status" = ${filter.status}` : Prisma.empty}`;
      const placeSql = (place: PaymentPlace) =>
        [Prisma.sql`${place.createdAt.toISOString()}::timestamp(3)`, Prisma.sql`${place.id}::uuid`] as const;
      return {
        placeOf: async (id) => {
          if (!isUuid(id)) return null;
          const [row] = await prisma.$queryRaw<PaymentPlace[]>`
            SELECT "createdAt", "id"::text AS "id" FROM "Payment" WHERE "id" = ${id}::uuid AND "merchantId" = ${merchantId}`;
          return row ?? null;
        },
        async read(window) {
          const { where: beside, tail, reversed } = sqlWindow(PAYMENT_ORDER, window, placeSql);
          const rows = await prisma.$queryRaw<PaymentRow[]>`${selectPayments(now)} WHERE ${where} AND ${beside} ${tail}`;
          return reversed ? rows.reverse() : rows;
        },
        async count(ahead) {
          const beside = ahead ? sqlBeside(PAYMENT_ORDER, placeSql(ahead.place), aheadOf(ahead.inclusive)) : Prisma.sql`true`;
          const [row] = await prisma.$queryRaw<{ total: number }[]>`
            SELECT count(*)::int AS "total" FROM (${selectPayments(now)} WHERE ${where} AND ${beside}) listed`;
          return row?.total ?? 0;
        },
      };
    },

    /**
     * Takes the payment for one payer's attempt by this process, in one statement: only a payment
     * that is open (or whose holder's process stopped beating: the router pays a ref once), not
     * expired, not cancelled and not paid.
     */
    async claim(
      id: string,
      attempt: { method: string; payerId: string; payerAddress: string },
      now: Date,
      tx: Tx = prisma,
    ): Promise<boolean> {
      const claimedBy = await presence.id();
      const claimed = await tx.$executeRaw`
        UPDATE "Payment" p SET "status" = 'processing', "method" = ${attempt.method}, "payerId" = ${attempt.payerId},
            "payerAddress" = ${attempt.payerAddress}, "claimedAt" = ${at(now)}, "claimedBy" = ${claimedBy}, "heldUntil" = ${HOLD_UNTIL}
          WHERE p."id" = ${id}::uuid AND p."expiresAt" > ${at(now)}
            AND (p."status" = 'open' OR (p."status" = 'processing' AND NOT ${HELD}))
            AND NOT EXISTS (SELECT 1 FROM "PaymentChainEvent" e WHERE ${OWN_EVENT("paid")})`;
      return claimed === 1;
    },

    /**
     * Attempts on credit or in installments that hold their payment no more (their process stopped
     * beating, or their heldUntil passed) and whose payment is not paid: attempts.ts ends them.
     */
    staleFinancedAttempts: () =>
      prisma.$queryRaw<(Pick<PaymentRow, "id" | "merchantId" | "amount" | "metadata" | "payerId"> & { method: string })[]>`
        SELECT p."id", p."merchantId", p."amount", p."metadata", p."payerId", p."method" FROM "Payment" p
         WHERE p."status" = 'processing' AND p."method" IN ('credit', 'split') AND NOT ${HELD}
           AND NOT EXISTS (SELECT 1 FROM "PaymentChainEvent" e WHERE ${OWN_EVENT("paid")})
         ORDER BY p."claimedAt" LIMIT 100`,

    /**
     * Gives an attempt's hold back (it failed before anything moved), saying why; in the caller's
     * transaction. False when the payment was not held (another run ended the attempt first).
     */
    async release(tx: Tx, id: string, failure: { reason: string; method: string; at: string } | null): Promise<boolean> {
      const { count } = await tx.payment.updateMany({
        where: { id, status: "processing" },
        data: { status: "open", claimedAt: null, claimedBy: null, heldUntil: null, ...(failure ? { lastFailure: json(failure) } : {}) },
      });
      return count === 1;
    },

    /** Records a failed attempt on an open payment (a test address's decline), in the caller's transaction. */
    async recordFailure(tx: Tx, id: string, failure: { reason: string; method: string; at: string }): Promise<void> {
      await tx.payment.update({ where: { id }, data: { lastFailure: json(failure) } });
    },

    /** Cancels an open payment (not one an attempt holds or that was paid); false when it was not open. */
    async cancel(id: string, now: Date): Promise<boolean> {
      const cancelled = await prisma.$executeRaw`
        UPDATE "Payment" p SET "status" = 'cancelled', "cancelledAt" = ${at(now)}
          WHERE p."id" = ${id}::uuid AND p."status" = 'open' AND p."expiresAt" > ${at(now)}
            AND NOT EXISTS (SELECT 1 FROM "PaymentChainEvent" e WHERE ${OWN_EVENT("paid")})`;
      return cancelled === 1;
    },

    /** Records a refund request (once per id: a retry of the same request finds it); answers whether it is new. */
    async addRefund(refund: { id: string; paymentId: string; amount: bigint; reason: string; createdAt: Date }): Promise<boolean> {
      const { count } = await prisma.paymentRefund.createMany({ data: [{ ...refund, status: "pending" }], skipDuplicates: true });
      return count === 1;
    },

    async failRefund(id: string, failure: string): Promise<void> {
      await prisma.paymentRefund.updateMany({ where: { id, status: "pending" }, data: { status: "failed", failure } });
    },

    async refund(id: string): Promise<RefundRow | null> {
      const [row] = await prisma.$queryRaw<RefundRow[]>`${SELECT_REFUNDS} WHERE r."id" = ${id}::uuid`;
      return row ?? null;
    },

    /** A payment's refunds, oldest first. */
    async refunds(paymentId: string): Promise<RefundRow[]> {
      return prisma.$queryRaw<RefundRow[]>`${SELECT_REFUNDS} WHERE r."paymentId" = ${paymentId}::uuid ORDER BY r."createdAt", r."id"`;
    },

    /** The merchant (and its wallet) and metadata of payments, for their events (in the consumer's transaction). */
    async forEvents(tx: Tx, ids: string[]) {
      const rows = await tx.payment.findMany({
        where: { id: { in: ids } },
        select: {
          id: true,
          merchantId: true,
          payerId: true,
          method: true,
          description: true,
          metadata: true,
          amount: true,
          merchant: { select: { walletAddress: true } },
        },
      });
      return new Map(rows.map((row) => [row.id, { ...row, merchantWallet: row.merchant.walletAddress?.toLowerCase() ?? null }]));
    },

    /** Records a checkout sign-in under way (its state is the key the callback brings back). */
    async startSignIn(signIn: { state: string; paymentId: string; codeVerifier: string; nonce: string; createdAt: Date }): Promise<void> {
      await prisma.checkoutSignIn.create({ data: signIn });
    },

    /** Takes a sign-in by its state, once, if it began after `notBefore`; older ones go with it. */
    async takeSignIn(state: string, notBefore: Date) {
      const [taken] = await prisma.$queryRaw<{ paymentId: string; codeVerifier: string; nonce: string }[]>`
        DELETE FROM "CheckoutSignIn" WHERE "state" = ${state} AND "createdAt" > ${at(notBefore)}
        RETURNING "paymentId", "codeVerifier", "nonce"`;
      await prisma.checkoutSignIn.deleteMany({ where: { createdAt: { lte: notBefore } } });
      return taken ?? null;
    },

    async refundReasons(tx: Tx, ids: string[]) {
      const rows = await tx.paymentRefund.findMany({ where: { id: { in: ids } }, select: { id: true, reason: true } });
      return new Map(rows.map((row) => [row.id, row.reason]));
    },
  };
}

export type PaymentsRepo = ReturnType<typeof createPaymentsRepo>;
