// The expected-loss rates the loan book provisions new loans at (D-126), seeded from the
// platform's own history: per class of loan as the loan book decided it at funding (above what
// its borrower had proven it repays, or within it; D-125), the depositors' loss on the loans
// closed so far over their principal, weighted by its credibility against the rate in force
// (Bühlmann: n / (n + k) loans), so that a young platform's few loans move the rate only a
// little. Integers: micro-USDC and basis points.

import { DAY_MS } from "../../core/clock.js";

const BPS = 10_000n;
/** A loan proves its borrower once held this long (the loan book's MIN_CHARGED_DAYS). */
const PROOF_DAYS = 7;

/** Loans of a class at which the history counts as much as the rate in force (the credibility constant). */
export const CREDIBILITY_LOANS = 100;

/** A loan the mirror shows closed: repaid (by whom), or defaulted with the depositors' uncovered loss. */
export interface ClosedLoan {
  borrower: string;
  principal: bigint;
  fundedAt: Date;
  closedAt: Date;
  status: "repaid" | "defaulted";
  /** Micro-USDC paid by others than the borrower (refunds included): such a close proves nothing. */
  paidByOthers: bigint;
  /** Micro-USDC the depositors lost at its default (zero for a repaid loan). */
  uncovered: bigint;
}

export interface ClassHistory {
  loans: number;
  principal: bigint;
  uncovered: bigint;
  /** The loss over the principal, basis points rounded up; null without a closed loan. */
  observedBps: number | null;
  /** The history's weight against the rate in force, 0 to 1. */
  credibility: number;
  /** The rate to propose: the credibility-weighted blend, rounded up. */
  proposedBps: number;
}

export interface ExpectedLossProposal {
  unproven: ClassHistory;
  proven: ClassHistory;
}

/** Whether `proof` proved its borrower for `loan`: repaid in full alone after a week, before it, at least as large. */
const proves = (proof: ClosedLoan, loan: ClosedLoan) =>
  proof.status === "repaid" &&
  proof.paidByOthers === 0n &&
  proof.closedAt.getTime() - proof.fundedAt.getTime() >= PROOF_DAYS * DAY_MS &&
  proof.closedAt < loan.fundedAt &&
  proof.principal >= loan.principal;

/**
 * Each closed loan's class as the loan book decided it at funding, from the mirror: proven when
 * an earlier loan of its borrower proved it (`proves`) and no default of the borrower came between
 * (a default voids a proof). Refunds show only as money paid by others, so a loan refunded after it
 * proved its borrower still counts here: the history errs towards calling loans proven.
 */
export function classify(loans: readonly ClosedLoan[]): { unproven: ClosedLoan[]; proven: ClosedLoan[] } {
  const byBorrower = new Map<string, ClosedLoan[]>();
  for (const loan of loans) {
    const key = loan.borrower.toLowerCase();
    byBorrower.set(key, [...(byBorrower.get(key) ?? []), loan]);
  }
  const unproven: ClosedLoan[] = [];
  const proven: ClosedLoan[] = [];
  for (const loan of loans) {
    const own = byBorrower.get(loan.borrower.toLowerCase())!;
    const isProven = own.some(
      (proof) =>
        proves(proof, loan) &&
        !own.some((other) => other.status === "defaulted" && other.closedAt > proof.closedAt && other.closedAt < loan.fundedAt),
    );
    (isProven ? proven : unproven).push(loan);
  }
  return { unproven, proven };
}

/** One class's history and the rate it proposes beside `currentBps`, the rate in force. */
export function classHistory(loans: readonly ClosedLoan[], currentBps: number): ClassHistory {
  const principal = loans.reduce((sum, loan) => sum + loan.principal, 0n);
  const uncovered = loans.reduce((sum, loan) => sum + loan.uncovered, 0n);
  const observed = principal === 0n ? null : ceilDiv(uncovered * BPS, principal);
  const n = BigInt(loans.length);
  const k = BigInt(CREDIBILITY_LOANS);
  // z * observed + (1 - z) * current with z = n / (n + k), in integers, rounded up (the depositors' side).
  const proposed = observed === null ? BigInt(currentBps) : ceilDiv(n * observed + k * BigInt(currentBps), n + k);
  return {
    loans: loans.length,
    principal,
    uncovered,
    observedBps: observed === null ? null : Number(observed),
    credibility: loans.length / (loans.length + CREDIBILITY_LOANS),
    proposedBps: Number(proposed > BPS ? BPS : proposed),
  };
}

/** The proposal for both classes, from the closed loans and the rates in force. */
export function proposeExpectedLossRates(
  loans: readonly ClosedLoan[],
  current: { unprovenBps: number; provenBps: number },
): ExpectedLossProposal {
  const { unproven, proven } = classify(loans);
  return { unproven: classHistory(unproven, current.unprovenBps), proven: classHistory(proven, current.provenBps) };
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}
