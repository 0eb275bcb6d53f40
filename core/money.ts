// USDC amounts are bigint micro-USDC (6 decimals) inside the service; these are the edge formats.

export const MICRO_PER_USDC = 1_000_000n;

/**
 * A vault money string with two fraction digits ("1234.56"). Truncates toward zero: a
 * balance is never shown above what can be withdrawn.
 */
export function formatUsdc2(micro: bigint): string {
  const negative = micro < 0n;
  const cents = (negative ? -micro : micro) / 10_000n;
  const text = `${cents / 100n}.${(cents % 100n).toString().padStart(2, "0")}`;
  return negative && cents !== 0n ? `-${text}` : text;
}

/** A loan amount as a JSON number (the spec's loan format): the exact decimal, read by JSON. */
export function usdcNumber(micro: bigint): number {
  const negative = micro < 0n;
  const abs = negative ? -micro : micro;
  const fraction = (abs % MICRO_PER_USDC).toString().padStart(6, "0").replace(/0+$/, "");
  return Number(`${negative ? "-" : ""}${abs / MICRO_PER_USDC}${fraction ? `.${fraction}` : ""}`);
}

/** A rate scaled by 1e18 (the vault's exchangeRate(): micro-USDC per tmUSDC, 1e18 = 1 USDC) as a number. */
export function rateNumber(scaled: bigint, decimals = 18): number {
  const unit = 10n ** BigInt(decimals);
  const fraction = (scaled % unit).toString().padStart(decimals, "0").replace(/0+$/, "");
  return Number(`${scaled / unit}${fraction ? `.${fraction}` : ""}`);
}

/**
 * A request's USDC amount (a JSON number, as the spec's requests send them) as micro-USDC, read
 * from the number's shortest decimal text, so no float arithmetic touches the money: `12.5` is
 * 12_500_000n. Returns null when the amount has more than 6 decimals or is not a plain decimal
 * (negative, not finite, or so large or small that its text uses an exponent).
 */
export function microFromNumber(amount: number): bigint | null {
  if (!Number.isFinite(amount) || amount < 0) return null;
  const match = /^(\d+)(?:\.(\d{1,6}))?$/.exec(String(amount));
  if (!match) return null;
  return BigInt(match[1]!) * MICRO_PER_USDC + BigInt((match[2] ?? "").padEnd(6, "0"));
}
