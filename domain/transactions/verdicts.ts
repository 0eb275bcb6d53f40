// Final verdicts of relayed requests (#43 item 5, D-103). A request its batch did not run is
// reported "not run" only once it can never run: its wallet's forwarder nonce used, by a
// cancellation (a no-op request at that nonce) the service sends when nothing else used it. A
// request another transaction ran first (copied out of the pending batch) is reported run, with
// that transaction and its own logs there.
import { type Contract, type HDNodeWallet, Interface, type JsonRpcProvider, type Log, type TransactionReceipt, zeroPadValue } from "ethers";
import { FORWARD_REQUEST_TYPES, FORWARDER_DOMAIN, signTyped } from "../../core/eip712.js";
import type { RelayedRequest } from "../../generated/prisma/client.js";
import type { Batched, UserRequest } from "./batcher.js";
import { TransactionPendingError, type TransactionRevertedError } from "./failures.js";
import type { RequestKey } from "./repo.js";

/** A request's outcome: its own logs (in its batch's receipt, or in `receipt`, which ran it first), or why it did not run. */
export type Outcome =
  | { status: "executed"; logs: Log[]; receipt?: TransactionReceipt }
  | { status: "reverted"; error: TransactionRevertedError }
  | { status: "skipped" | "failed" };

/** `RelayedRequest.purpose` of a cancellation: never itself cancelled. */
export const CANCEL_PURPOSE = "relay.cancel";
/** How far back the forwarder's events are searched for the transaction that used a nonce. */
const LOOKBACK_BLOCKS = 1_000;
/** A view call of the request's own target: every platform contract trusts the forwarder and answers it. */
const NO_OP = new Interface(["function isTrustedForwarder(address forwarder) view returns (bool)"]);
const NO_OP_GAS = 30_000n;

export interface VerdictDeps {
  provider: JsonRpcProvider;
  forwarder: Contract;
  chainId: number;
  /** The managed wallet whose key signs `address`'s requests; null for a wallet its user holds (D-119). */
  signerOfWallet(address: string): Promise<HDNodeWallet | null>;
  submit(item: { user: UserRequest }): Promise<Batched>;
  settle(transactionId: string, broadcast?: Batched["broadcast"]): Promise<unknown>;
  /** The request recorded under a key, if any. */
  recorded(key: RequestKey): Promise<RelayedRequest | undefined>;
  releaseKey(requestId: string): Promise<unknown>;
}

export function createVerdicts(deps: VerdictDeps) {
  const { provider, forwarder } = deps;
  const executed = forwarder.interface.getEvent("ExecutedForwardRequest")!;
  const forwarderAddress = (forwarder.target as string).toLowerCase();

  /** The request's own logs in `receipt`: those after the forwarder's previous event, up to its own (`index`). */
  function ownLogs(receipt: TransactionReceipt, index: number): Log[] {
    const before = receipt.logs.filter((log) => log.index < index);
    const previous = before.findLastIndex((log) => log.address.toLowerCase() === forwarderAddress && log.topics[0] === executed.topicHash);
    return before.slice(previous + 1);
  }

  /** Whether `transaction` forwarded this very call (from, to, data) of `request`'s wallet. */
  function forwardedThisCall(transaction: { to: string | null; data: string }, request: RelayedRequest, logs: Log[]): boolean {
    const parsed =
      transaction.to?.toLowerCase() === forwarderAddress ? forwarder.interface.parseTransaction({ data: transaction.data }) : null;
    if (!parsed) return logs.length > 0; // a contract calling the forwarder: a cancellation emits nothing, a user's call does
    const requests = (parsed.name === "executeBatch" ? parsed.args[0] : [parsed.args[0]]) as { from: string; to: string; data: string }[];
    return requests.some(
      (each) =>
        each.from.toLowerCase() === request.from && each.to.toLowerCase() === request.to.toLowerCase() && each.data === request.data,
    );
  }

  /** Who used the request's nonce: this call, run by `receipt`; another call (null); or nobody yet. */
  async function whoUsed(
    request: RelayedRequest,
    fromBlock: number,
  ): Promise<{ receipt: TransactionReceipt; logs: Log[] } | null | "unused"> {
    if (((await forwarder.nonces(request.from)) as bigint) <= request.forwarderNonce) return "unused";
    const topics = [executed.topicHash, zeroPadValue(request.from, 32)];
    for (const log of await provider.getLogs({ address: forwarderAddress, topics, fromBlock, toBlock: "latest" })) {
      const { nonce, success } = forwarder.interface.decodeEventLog(executed, log.data, log.topics);
      if (nonce !== request.forwarderNonce) continue;
      // The call at that nonce failed: nothing of it holds, whoever sent it.
      if (!success) return null;
      const [transaction, receipt] = await Promise.all([
        provider.getTransaction(log.transactionHash),
        provider.getTransactionReceipt(log.transactionHash),
      ]);
      const logs = ownLogs(receipt!, log.index);
      return forwardedThisCall(transaction!, request, logs) ? { receipt: receipt!, logs } : null;
    }
    return null;
  }

  /** No-op requests of the managed wallet at each nonce from its current one to the request's, in order. */
  async function cancellations(request: RelayedRequest, wallet: HDNodeWallet): Promise<UserRequest[]> {
    const domain = { ...FORWARDER_DOMAIN, chainId: deps.chainId, verifyingContract: forwarder.target as string };
    const data = NO_OP.encodeFunctionData("isTrustedForwarder", [forwarder.target]);
    const items: UserRequest[] = [];
    for (let nonce = (await forwarder.nonces(request.from)) as bigint; nonce <= request.forwarderNonce; nonce += 1n) {
      items.push({
        purpose: CANCEL_PURPOSE,
        userId: request.userId,
        idempotencyKey: `cancel ${request.from} ${nonce}`,
        from: request.from,
        to: request.to,
        forwarderNonce: nonce,
        sign(forwarderNonce, deadline) {
          const signed = { from: wallet.address, to: request.to, value: 0n, gas: NO_OP_GAS, nonce: forwarderNonce, deadline, data };
          const { nonce: _nonce, ...forward } = signed;
          return { ...forward, signature: signTyped(wallet, domain, FORWARD_REQUEST_TYPES, signed).serialized };
        },
      });
    }
    return items;
  }

  /** Sends the cancellations one after the other (in nonce order, each its own batch), then waits for them all. */
  async function cancel(request: RelayedRequest, wallet: HDNodeWallet): Promise<void> {
    const settling: Promise<unknown>[] = [];
    for (const item of await cancellations(request, wallet)) {
      const key = { userId: item.userId, idempotencyKey: item.idempotencyKey, purpose: item.purpose };
      const earlier = await deps.recorded(key);
      // One sent before at this nonce: its batch settles it, unless it did nothing (then anew).
      if (earlier && earlier.status !== "skipped" && earlier.status !== "failed") {
        settling.push(deps.settle(earlier.transactionId));
        continue;
      }
      if (earlier) await deps.releaseKey(earlier.id);
      const batched = await deps.submit({ user: item });
      settling.push(deps.settle(batched.transaction.id, batched.broadcast));
    }
    await Promise.all(settling);
  }

  /** Whether the request's signed deadline (in its batch's calldata) is before the batch's block. */
  async function expired(request: RelayedRequest, batchData: string, receipt: TransactionReceipt): Promise<boolean> {
    const parsed = forwarder.interface.parseTransaction({ data: batchData });
    const signed = (parsed?.args[0] as { deadline: bigint }[] | undefined)?.[request.position];
    const block = await provider.getBlock(receipt.blockNumber);
    return signed !== undefined && block !== null && signed.deadline < BigInt(block.timestamp);
  }

  return {
    /**
     * The final outcome of a request its batch (`batchData`, mined in `receipt`) did not run: run by
     * another transaction, or never to run: its deadline passed, or its nonce used (cancelled here
     * when nothing used it).
     * Throws TransactionPendingError while the nonce is still free.
     */
    async final(request: RelayedRequest, batchData: string, receipt: TransactionReceipt): Promise<Outcome> {
      if (request.purpose === CANCEL_PURPOSE) return { status: "skipped" };
      const fromBlock = Math.max(0, receipt.blockNumber - LOOKBACK_BLOCKS);
      let used = await whoUsed(request, fromBlock);
      // Past its deadline by the batch's block, it can never run: nothing to cancel.
      if (used === "unused" && (await expired(request, batchData, receipt))) return { status: "skipped" };
      if (used === "unused") {
        // A wallet the user holds signed it, and the service cannot cancel for it: it stays able to
        // run until its deadline (minutes: D-119), and is said not run once that has passed.
        const wallet = await deps.signerOfWallet(request.from);
        if (!wallet)
          throw new TransactionPendingError("the request your wallet signed can still run until its deadline: retry with the same key");
        await cancel(request, wallet);
        used = await whoUsed(request, fromBlock);
        if (used === "unused") throw new TransactionPendingError("the request's nonce is not cancelled yet: retry with the same key");
      }
      return used ? { status: "executed", logs: used.logs, receipt: used.receipt } : { status: "skipped" };
    },
  };
}

export type Verdicts = ReturnType<typeof createVerdicts>;
