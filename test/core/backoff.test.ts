import { expect } from "chai";
import fc from "fast-check";
import { backoffMs } from "../../core/backoff.js";
import { jobRetryDelayMs } from "../../domain/jobs/queue.js";

describe("backoff: the one formula for a wait after a failure", () => {
  it("doubles from baseMs after each failure, up to capMs", () => {
    const waits = [1, 2, 3, 4, 5, 6, 7, 8].map((failures) => backoffMs(failures, { baseMs: 250, capMs: 15_000 }));
    expect(waits).to.deep.equal([250, 500, 1_000, 2_000, 4_000, 8_000, 15_000, 15_000]);
    expect(backoffMs(0, { baseMs: 250, capMs: 15_000 }), "no failure yet counts as the first").to.equal(250);
  });

  it("stays within ±jitter of the doubled wait, whatever the random draw", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (failures, draw) => {
        const wait = backoffMs(failures, { baseMs: 10_000, capMs: 3_600_000, jitter: 0.2 }, () => draw);
        const plain = Math.min(3_600_000, 10_000 * 2 ** (failures - 1));
        return Number.isInteger(wait) && wait >= plain * 0.8 - 0.5 && wait <= plain * 1.2 + 0.5;
      }),
    );
  });

  it("spaces a failed job's tries 10 s × 2^(n-1) apart, ±20 %, at most an hour", () => {
    expect(jobRetryDelayMs(1, () => 0.5)).to.equal(10_000);
    expect(jobRetryDelayMs(3, () => 0)).to.equal(32_000);
    expect(jobRetryDelayMs(3, () => 0.999_999)).to.equal(48_000);
    expect(jobRetryDelayMs(30, () => 0.5)).to.equal(3_600_000);
  });
});
