import type { EventFragment, ParamType, Result } from "ethers";

/**
 * Decoded arguments keyed by ABI parameter name (an unnamed parameter by its position):
 * addresses lower-case hex, integers bigint, booleans, bytesN hex, tuples objects, arrays arrays.
 * The handlers read them through the TypeChain event types (`DepositEvent.OutputObject`).
 */
export type EventArgs = Readonly<Record<string, unknown>>;

export type StaticDecoder = (topics: readonly string[], data: string) => EventArgs;

// An ABI word (32 bytes) in hex characters: how far each argument of a log's data reaches.
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
  const bytes = /^bytes([1-9]|[12]\d|3[0-2])$/.exec(type);
  // bytesN is left-aligned in its word: the value is its first N bytes, as ethers decodes it.
  if (bytes) {
    const length = 2 * Number(bytes[1]!);
    return (word) => `0x${word.slice(0, length)}`;
  }
  return null;
}

/**
 * A decoder for an event whose parameters are all one ABI word (addresses, integers, bools,
 * bytesN): a slice per parameter instead of ethers' generic coder, which checksums every address
 * and builds a `Result` per log; on a 20,000-log backfill that generic path was the largest cost.
 * Returns null for other events (they keep ethers' decoder). Throws on data that does not fit
 * the event, as ethers does, so malformed logs stay detected.
 *
 * The decoder is generated once per event: one object literal with a field per parameter gives
 * every decoded log of the event the same shape from the start, and the slice offsets are
 * constants. Names and types come from the compiled ABI and enter the code only as JSON strings.
 */
export function compileStaticDecoder(fragment: EventFragment): StaticDecoder | null {
  const readers: WordReader[] = [];
  const fields: string[] = [];
  let topic = 1;
  let word = 0;
  for (const [index, input] of fragment.inputs.entries()) {
    const read = readerFor(input.type);
    if (!read) return null;
    const name = JSON.stringify(input.name || String(index));
    const source = input.indexed ? `topics[${topic++}].slice(2).toLowerCase()` : `data.slice(${2 + word * WORD}, ${2 + ++word * WORD})`;
    fields.push(`${name}: r${readers.length}(${source}, ${name})`);
    readers.push(read);
  }
  const event = JSON.stringify(fragment.name);
  const dataLength = 2 + word * WORD;
  const body = `const [${readers.map((_, i) => `r${i}`).join(", ")}] = readers;
  return function decode(topics, data) {
    if (topics.length !== ${topic}) throw new Error(${event} + ": expected ${topic} topics, got " + topics.length);
    if (data.length < ${dataLength}) throw new Error(${event} + ": data too short (" + data.length + " < ${dataLength} characters)");
    data = data.toLowerCase();
    return { ${fields.join(", ")} };
  };`;
  return new Function("readers", body)(readers) as StaticDecoder;
}

/**
 * ethers' `Result` (the generic decoder's answer, for events with dynamic or tuple parameters)
 * in the shape the static decoders give. Not `Result.toObject()`: it keeps checksummed addresses
 * and throws on unnamed parameters.
 */
export function namedArgs(params: readonly ParamType[], values: Result): EventArgs {
  const args: Record<string, unknown> = {};
  for (const [index, param] of params.entries()) args[param.name || String(index)] = plain(param, values[index]);
  return args;
}

function plain(param: ParamType, value: unknown): unknown {
  if (param.isTuple()) return namedArgs(param.components, value as Result);
  if (param.isArray()) return Array.from(value as Result, (item) => plain(param.arrayChildren, item));
  if (param.type === "address") return (value as string).toLowerCase();
  return value;
}
