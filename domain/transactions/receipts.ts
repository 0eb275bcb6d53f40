// Reading a write's own event from its logs: the log of `contract` with that event's topic,
// decoded with the contract's ABI. One place for every domain that answers from a receipt. A
// user's request in a batch has only its own logs (user-transactions.ts), never its neighbours'.
import type { Contract } from "ethers";
import type { SentTransaction } from "./sender.js";

type Sent = Pick<SentTransaction, "txHash" | "logs">;

/** The first `name` event `contract` emitted in the write's logs, decoded, with its log index; undefined if none. */
export function receiptEvent<T>(contract: Contract, sent: Sent, name: string): { args: T; index: number } | undefined {
  const event = contract.interface.getEvent(name)!;
  const address = (contract.target as string).toLowerCase();
  const log = sent.logs.find((entry) => entry.topics[0] === event.topicHash && entry.address.toLowerCase() === address);
  if (!log) return undefined;
  return { args: contract.interface.decodeEventLog(event, log.data, log.topics) as unknown as T, index: log.index };
}

/** receiptEvent for an event the write always emits: its absence is a bug, not an answer. */
export function requireReceiptEvent<T>(contract: Contract, sent: Sent, name: string): { args: T; index: number } {
  const found = receiptEvent<T>(contract, sent, name);
  if (!found) throw new Error(`transaction ${sent.txHash} has no ${name} event of ${contract.target as string}`);
  return found;
}
