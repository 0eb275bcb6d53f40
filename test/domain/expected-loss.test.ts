import { expect } from "chai";
import { type ClosedLoan, classHistory, classify, proposeExpectedLossRates } from "../../domain/loans/expected-loss.js";

// The expected-loss rates' seed from history (D-126): the class each closed loan was funded in, as
// the loan book decided it, and the credibility-weighted proposal, in integers.

const day = (n: number) => new Date(Date.UTC(2026, 0, 1 + n));
const loan = (over: Partial<ClosedLoan>): ClosedLoan => ({
  borrower: "0xa",
  principal: 100_000_000n,
  fundedAt: day(0),
  closedAt: day(10),
  status: "repaid",
  paidByOthers: 0n,
  uncovered: 0n,
  ...over,
});

describe("expected-loss rates from the platform's history", () => {
  it("puts a loan in the class the loan book gave it: proven only by an earlier, larger loan repaid alone after a week", () => {
    const first = loan({ fundedAt: day(0), closedAt: day(10) });
    const overlapping = loan({ fundedAt: day(5), closedAt: day(20) });
    const after = loan({ fundedAt: day(11), closedAt: day(30), status: "defaulted", uncovered: 20_000_000n });
    const larger = loan({ principal: 200_000_000n, fundedAt: day(12), closedAt: day(25) });
    // After the default, the proof is void.
    const afterDefault = loan({ fundedAt: day(31), closedAt: day(40) });
    // A friend's or a merchant's money in it, or repaid within the week: nothing proven.
    const paidByOthers = loan({ borrower: "0xB", fundedAt: day(0), closedAt: day(8), paidByOthers: 1n });
    const quick = loan({ borrower: "0xb", fundedAt: day(9), closedAt: day(10) });
    const later = loan({ borrower: "0xb", fundedAt: day(11), closedAt: day(20) });
    const { unproven, proven } = classify([after, first, overlapping, larger, afterDefault, paidByOthers, quick, later]);
    expect(unproven).to.have.members([first, overlapping, larger, afterDefault, paidByOthers, quick, later]);
    expect(proven).to.deep.equal([after]);
  });

  it("weighs the history by its credibility against the rate in force, rounded up, never above 100 %", () => {
    expect(classHistory([], 500)).to.deep.include({ loans: 0, observedBps: null, credibility: 0, proposedBps: 500 });
    // 100 loans of 100 USDC, 1,000 USDC lost: 10 % observed; as many loans as the constant: half way to 5 %.
    const hundred = Array.from({ length: 100 }, (_, i) =>
      loan({ borrower: `0x${i}`, status: i < 10 ? "defaulted" : "repaid", uncovered: i < 10 ? 100_000_000n : 0n }),
    );
    expect(classHistory(hundred, 500)).to.deep.include({ loans: 100, observedBps: 1_000, credibility: 0.5, proposedBps: 750 });
    // One loan of three units losing one: 3,334 bps observed (rounded up), 1 of 101 weight.
    const tiny = [loan({ principal: 3n, status: "defaulted", uncovered: 1n })];
    expect(classHistory(tiny, 100)).to.deep.include({ observedBps: 3_334, proposedBps: Math.ceil((3_334 + 100 * 100) / 101) });
    const total = Array.from({ length: 10_000 }, (_, i) => loan({ borrower: `0x${i}`, status: "defaulted", uncovered: 100_000_000n }));
    expect(classHistory(total, 10_000).proposedBps).to.equal(10_000);
  });

  it("proposes both classes at once, each against its own rate in force", () => {
    const proposal = proposeExpectedLossRates(
      [loan({}), loan({ fundedAt: day(11), closedAt: day(20), status: "defaulted", uncovered: 50_000_000n })],
      { unprovenBps: 500, provenBps: 100 },
    );
    expect(proposal.unproven).to.deep.include({ loans: 1, observedBps: 0, proposedBps: Math.ceil((100 * 500) / 101) });
    expect(proposal.proven).to.deep.include({ loans: 1, observedBps: 5_000, proposedBps: Math.ceil((5_000 + 100 * 100) / 101) });
  });
});
