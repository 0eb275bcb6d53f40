// Exact USDC amounts: the API gives loan and payment amounts as JSON numbers and vault amounts as
// decimal strings with two fraction digits; both convert to micro-USDC (6 decimals) as a bigint
// from their decimal text, never through floating-point arithmetic.

const MICRO = 1_000_000n;

/** An amount (a JSON number such as 25.5, or a decimal string such as "25.50") as micro-USDC. Throws on more than 6 decimals. */
export function toMicro(amount: number | string): bigint {
  const text = typeof amount === "number" ? numberText(amount) : amount.trim();
  const match = /^(-?)(\d+)(?:\.(\d{1,6}))?$/.exec(text);
  if (!match) throw new RangeError(`not a USDC amount with at most 6 decimals: ${String(amount)}`);
  const micro = BigInt(match[2]!) * MICRO + BigInt((match[3] ?? "").padEnd(6, "0"));
  return match[1] ? -micro : micro;
}

/** A number's plain decimal text: JSON numbers such as 1e-7 or 1e21 have none within 6 decimals. */
function numberText(amount: number): string {
  if (!Number.isFinite(amount)) throw new RangeError(`not a finite amount: ${amount}`);
  const text = String(amount);
  if (/e/i.test(text)) throw new RangeError(`not a USDC amount with at most 6 decimals: ${text}`);
  return text;
}

/** Micro-USDC as decimal text: every significant digit, at least `minDecimals` (default 2). */
export function fromMicro(micro: bigint, minDecimals = 2): string {
  const negative = micro < 0n;
  const abs = negative ? -micro : micro;
  const fraction = (abs % MICRO).toString().padStart(6, "0").replace(/0+$/, "").padEnd(minDecimals, "0");
  return `${negative ? "-" : ""}${abs / MICRO}${fraction ? `.${fraction}` : ""}`;
}

/** The largest micro-USDC a JSON number carries exactly (15 significant digits: just under 1e9 USDC). */
const EXACT_MICRO = 999_999_999_999_999n;

/** Micro-USDC as the JSON number the API takes for an amount (exact: at most 6 decimals, 15 digits). */
export function toAmount(micro: bigint): number {
  if (micro > EXACT_MICRO || micro < -EXACT_MICRO) throw new RangeError(`${micro} micro-USDC has no exact JSON number`);
  return Number(fromMicro(micro, 0));
}
