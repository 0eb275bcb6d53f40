import { fromMicro, toAmount, toMicro } from "@trustmint/sdk";
import { expect } from "chai";
import fc from "fast-check";

// Exact conversions between the API's money values (JSON numbers for loans and payments,
// two-decimal strings for the vault) and micro-USDC bigints: no float arithmetic on the way.

describe("@trustmint/sdk: money conversions", () => {
  it("reads the API's numbers and strings as micro-USDC", () => {
    expect(toMicro(25.5)).to.equal(25_500_000n);
    expect(toMicro("25.50")).to.equal(25_500_000n);
    expect(toMicro("0.000001")).to.equal(1n);
    expect(toMicro(0.1)).to.equal(100_000n);
    expect(toMicro("-3.07")).to.equal(-3_070_000n);
    expect(toMicro(20)).to.equal(20_000_000n);
  });

  it("refuses what is not an exact 6-decimal amount rather than rounding it", () => {
    // 0.1 + 0.2 is 0.30000000000000004 in floating point: not a USDC amount.
    for (const bad of [0.1 + 0.2, 1e-7, 1e21, Number.NaN, Number.POSITIVE_INFINITY, "1.2345678", "1e3", "", "12,5", "0x10"]) {
      expect(() => toMicro(bad), String(bad)).to.throw(RangeError);
    }
    expect(() => toAmount(1_000_000_000_000_000n)).to.throw(RangeError);
  });

  it("formats micro-USDC with every significant digit and at least two decimals", () => {
    expect(fromMicro(25_500_000n)).to.equal("25.50");
    expect(fromMicro(1n)).to.equal("0.000001");
    expect(fromMicro(-3_070_000n)).to.equal("-3.07");
    expect(fromMicro(20_000_000n, 0)).to.equal("20");
    expect(toAmount(25_500_000n)).to.equal(25.5);
  });

  it("round-trips every amount: micro → number → micro and micro → text → micro", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -999_999_999_999_999n, max: 999_999_999_999_999n }), (micro) => {
        expect(toMicro(toAmount(micro))).to.equal(micro);
        expect(toMicro(fromMicro(micro))).to.equal(micro);
      }),
      { numRuns: 2_000 },
    );
  });
});
