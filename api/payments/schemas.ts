import { z } from "zod";
import { MAX_ACTIVE_LOANS } from "../../domain/loans/eligibility.js";
import { PAYMENT_STATUSES, REFUND_STATUSES } from "../../domain/payments/repo.js";
import { MAX_EXPIRY_S, METADATA_MAX_BYTES, MIN_EXPIRY_S, PAYMENT_METHODS } from "../../domain/payments/rules.js";
import { usdcAmount } from "../http/input.js";
import { listQuery } from "../http/pagination.js";

// One schema per route part (service-spec part 4 Payments; D-81): they validate, type the
// handlers and generate the OpenAPI document. Payment money values are JSON numbers of USDC, exact
// to the micro-USDC, as the request's amount is.

const usdc = (what: string) => z.number().describe(`${what}, USDC`);
const isoDate = z.string().describe("ISO 8601 UTC timestamp");
const txHash = z
  .string()
  .regex(/^0x[0-9a-f]{64}$/)
  .describe("hash of the transaction on chain");
/** The largest payment: far above any test balance, far below the router's 128-bit amounts. */
const MAX_PAYMENT_USDC = 1_000_000;

const method = z.enum(PAYMENT_METHODS);
const url = (what: string) =>
  z
    .string()
    .max(2_048)
    .describe(`${what}: https (outside production also http on 127.0.0.1, localhost or [::1]); 400 VALIDATION_ERROR otherwise`);

export const createBody = z.strictObject({
  amount: usdcAmount({
    max: MAX_PAYMENT_USDC,
    description: `USDC the payer pays: more than 0, at most 6 decimals, at most ${MAX_PAYMENT_USDC}`,
  }),
  currency: z.literal("USDC").default("USDC").describe("USDC, the only currency"),
  description: z.string().trim().max(1_000).default("").describe("what is paid for, shown to the payer"),
  paymentMethods: z
    .array(method)
    .min(1)
    .max(PAYMENT_METHODS.length)
    .default(["direct"])
    .describe("the methods the payer may choose from, a non-empty subset of direct, credit, split (default direct)"),
  metadata: z
    .record(z.string().max(40), z.unknown())
    .default({})
    .refine((value) => Buffer.byteLength(JSON.stringify(value)) <= METADATA_MAX_BYTES, {
      message: `must be at most ${METADATA_MAX_BYTES} bytes as JSON`,
    })
    .describe(`free-form JSON object returned in the payment's events and views (at most ${METADATA_MAX_BYTES} bytes as JSON)`),
  redirectUrl: url("where the payer goes after paying, with paymentId added to its query").optional(),
  cancelUrl: url("where the payer goes on cancel").optional(),
  expiresIn: z
    .number()
    .int()
    .min(MIN_EXPIRY_S)
    .max(MAX_EXPIRY_S)
    .default(MAX_EXPIRY_S)
    .describe(`seconds until the checkout expires, ${MIN_EXPIRY_S} (30 minutes) to ${MAX_EXPIRY_S} (24 hours, the default); extension`),
  creditOptions: z
    .strictObject({
      maxDuration: z.number().int().min(7).max(90).optional().describe("longest loan term offered, days"),
      maxInterest: z.number().min(0).max(1).optional().describe("highest interest offered, a fraction"),
    })
    .optional()
    .describe("for the credit method (the client library's option; extension)"),
  splitOptions: z
    .strictObject({
      installments: z
        .number()
        .int()
        .min(2)
        .max(MAX_ACTIVE_LOANS)
        .optional()
        .describe(
          `installments, 2 to ${MAX_ACTIVE_LOANS} (default 3): each is one of the payer's loans, of which a payer has at most ${MAX_ACTIVE_LOANS} open`,
        ),
      frequency: z.enum(["weekly", "biweekly", "monthly"]).optional(),
    })
    .optional()
    .describe("for the split method (the client library's option; extension)"),
});

const refund = z
  .object({
    id: z.string(),
    paymentId: z.string(),
    amount: usdc("refunded"),
    reason: z.string(),
    status: z.enum(REFUND_STATUSES).describe("pending (sent, not yet on chain), succeeded, or failed (nothing moved: see failure)"),
    failure: z.string().nullable().describe("why it failed"),
    txHash: txHash.nullable().describe("the refund's transaction, once on chain"),
    createdAt: isoDate,
  })
  .meta({ id: "PaymentRefund" });

const fee = z.object({ fee: usdc("the fee"), net: usdc("what the merchant receives") });

export const payment = z
  .object({
    id: z.string(),
    status: z
      .enum(PAYMENT_STATUSES)
      .describe(
        "pending (open for payment), processing (a payer's attempt under way), success (paid: the mirror has its transaction), expired (not paid by expiresAt), cancelled (by the merchant)",
      ),
    amount: usdc("the gross amount"),
    currency: z.literal("USDC"),
    description: z.string(),
    paymentMethods: z.array(method),
    metadata: z.record(z.string(), z.unknown()),
    fees: z
      .partialRecord(method, fee)
      .describe("for each allowed method: its fee (direct 1 %, credit 2 %, split 1.5 % per installment, rounded down) and the net"),
    checkoutUrl: z.string().describe("the hosted checkout page to send the payer to"),
    redirectUrl: z.string().nullable(),
    cancelUrl: z.string().nullable(),
    expiresAt: isoDate,
    createdAt: isoDate,
    cancelledAt: isoDate.nullable(),
    method: method.nullable().describe("the method it was (or is being) paid with"),
    payerId: z.string().nullable().describe("the payer's user id, once paid"),
    paidAt: isoDate.nullable().describe("the payment's block time"),
    fee: usdc("the fee taken").nullable(),
    net: usdc("what the merchant received").nullable(),
    amountRefunded: usdc("refunded so far"),
    txHash: txHash.nullable().describe("the payment's transaction"),
    lastFailure: z
      .object({ reason: z.string(), method: z.string(), at: isoDate })
      .nullable()
      .describe("the last failed attempt (declined, insufficient_funds); the payment stays open"),
  })
  .meta({ id: "Payment" });

export const paymentDetail = payment.extend({ refunds: z.array(refund).describe("oldest first, each with its transaction") });

export const paymentIdParams = z.object({
  paymentId: z.string().max(100).describe("the payment's id; another merchant's, or an unknown one, is 404 PAYMENT_NOT_FOUND"),
});

export const paymentsQuery = listQuery({
  status: z.enum(PAYMENT_STATUSES).optional().describe("only payments of this status (for example success)"),
});

export const refundBody = z.strictObject({
  amount: usdcAmount({ max: MAX_PAYMENT_USDC, description: "USDC to return to the payer (default: all that is left)" }).optional(),
  reason: z.string().trim().min(1).max(500).default("requested_by_customer").describe("why (shown in the refund and its event)"),
});

export const refundResponse = refund;
export const refundsResponse = refund.array();

export const payBody = z.strictObject({
  method: method.describe("one of the payment's methods"),
  payerAddress: z
    .string()
    .regex(/^0x[0-9a-fA-F]{40}$/, "must be a wallet address (0x and 40 hex digits)")
    .optional()
    .describe(
      "the paying wallet (default your managed wallet; in production only it). Outside production 0x000000000000000000000000000000000000dEc1 always declines and 0x00000000000000000000000000000000000f0001 always has insufficient funds",
    ),
});

export const payResponse = z.object({
  paymentId: z.string(),
  status: z.literal("success"),
  method,
  amount: usdc("paid"),
  fee: usdc("the merchant's fee"),
  net: usdc("what the merchant received"),
  txHash,
  redirectUrl: z.string().nullable().describe("the merchant's redirectUrl with paymentId added: send the payer there"),
  loans: z
    .array(
      z.object({
        loanId: z.string().describe("a loan of yours (GET /v1/loans/{loanId}, repay it there)"),
        amount: usdc("the loan's principal"),
        totalRepayment: usdc("what you owe for it"),
        durationDays: z.number().int().describe("due in this many days"),
      }),
    )
    .describe("credit: one loan; split: one per installment; direct: none"),
});

const loanQuote = z.object({
  amount: usdc("principal: the part of the price less the merchant's fee, plus the insurance fee"),
  insuranceFee: usdc("the principal above what the merchant receives, kept in the pool's insurance reserve, as a P2P loan's"),
  totalRepayment: usdc("what you owe for it"),
  dueDate: isoDate,
});
export const termsResponse = z.object({
  direct: z.object({ total: usdc("what leaves your wallet now") }).optional(),
  credit: z
    .object({
      eligible: z.boolean(),
      reason: z.string().nullable().describe("why not (a restriction code, AMOUNT_ABOVE_TIER, INTEREST_ABOVE_OFFER)"),
      interestRate: z.number().nullable().describe("a fraction, for the term"),
      insuranceFee: usdc("the loan's principal above what the merchant receives, kept in the pool's insurance reserve").nullable(),
      interest: usdc("interest").nullable(),
      totalRepayment: usdc("what you owe").nullable(),
      dueDate: isoDate.nullable(),
    })
    .optional(),
  split: z
    .object({
      eligible: z.boolean(),
      reason: z.string().nullable(),
      installments: z.array(loanQuote).describe("each installment's loan, what you owe for it and its due date"),
    })
    .optional(),
});
