import type { EventFragment } from "ethers";

/** Decoded arguments in ABI order: addresses lower-case hex, integers bigint, booleans, bytesN hex. */
export type StaticArgs = (string | bigint | boolean)[];

export type StaticDecoder = (topics: string[], data: string) => StaticArgs;

const WORD = 64;

type WordReader = (word: string, name: string) => string | bigint | boolean;

function readerFor(type: string): WordReader | null {
  if (type === "address") {
    return (word, name) => {
      if (!/^0{24}/.test(word)) throw new Error(`${name}: not an address`);
      return `0x${word.slice(24)}`;
    };
  }
  if (type === "bool") {
    return (word, name) => {
      const value = BigInt(`0x${word}`);
      if (value > 1n) throw new Error(`${name}: not a bool`);
      return value === 1n;
    };
  }
  const uint = /^uint(\d+)$/.exec(type);
  if (uint) {
    const bits = BigInt(uint[1]!);
    return (word, name) => {
      const value = BigInt(`0x${word}`);
      if (value >> bits !== 0n) throw new Error(`${name}: out of range for ${type}`);
      return value;
    };
  }
  const int = /^int(\d+)$/.exec(type);
  if (int) {
    const bits = Number(int[1]!);
    return (word) => BigInt.asIntN(bits, BigInt(`0x${word}`));
  }
  if (/^bytes([1-9]|[12]\d|3[0-2])$/.test(type)) return (word) => `0x${word}`;
  return null;
}

/**
 * A decoder for an event whose parameters are all one ABI word (addresses, integers, bools,
 * bytesN): a slice per parameter instead of ethers' generic coder, which checksums every address
 * and builds a `Result` per log; on a 20,000-log backfill that generic path was the largest cost.
 * Returns null for other events (they keep ethers' decoder). Throws on data that does not fit
 * the event, as ethers does, so malformed logs stay detected.
 */
export function compileStaticDecoder(fragment: EventFragment): StaticDecoder | null {
  const parts: { indexed: boolean; position: number; read: WordReader; name: string }[] = [];
  let topic = 1;
  let word = 0;
  for (const input of fragment.inputs) {
    const read = readerFor(input.type);
    if (!read) return null;
    parts.push({ indexed: input.indexed === true, position: input.indexed ? topic++ : word++, read, name: input.name });
  }
  const topicCount = topic;
  const dataLength = 2 + word * WORD;
  return (topics, data) => {
    if (topics.length !== topicCount) throw new Error(`${fragment.name}: expected ${topicCount} topics, got ${topics.length}`);
    if (data.length < dataLength) throw new Error(`${fragment.name}: data too short (${data.length} < ${dataLength} characters)`);
    const lowered = data.toLowerCase();
    return parts.map((part) =>
      part.indexed
        ? part.read(topics[part.position]!.slice(2).toLowerCase(), part.name)
        : part.read(lowered.slice(2 + part.position * WORD, 2 + (part.position + 1) * WORD), part.name),
    );
  };
}
