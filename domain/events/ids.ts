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

/**
 * Where a fact sits in its transaction: the contract, the event's topic and how many logs of that
 * contract and topic came before it in the transaction (D-91). Unlike a log index it stays when a
 * reorganisation puts the transaction in another block or behind other logs, and the indexer
 * (which reads every log of a watched contract and topic) and a receipt count it alike.
 */
export interface FactPlace {
  txHash: string;
  address: string;
  topic0: string;
  ordinal: number;
}

export const chainDedupeKey = (chainId: number, place: FactPlace, type: string) =>
  `chain:${chainId}:${place.txHash.toLowerCase()}:${place.address.toLowerCase()}:${place.topic0.toLowerCase()}:${place.ordinal}:${type}`;

/** Each log's ordinal among the logs before it of the same transaction, contract and topic (logs in chain order). */
export function ordinalsOf(logs: readonly { transactionHash: string; address: string; topics: readonly string[] }[]): number[] {
  const seen = new Map<string, number>();
  return logs.map((log) => {
    const key = `${log.transactionHash}:${log.address}:${log.topics[0] ?? ""}`.toLowerCase();
    const ordinal = seen.get(key) ?? 0;
    seen.set(key, ordinal + 1);
    return ordinal;
  });
}
