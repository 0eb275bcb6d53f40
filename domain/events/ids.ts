import { createHash } from "node:crypto";

/**
 * The outbox id of an on-chain fact: a UUID derived from its dedupe key, so a re-index (after a
 * rollback, or on a fresh database) gives the same event the same id, and webhook receivers can
 * drop repeats by it.
 */
export function chainEventId(dedupeKey: string): string {
  const hex = createHash("sha256").update(dedupeKey).digest("hex");
  // RFC 9562 layout, version 8 (custom), variant 10.
  const variant = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

export const chainDedupeKey = (chainId: number, txHash: string, logIndex: number, type: string) =>
  `chain:${chainId}:${txHash}:${logIndex}:${type}`;
