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
