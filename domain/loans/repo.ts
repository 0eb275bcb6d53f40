// Loans as the chain knows them: the indexer's LoanChainState, read-only here (the indexer is
// the mirror's only writer). Pending and cancelled requests join them when the loans domain
// stores its own.
import { MIRRORED_CHAIN_ID_SQL } from "../../core/chain-identity.js";
import { usdcNumber } from "../../core/money.js";
import type { Db } from "../db.js";
import { loanIdFromRef } from "./ids.js";

export function createLoansRepo({ db }: { db: Db }) {
  return {
    /** A borrower's loans, newest first, money as the spec's loan numbers and ids as the API's loan ids (account export). */
    chainLoansOf: (borrowerWallet: string) => chainLoansOf(db, borrowerWallet),
  };
}

export type LoansRepo = ReturnType<typeof createLoansRepo>;

async function chainLoansOf({ prisma }: Db, borrowerWallet: string) {
  const rows = await prisma.$queryRawUnsafe<
    {
      ref: string;
      status: string;
      principal: bigint;
      netAmount: bigint;
      interest: bigint;
      insuranceFee: bigint;
      durationDays: number;
      totalPaid: bigint;
      remainingBalance: bigint;
      extensions: number;
      fundedAt: Date;
      dueDate: Date;
      closedAt: Date | null;
      fundTxHash: string;
    }[]
  >(
    `SELECT "ref", "status", "principal", "netAmount", "interest", "insuranceFee", "durationDays", "totalPaid",
            "remainingBalance", "extensions", "fundedAt", "dueDate", "closedAt", "fundTxHash"
       FROM "LoanChainState" WHERE "chainId" = ${MIRRORED_CHAIN_ID_SQL} AND "borrower" = $1
      ORDER BY "fundedAt" DESC, "loanId" DESC`,
    borrowerWallet.toLowerCase(),
  );
  return rows.map((row) => ({
    id: loanIdFromRef(row.ref),
    status: row.status,
    amount: usdcNumber(BigInt(row.principal)),
    netAmount: usdcNumber(BigInt(row.netAmount)),
    insuranceFee: usdcNumber(BigInt(row.insuranceFee)),
    interest: usdcNumber(BigInt(row.interest)),
    duration: Number(row.durationDays),
    totalRepayment: usdcNumber(BigInt(row.principal) + BigInt(row.interest)),
    amountPaid: usdcNumber(BigInt(row.totalPaid)),
    remainingBalance: usdcNumber(BigInt(row.remainingBalance)),
    extensions: Number(row.extensions),
    fundedAt: row.fundedAt.toISOString(),
    dueDate: row.dueDate.toISOString(),
    closedAt: row.closedAt?.toISOString() ?? null,
    txHash: row.fundTxHash,
  }));
}
