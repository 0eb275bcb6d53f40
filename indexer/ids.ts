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

/**
 * Loans carry the API's loan id (a UUID) on-chain as their `ref`: the UUID's 16 bytes,
 * left-aligned in the bytes32. A ref of another shape (a loan funded outside the API)
 * keeps its hex form as the id.
 */
export function loanIdFromRef(ref: string): string {
  const hex = ref.toLowerCase().replace(/^0x/, "");
  if (hex.length === 64 && /^0{32}$/.test(hex.slice(32))) {
    const u = hex.slice(0, 32);
    return `${u.slice(0, 8)}-${u.slice(8, 12)}-${u.slice(12, 16)}-${u.slice(16, 20)}-${u.slice(20)}`;
  }
  return `0x${hex}`;
}

export function refFromLoanId(loanId: string): string {
  const hex = loanId.replace(/-/g, "").toLowerCase();
  if (!/^[0-9a-f]{32}$/.test(hex)) throw new Error(`loan id ${loanId} is not a UUID`);
  return `0x${hex}${"0".repeat(32)}`;
}

/** A social-vault withdrawal's public id: the vault address and the on-chain request id. */
export const withdrawalIdOf = (vault: string, requestId: bigint) => `${vault.toLowerCase()}-${requestId}`;
