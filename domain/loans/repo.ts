// Loans as the API shows them: the borrower's requests (LoanRequest, written here) joined with
// the chain's loans (LoanChainState, the indexer's, read-only here) by the loan id the chain
// carries as its ref. A loan funded outside the API (its ref is no request's) still shows, from
// the chain alone.
import { MIRRORED_CHAIN_ID } from "../../core/chain-identity.js";
import { usdcNumber } from "../../core/money.js";
import { Prisma } from "../../generated/prisma/client.js";
import type { Db, Tx } from "../db.js";
import { domainEvent, recordEvents } from "../events/outbox.js";
import { attemptHolds, type ProcessPresence, processAlive } from "../processes/presence.js";
import type { ClosedLoan } from "./expected-loss.js";
import { loanIdFromRef } from "./ids.js";

/** The chain's `ref` of a request, computed in SQL: its UUID's 16 bytes, left-aligned in a bytes32 (domain/loans/ids.ts). */
const REF_OF_REQUEST = Prisma.raw(`'0x' || replace(r."id"::text, '-', '') || repeat('0', 32)`);

/** A chain loan as the mirror has it, by chain and on-chain id, in the caller's transaction. */
export function chainLoanOf(tx: Tx, chainId: number, loanId: bigint) {
  return tx.loanChainState.findUnique({ where: { chainId_loanId: { chainId, loanId } } });
}

/** What is left to repay of the chain loan of `ref`, in micro-USDC, in the caller's transaction. */
export async function remainingBalanceOf(tx: Tx, ref: string): Promise<bigint> {
  return (await tx.loanChainState.findFirstOrThrow({ where: { ref }, select: { remainingBalance: true } })).remainingBalance;
}

/**
 * Every loan the mirror shows closed, for the expected-loss rates' history (expected-loss.ts): a
 * default's depositors' loss is its `loan.defaulted` event's uncovered part (the whole principal
 * if the event is missing: the cautious side).
 */
export function closedLoans(db: Pick<Db, "prisma">) {
  return db.prisma.$queryRaw<ClosedLoan[]>`
    SELECT c."borrower", c."principal", c."fundedAt", c."closedAt", c."status", c."paidByOthers",
           CASE WHEN c."status" = 'defaulted'
                THEN COALESCE((SELECT (e."data"->'raw'->>'uncovered')::bigint FROM "DomainEvent" e
                                WHERE e."type" = 'loan.defaulted' AND e."chainId" = c."chainId" AND e."revertedAt" IS NULL
                                  AND e."data"->'raw'->>'chainLoanId' = c."loanId"::text LIMIT 1), c."principal")
                ELSE 0 END AS "uncovered"
      FROM "LoanChainState" c
     WHERE c."chainId" = ${MIRRORED_CHAIN_ID} AND c."status" IN ('repaid', 'defaulted') AND c."closedAt" IS NOT NULL
     ORDER BY c."loanId"`;
}

/** A loan that pays a merchant's payment (domain/loans/financing.ts). */
export interface FinancingRow {
  id: string;
  userId: string;
  borrower: string;
  chainId: number;
  amount: bigint;
  insuranceFee: bigint;
  interest: bigint;
  interestRateBps: number;
  durationDays: number;
  purpose: string;
  createdAt: Date;
  expiresAt: Date;
  claimedAt: Date;
  paymentId: string;
}

/** A loan as one row, money in micro-USDC, whichever of the two tables it comes from. */
export interface LoanRow {
  /** The request's id, or the chain loan's ref (loanIdFromRef gives the API id). */
  id: string | null;
  ref: string | null;
  userId: string | null;
  requestStatus: string | null;
  chainStatus: string | null;
  chainLoanId: bigint | null;
  amount: bigint;
  insuranceFee: bigint;
  interest: bigint;
  interestRateBps: number | null;
  durationDays: number;
  purpose: string | null;
  createdAt: Date;
  expiresAt: Date | null;
  cancelledAt: Date | null;
  fundedAt: Date | null;
  dueDate: Date | null;
  totalPaid: bigint | null;
  remainingBalance: bigint | null;
  fundTxHash: string | null;
  extensions: number;
}

/** What a new request needs to know of the borrower's loans, read under the borrower's row lock. */
export interface BorrowerStanding {
  openLoans: number;
  /** The principal of those open loans, micro-USDC: the credit they take of the tier's maxAmount. */
  creditInUse: bigint;
  overdue: boolean;
  lastDefaultAt: Date | null;
}

const selectLoans = (userId: string, wallet: string) => Prisma.sql`
  SELECT r."id", c."ref", r."userId", r."status" AS "requestStatus", c."status" AS "chainStatus",
         c."loanId" AS "chainLoanId",
         COALESCE(c."principal", r."amount") AS "amount", COALESCE(c."insuranceFee", r."insuranceFee") AS "insuranceFee",
         COALESCE(c."interest", r."interest") AS "interest", r."interestRateBps",
         COALESCE(c."durationDays", r."durationDays") AS "durationDays", r."purpose",
         COALESCE(r."createdAt", c."fundedAt") AS "createdAt", r."expiresAt", r."cancelledAt",
         c."fundedAt", c."dueDate", c."totalPaid", c."remainingBalance", COALESCE(c."fundTxHash", r."fundTxHash") AS "fundTxHash",
         COALESCE(c."extensions", 0) AS "extensions"
    FROM "LoanRequest" r
    LEFT JOIN "LoanChainState" c ON c."chainId" = ${MIRRORED_CHAIN_ID} AND c."ref" = ${REF_OF_REQUEST}
   WHERE r."userId" = ${userId}
  UNION ALL
  SELECT NULL, c."ref", NULL, NULL, c."status", c."loanId", c."principal", c."insuranceFee", c."interest", NULL,
         c."durationDays", NULL, c."fundedAt", NULL, NULL, c."fundedAt", c."dueDate", c."totalPaid", c."remainingBalance", c."fundTxHash", c."extensions"
    FROM "LoanChainState" c
   WHERE c."chainId" = ${MIRRORED_CHAIN_ID} AND c."borrower" = ${wallet}
     AND NOT EXISTS (SELECT 1 FROM "LoanRequest" r WHERE ${REF_OF_REQUEST} = c."ref")`;

/** A loan's states (service-spec part 3). */
export const LOAN_STATUSES = ["pending", "active", "repaid", "overdue", "defaulted", "cancelled"] as const;
export type LoanStatus = (typeof LOAN_STATUSES)[number];

/** The API status of a loan row at `now` (service-spec part 3): the chain's once funded and mirrored. */
export function loanStatus(row: Pick<LoanRow, "chainStatus" | "requestStatus" | "expiresAt">, now: Date): LoanStatus {
  if (row.chainStatus) return row.chainStatus as LoanStatus;
  if (row.requestStatus === "cancelled") return "cancelled";
  // A request still waiting at its expiry lapsed, whether or not the job has marked it yet; one
  // being funded (or funded, not yet mirrored) is pending until the mirror has the loan.
  if (row.requestStatus === "pending" && row.expiresAt && row.expiresAt <= now) return "cancelled";
  return "pending";
}

/** The API's loan id of a row. */
export const loanIdOf = (row: Pick<LoanRow, "id" | "ref">) => row.id ?? loanIdFromRef(row.ref!);

export function createLoansRepo({ db, presence }: { db: Db; presence: Pick<ProcessPresence, "id"> }) {
  const { prisma } = db;
  return {
    /** Every loan of a user (requests and chain loans of their wallet), newest first. */
    async loansOf(userId: string, wallet: string): Promise<LoanRow[]> {
      return prisma.$queryRaw<LoanRow[]>`${selectLoans(userId, wallet.toLowerCase())} ORDER BY "createdAt" DESC, "id" DESC NULLS LAST`;
    },

    /** Locks the borrower's user row for the rest of `tx`: one new request at a time per user, so the loan cap holds. */
    async lockBorrower(tx: Tx, userId: string): Promise<void> {
      await tx.$queryRaw`SELECT 1 FROM "User" WHERE "id" = ${userId} FOR UPDATE`;
    },

    /** The borrower's open loans (waiting requests and active or overdue chain loans), overdue and last default, at `now`. */
    async standing(tx: Tx, userId: string, wallet: string, now: Date): Promise<BorrowerStanding> {
      const borrower = wallet.toLowerCase();
      const at = Prisma.sql`${now.toISOString()}::timestamp(3)`;
      // The counts are cast to int (count(*) is an int8, read as a bigint) to be added as numbers.
      const [row] = await tx.$queryRaw<
        {
          waiting: number;
          waitingCredit: bigint;
          open: number;
          openCredit: bigint;
          overdue: boolean;
          lastDefaultAt: Date | null;
        }[]
      >`
        WITH waiting AS (SELECT r."amount" FROM "LoanRequest" r
             WHERE r."userId" = ${userId} AND ((r."status" = 'pending' AND r."expiresAt" > ${at})
               -- A payment's loans count while its attempt holds the payment (D-89: its process beats, its time is not up).
               OR (r."status" = 'funding' AND (r."paymentId" IS NULL
                   OR EXISTS (SELECT 1 FROM "Payment" p WHERE p."id" = r."paymentId" AND ${attemptHolds("p")})))
               OR (r."status" = 'funded' AND NOT EXISTS (SELECT 1 FROM "LoanChainState" c WHERE c."ref" = ${REF_OF_REQUEST})))),
           open AS (SELECT c."principal" FROM "LoanChainState" c
             WHERE c."chainId" = ${MIRRORED_CHAIN_ID} AND c."borrower" = ${borrower} AND c."status" IN ('active', 'overdue'))
        SELECT
           (SELECT count(*)::int FROM waiting) AS "waiting",
           (SELECT COALESCE(sum("amount"), 0)::bigint FROM waiting) AS "waitingCredit",
           (SELECT count(*)::int FROM open) AS "open",
           (SELECT COALESCE(sum("principal"), 0)::bigint FROM open) AS "openCredit",
           EXISTS (SELECT 1 FROM "LoanChainState" c
             WHERE c."chainId" = ${MIRRORED_CHAIN_ID} AND c."borrower" = ${borrower}
               AND (c."status" = 'overdue' OR (c."status" = 'active' AND c."dueDate" < ${at}))) AS "overdue",
           (SELECT max(c."closedAt") FROM "LoanChainState" c
             WHERE c."chainId" = ${MIRRORED_CHAIN_ID} AND c."borrower" = ${borrower} AND c."status" = 'defaulted') AS "lastDefaultAt"`;
      return {
        openLoans: row!.waiting + row!.open,
        creditInUse: BigInt(row!.waitingCredit) + BigInt(row!.openCredit),
        overdue: row!.overdue,
        lastDefaultAt: row!.lastDefaultAt,
      };
    },

    insertRequest: (
      tx: Tx,
      request: {
        id: string;
        userId: string;
        borrower: string;
        chainId: number;
        amount: bigint;
        insuranceFee: bigint;
        interest: bigint;
        interestRateBps: number;
        durationDays: number;
        purpose: string | null;
        createdAt: Date;
        expiresAt: Date;
      },
    ) => tx.loanRequest.create({ data: { ...request, borrower: request.borrower.toLowerCase(), status: "pending" } }),

    /** Cancels a waiting request of the user (one conditional update: a funder's claim and a cancel never both win). */
    async cancel(userId: string, loanId: string, now: Date): Promise<boolean> {
      const { count } = await prisma.loanRequest.updateMany({
        where: { id: loanId, userId, status: "pending", expiresAt: { gt: now } },
        data: { status: "cancelled", cancelReason: "user", cancelledAt: now },
      });
      return count === 1;
    },

    /** Marks requests still waiting at their expiry as cancelled (reason `expired`, at their expiry). */
    async lapse(now: Date): Promise<number> {
      return prisma.$executeRaw`
        UPDATE "LoanRequest" SET "status" = 'cancelled', "cancelReason" = 'expired', "cancelledAt" = "expiresAt"
         WHERE "status" = 'pending' AND "expiresAt" <= ${now.toISOString()}::timestamp(3)`;
    },

    /**
     * Claims a request for funding for this process: a waiting one, or one whose funder's process
     * stopped beating (the sender finds any transaction it recorded by the loan id).
     */
    async claim(loanId: string, now: Date) {
      const rows = await prisma.$queryRaw<{ id: string }[]>`
        UPDATE "LoanRequest" SET "status" = 'funding', "claimedAt" = ${now.toISOString()}::timestamp(3), "claimedBy" = ${await presence.id()}
         WHERE "id" = ${loanId}::uuid AND "paymentId" IS NULL
           AND (("status" = 'pending' AND "expiresAt" > ${now.toISOString()}::timestamp(3))
            OR ("status" = 'funding' AND NOT ${processAlive('"claimedBy"')}))
         RETURNING "id"`;
      return rows.length === 1 ? prisma.loanRequest.findUniqueOrThrow({ where: { id: loanId } }) : null;
    },

    /** Gives a claimed request back (the pool could not fund it now). */
    release: (loanId: string) =>
      prisma.loanRequest.updateMany({
        where: { id: loanId, status: "funding" },
        data: { status: "pending", claimedAt: null, claimedBy: null },
      }),

    /**
     * Refuses a claimed request at funding (D-89: the borrower's terms got worse): cancelled, with
     * `loan.refused` to the borrower, in one transaction. False when it was not claimed any more.
     */
    async refuse(loanId: string, refusal: { reason: string; why: string }, now: Date): Promise<boolean> {
      return prisma.$transaction(async (tx) => {
        const { count } = await tx.loanRequest.updateMany({
          where: { id: loanId, status: "funding" },
          data: { status: "cancelled", cancelReason: "not_eligible", cancelledAt: now, claimedAt: null, claimedBy: null },
        });
        if (count === 0) return false;
        const request = await tx.loanRequest.findUniqueOrThrow({ where: { id: loanId } });
        await recordEvents(tx, [
          domainEvent({
            type: "loan.refused",
            userId: request.userId,
            data: {
              loanId,
              userId: request.userId,
              amount: usdcNumber(request.amount),
              duration: request.durationDays,
              reason: refusal.reason,
              why: refusal.why,
              cancelledAt: now.toISOString(),
            },
            dedupeKey: `loan.refused:${loanId}`,
            now,
          }),
        ]);
        return true;
      });
    },

    /** Re-prices a claimed request at `rateBps` (a lower rate than it was asked at: D-89); answers the request. */
    reprice: (loanId: string, terms: { rateBps: number; interest: bigint }) =>
      prisma.loanRequest.update({ where: { id: loanId }, data: { interest: terms.interest, interestRateBps: terms.rateBps } }),

    /**
     * A funded request whose funding a reorganisation removed is pending again (D-94), in the
     * caller's transaction: the funding job (or the sandbox) funds it anew, or its borrower cancels it.
     */
    unfund: (tx: Tx, loanIds: readonly string[]) =>
      tx.loanRequest.updateMany({
        where: { id: { in: [...loanIds] }, status: "funded", paymentId: null },
        data: { status: "pending", fundTxHash: null, claimedAt: null, claimedBy: null },
      }),

    markFunded: (loanId: string, txHash: string) =>
      prisma.loanRequest.updateMany({ where: { id: loanId, status: "funding" }, data: { status: "funded", fundTxHash: txHash } }),

    /** Waiting requests at least `fundingDelay` old at `now`, and those a dead process had claimed, oldest first (the funding job's queue). */
    /**
     * The requests due for funding, oldest first. With `unprovenRoom` (what the pool still lends on
     * unproven loans, D-125), a request above it is passed over unless the mirror shows its borrower
     * repaid in full alone a loan at least as large (the chain decides at funding), so that requests
     * the limits hold never fill the batch ahead of the others.
     */
    dueForFunding: (now: Date, createdBefore: Date, limit: number, unprovenRoom?: bigint) =>
      // A payment's loans are the payment router's to fund, never the funding job's.
      prisma.$queryRaw<{ id: string }[]>`
        SELECT r."id" FROM "LoanRequest" r
         WHERE r."paymentId" IS NULL
           AND ((r."status" = 'pending' AND r."createdAt" <= ${createdBefore.toISOString()}::timestamp(3) AND r."expiresAt" > ${now.toISOString()}::timestamp(3))
            OR (r."status" = 'funding' AND NOT ${processAlive('r."claimedBy"')}))
           AND (${unprovenRoom === undefined} OR r."amount" <= ${unprovenRoom ?? 0n}
            OR EXISTS (SELECT 1 FROM "LoanChainState" c WHERE c."chainId" = ${MIRRORED_CHAIN_ID} AND c."borrower" = r."borrower"
                        AND c."status" = 'repaid' AND c."paidByOthers" = 0 AND c."principal" >= r."amount"))
         ORDER BY r."createdAt" LIMIT ${limit}`,

    request: (loanId: string) => prisma.loanRequest.findUnique({ where: { id: loanId } }),

    /** A payment's loans, as they are funded by its transaction (status `funding` until it settles), in the caller's transaction. */
    /** A payment's loans, held by this process's attempt while its transaction may be under way. */
    insertFinancing: async (tx: Tx, rows: FinancingRow[]) => {
      const claimedBy = await presence.id();
      return tx.loanRequest.createMany({
        data: rows.map((row) => ({ ...row, borrower: row.borrower.toLowerCase(), status: "funding", claimedBy })),
      });
    },

    /**
     * Settles a payment's waiting loans once its transaction is known: those the mirror has were
     * funded by `txHash`; the others (an attempt that never went out, or was refused) are cancelled
     * (reason `payment_failed`): they never were loans, and the payer's eligibility is as before.
     */
    async settleFinancing(paymentId: string, txHash: string | null, tx: Tx = prisma, now: Date = new Date()): Promise<void> {
      if (txHash !== null) {
        await tx.$executeRaw`
          UPDATE "LoanRequest" r SET "status" = 'funded', "fundTxHash" = ${txHash}
            WHERE r."paymentId" = ${paymentId}::uuid AND r."status" = 'funding'
              AND EXISTS (SELECT 1 FROM "LoanChainState" c WHERE c."chainId" = ${MIRRORED_CHAIN_ID} AND c."ref" = ${REF_OF_REQUEST})`;
      }
      await tx.loanRequest.updateMany({
        where: { paymentId, status: "funding" },
        data: { status: "cancelled", cancelReason: "payment_failed", cancelledAt: now },
      });
    },

    /** The ids of a payment's loans its attempt reserved (status `funding`). */
    reservedFor: async (paymentId: string): Promise<string[]> =>
      (await prisma.loanRequest.findMany({ where: { paymentId, status: "funding" }, select: { id: true } })).map((row) => row.id),

    /** Open chain loans past `dueBefore` (to mark overdue, or to default once past the grace), with their borrower's user. */
    openLoansDueBefore: (dueBefore: Date, limit: number) =>
      prisma.$queryRaw<{ loanId: bigint; ref: string; status: string; dueDate: Date; userId: string | null }[]>`
        SELECT c."loanId", c."ref", c."status", c."dueDate", u."id" AS "userId"
           FROM "LoanChainState" c LEFT JOIN "User" u ON lower(u."walletAddress") = c."borrower"
          WHERE c."chainId" = ${MIRRORED_CHAIN_ID} AND c."status" IN ('active', 'overdue') AND c."dueDate" < ${dueBefore.toISOString()}::timestamp(3)
          ORDER BY c."dueDate" LIMIT ${limit}`,
  };
}

export type LoansRepo = ReturnType<typeof createLoansRepo>;

/** A user's loans for the account export: requests and chain loans, money as the spec's loan numbers. */
export function exportView(row: LoanRow, now: Date) {
  return {
    id: loanIdOf(row),
    status: loanStatus(row, now),
    amount: usdcNumber(row.amount),
    netAmount: usdcNumber(row.amount - row.insuranceFee),
    insuranceFee: usdcNumber(row.insuranceFee),
    interest: usdcNumber(row.interest),
    duration: row.durationDays,
    totalRepayment: usdcNumber(row.amount + row.interest),
    purpose: row.purpose,
    amountPaid: usdcNumber(row.totalPaid ?? 0n),
    remainingBalance: usdcNumber(row.remainingBalance ?? 0n),
    extensions: row.extensions,
    createdAt: row.createdAt.toISOString(),
    fundedAt: row.fundedAt?.toISOString() ?? null,
    dueDate: row.dueDate?.toISOString() ?? null,
    cancelledAt: row.cancelledAt?.toISOString() ?? null,
    txHash: row.fundTxHash,
  };
}
