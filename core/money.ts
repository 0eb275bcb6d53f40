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
