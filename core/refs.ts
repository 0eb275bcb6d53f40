/**
 * Off-chain ids (UUIDs) carried on-chain as a `bytes32` ref: the UUID's 16 bytes, left-aligned.
 * Loans and payments both name themselves this way, so the mirror and the API share one id.
 */
export function refFromUuid(id: string): string {
  const hex = id.replace(/-/g, "").toLowerCase();
  if (!/^[0-9a-f]{32}$/.test(hex)) throw new Error(`id ${id} is not a UUID`);
  return `0x${hex}${"0".repeat(32)}`;
}

/** The UUID a ref carries; a ref of another shape (written outside the API) keeps its hex form. */
export function uuidFromRef(ref: string): string {
  const hex = ref.toLowerCase().replace(/^0x/, "");
  if (hex.length === 64 && /^0{32}$/.test(hex.slice(32))) {
    const u = hex.slice(0, 32);
    return `${u.slice(0, 8)}-${u.slice(8, 12)}-${u.slice(12, 16)}-${u.slice(16, 20)}-${u.slice(20)}`;
  }
  return `0x${hex}`;
}
