// The one loan formula (docs/decisions.md, "Loan terms"): fee, interest and total at the request;
// the early payoff and the remaining balance are the LoanBook's own (read from the chain, so the
// quote and a repayment's answer are the contract's figure to the micro-USDC); the extension's
// interest below. Integers in micro-USDC and basis points; never a float.

/** The insurance fee, taken from the payout: 10 % of the amount (the product reference's figure). */
export const INSURANCE_FEE_BPS = 1_000n;
const BPS = 10_000n;
/** Fewest days a loan is charged for, as the LoanBook's MIN_CHARGED_DAYS. */
export const MIN_CHARGED_DAYS = 7;
/** The shortest loan term, days (the spec's 7 to 90, the LoanBook's minDurationDays). */
export const MIN_TERM_DAYS = 7;
/** The smallest loan, P2P or purchase: below it the fee and interest round to nothing worth a transaction. */
export const MIN_LOAN_MICRO = 1_000_000n;

const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b;

export interface LoanTerms {
  amount: bigint;
  insuranceFee: bigint;
  netAmount: bigint;
  interest: bigint;
  totalRepayment: bigint;
}

/**
 * Terms of a loan of `amount` micro-USDC at the tier's rate (basis points, a flat rate for the
 * whole term, as the spec's `interestRate` fraction): fee rounded down (the borrower's favour),
 * interest rounded up to the micro-USDC (the depositors'); total = amount + interest, since the
 * fee is taken from the payout (netAmount = amount - fee).
 */
export function loanTerms(amount: bigint, rateBps: number): LoanTerms {
  if (amount <= 0n) throw new RangeError("amount must be positive");
  const insuranceFee = (amount * INSURANCE_FEE_BPS) / BPS;
  const interest = ceilDiv(amount * BigInt(rateBps), BPS);
  return { amount, insuranceFee, netAmount: amount - insuranceFee, interest, totalRepayment: amount + interest };
}

/** A loan's flat rate in basis points, to the nearest: what a borrower is shown where no tier's rate set the interest. */
export const rateBpsOf = (loan: { principal: bigint; interest: bigint }) =>
  Number((loan.interest * BPS + loan.principal / 2n) / loan.principal);

/**
 * Interest for extending a loan by `extraDays`: the loan's own daily interest (its interest over
 * its days) for each added day, rounded up, so an extended loan costs what a loan of the longer
 * term at the same rate would have.
 */
export function extensionInterest(loan: { interest: bigint; durationDays: number }, extraDays: number): bigint {
  return ceilDiv(loan.interest * BigInt(extraDays), BigInt(loan.durationDays));
}

/**
 * The LoanBook's early payoff at `now` (its _interestDueNow): the principal still out plus the
 * interest earned by the days charged (elapsed days rounded up, at least MIN_CHARGED_DAYS, at most
 * the term), rounded up, less interest already paid. The service quotes the contract itself; this
 * mirror of its rule is for the worked example and the tests that hold the two together.
 */
export function payoffAt(
  loan: { principal: bigint; interest: bigint; principalRepaid: bigint; interestRepaid: bigint; durationDays: number; fundedAt: number },
  nowSeconds: number,
): { payoff: bigint; chargedDays: number } {
  const elapsedDays = Math.ceil((nowSeconds - loan.fundedAt) / 86_400);
  const chargedDays = Math.min(Math.max(elapsedDays, MIN_CHARGED_DAYS), loan.durationDays);
  const earned = ceilDiv(loan.interest * BigInt(chargedDays), BigInt(loan.durationDays));
  const interestDue = earned > loan.interestRepaid ? earned - loan.interestRepaid : 0n;
  return { payoff: loan.principal - loan.principalRepaid + interestDue, chargedDays };
}
