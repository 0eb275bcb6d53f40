// The one place that takes the paying account's nonces and orders each user's requests (D-86).
// Everything that waits to be sent while the batch before it goes out leaves together (group
// commit, core/coalesce.ts): the users' requests as one `executeBatch` of the forwarder, the
// service's own calls as transactions of their own. One database transaction takes the nonces,
// signs, and records every transaction and request before any is broadcast; then they are
// broadcast in nonce order in one round trip.
import { randomUUID } from "node:crypto";
import type { Contract, JsonRpcProvider, Wallet } from "ethers";
import { coalesce } from "../../core/coalesce.js";
import type { Broadcast, PayingAccount } from "./paying-account.js";
import type { NewRequest, NewTransaction, TransactionsRepo } from "./repo.js";

/** A transaction the sender (sender.ts) sends for the service, its own or a batch of users' requests. */
export interface SendRequest {
  purpose: string;
  to: string;
  data: string;
  /** With `idempotencyKey`: a retry of the same request finds this transaction instead of sending another. */
  userId?: string;
  idempotencyKey?: string;
  /** The request that sent it: a retry under the same key with another request is refused (422). */
  requestHash?: string;
  /** Skips the gas estimate (the caller knows the gas the call needs). */
  gasLimit?: bigint;
}

/** A call of the service's own (the sandbox, the loan operator): a transaction of its own, its gas known. */
export type OwnCall = SendRequest & { gasLimit: bigint };

/** A signed ForwardRequest in the form `execute` and `executeBatch` take. */
export interface ForwardRequestData {
  from: string;
  to: string;
  value: bigint;
  gas: bigint;
  deadline: bigint;
  data: string;
  signature: string;
}

/** A user's request, simulated, waiting for its nonces: `sign` makes its ForwardRequest with them. */
export interface UserRequest {
  purpose: string;
  userId: string;
  idempotencyKey: string;
  requestHash?: string;
  /** The user's managed wallet. */
  from: string;
  to: string;
  /** The wallet's forwarder nonce it must take (a cancellation's, D-103); else the next one. */
  forwarderNonce?: bigint;
  /** Signs the ForwardRequest with the wallet's nonce and the batch's deadline. */
  sign(forwarderNonce: bigint, deadline: bigint): ForwardRequestData;
}

export type BatchItem = { own: OwnCall } | { user: UserRequest };

/** The paying account's transaction an item went out in, and what its broadcast came to. */
export interface Batched {
  transaction: { id: string; txHash: string; nonce: number };
  broadcast: Broadcast;
  /** For a user's request: its row's id. */
  request?: { id: string };
}

/** `ChainTransaction.purpose` of a batch of users' requests. */
export const BATCH_PURPOSE = "relay.batch";

/** How long a signed request stays valid on chain: long enough for a slow block, short enough to die if lost. */
export const REQUEST_LIFETIME_S = 3_600n;
/** Most items in one batch: the batch transaction stays far below a block's gas limit. */
const MAX_BATCH = 50;
/** The forwarder's own work per request (signature, nonce, calldata, event) beside the gas it forwards. */
const PER_REQUEST_GAS = 60_000n;
const BATCH_BASE_GAS = 60_000n;

type Signed = { id: string; rawTx: string; txHash: string; nonce: number };

export function createBatcher(deps: {
  repo: TransactionsRepo;
  provider: JsonRpcProvider;
  account: Wallet;
  payingAccount: PayingAccount;
  forwarder: Contract;
}) {
  const { repo, provider, account, payingAccount, forwarder } = deps;

  /** Takes the nonces, signs and records `items` in one database transaction (repo.recordBatch). */
  async function record(items: readonly BatchItem[]) {
    const own = items.flatMap((item) => ("own" in item ? [item.own] : []));
    const users = items.flatMap((item) => ("user" in item ? [item.user] : []));
    const wallets = [...new Set(users.map((user) => user.from))];
    // One round trip: the account's count, the fees, the chain's time and each wallet's forwarder
    // nonce ("pending": a request of the wallet may be broadcast and not yet mined).
    const [onChain, fee, latest, chainNonces] = await Promise.all([
      provider.getTransactionCount(account.address, "pending"),
      payingAccount.fees(),
      users.length > 0 ? provider.getBlock("latest") : null,
      Promise.all(wallets.map((wallet) => forwarder.nonces(wallet, { blockTag: "pending" }) as Promise<bigint>)),
    ]);
    const onChainNonce = new Map(wallets.map((wallet, index) => [wallet, chainNonces[index]!]));
    const deadline = BigInt(latest?.timestamp ?? 0) + REQUEST_LIFETIME_S;
    const count = own.length + (users.length > 0 ? 1 : 0);
    const recorded = await repo.recordBatch({ onChain, count, wallets }, (first, last) => {
      let nonce = first;
      const transactions: (NewTransaction & Signed)[] = [];
      const requests: NewRequest[] = [];
      if (users.length > 0) {
        const batchId = randomUUID();
        // One wallet's requests take consecutive nonces in the order they arrived, after the chain's and the recorded ones.
        const signed = users.map((user, position) => {
          const recordedNext = (last.get(user.from) ?? -1n) + 1n;
          const chainNext = onChainNonce.get(user.from)!;
          const forwarderNonce = user.forwarderNonce ?? (chainNext > recordedNext ? chainNext : recordedNext);
          if (forwarderNonce >= recordedNext) last.set(user.from, forwarderNonce);
          const request = user.sign(forwarderNonce, deadline);
          const { purpose, userId, idempotencyKey, requestHash, from, to } = user;
          requests.push({
            id: randomUUID(),
            transactionId: batchId,
            position,
            purpose,
            userId,
            idempotencyKey,
            requestHash,
            from,
            to,
            data: request.data,
            forwarderNonce,
          });
          return request;
        });
        const data = forwarder.interface.encodeFunctionData("executeBatch", [signed, account.address]);
        // The forwarder passes each request's gas on and keeps 1/64 back (EIP-150).
        const gasLimit = signed.reduce((sum, request) => sum + (request.gas * 64n) / 63n + PER_REQUEST_GAS, BATCH_BASE_GAS);
        const to = forwarder.target as string;
        transactions.push({
          id: batchId,
          purpose: BATCH_PURPOSE,
          to,
          data,
          nonce,
          ...payingAccount.sign({ nonce, to, data, gasLimit, ...fee }),
        });
        nonce += 1;
      }
      for (const call of own) {
        const { to, data, gasLimit, purpose, userId, idempotencyKey, requestHash } = call;
        const signed = payingAccount.sign({ nonce, to, data, gasLimit, ...fee });
        transactions.push({ id: randomUUID(), purpose, userId, idempotencyKey, requestHash, to, data, nonce, ...signed });
        nonce += 1;
      }
      return { transactions, requests };
    });
    return { ...recorded, onChain };
  }

  /**
   * Broadcasts the batch's transactions in nonce order, after any lower nonce the chain does not
   * hold: one another process recorded and may not have broadcast yet, or one a reorganisation
   * removed (opened again, to be settled once mined again: D-90). Their bytes are in
   * ChainTransaction: the node sees every nonce in order, whichever process took it, and no gap
   * is filled while the transaction that held the nonce can still be sent.
   */
  async function broadcastInOrder(signed: Signed[], onChain: number): Promise<Broadcast[]> {
    const first = signed[0]!.nonce;
    // Best effort: without them, a lower nonce still on its way is waited for (sendRaw).
    const recorded = first > onChain ? await repo.notHeldBetween(onChain, first).catch(() => []) : [];
    // Another process's lower nonces are sent again only where the chain does not hold them now: the
    // count read before recording may have moved on since (#42: 389 broadcasts for 303 mined).
    const held = recorded.length > 0 ? await provider.getTransactionCount(account.address, "pending").catch(() => onChain) : onChain;
    const lower = recorded.filter((row) => Number(row.nonce) >= held);
    await repo
      .reopen(lower.filter((row) => row.status === "mined" || row.status === "reverted").map((row) => row.id))
      .catch(() => undefined);
    const outcomes = (await payingAccount.broadcast([...lower, ...signed])).slice(lower.length);
    return Promise.all(
      outcomes.map(async (outcome, index): Promise<Broadcast> => {
        if (!outcome.error) return outcome;
        const { rawTx, txHash } = signed[index]!;
        const meaning = await payingAccount.refusal(txHash, outcome.error);
        if (meaning === "sent") return {};
        if (meaning !== "ahead") return { error: meaning };
        // A lower nonce is still on its way (a gap, or a process that recorded and died): wait for it, bounded.
        return payingAccount.sendRaw(rawTx).then(
          (receipt) => (receipt ? { receipt } : {}),
          (error: Error) => ({ error }),
        );
      }),
    );
  }

  /**
   * Records `items` (throws what recording threw: nothing was recorded), then broadcasts them,
   * which never throws: once recorded, a batch is never recorded again.
   */
  async function run(items: readonly BatchItem[]): Promise<Batched[]> {
    const { transactions, requests, onChain } = await record(items);
    const broadcasts = await broadcastInOrder(transactions, onChain);
    const sent = (index: number) => {
      const { id, txHash, nonce } = transactions[index]!;
      return { transaction: { id, txHash, nonce }, broadcast: broadcasts[index]! };
    };
    // The batch of users' requests is the first transaction; the own calls follow in order.
    let nextOwn = requests.length > 0 ? 1 : 0;
    let nextRequest = 0;
    return items.map((item): Batched => ("user" in item ? { ...sent(0), request: { id: requests[nextRequest++]!.id } } : sent(nextOwn++)));
  }

  const submitBatch = coalesce(
    async (batch: readonly BatchItem[]): Promise<(Batched | Error)[]> => {
      try {
        return await run(batch);
      } catch (error) {
        if (batch.length === 1) return [error as Error];
        // One item's row refused (a duplicate key) must not fail the others: each alone (run
        // throws only from recording, so nothing of the batch was recorded).
        const outcomes: (Batched | Error)[] = [];
        for (const item of batch)
          outcomes.push(
            await run([item]).then(
              ([one]) => one!,
              (itemError: Error) => itemError,
            ),
          );
        return outcomes;
      }
    },
    { maxBatch: MAX_BATCH },
  );

  return {
    /**
     * Records `item` in the next batch and broadcasts it: resolves once the node has taken it
     * (or refused it: `broadcast.error`). Throws what recording threw (a duplicate key, say).
     */
    async submit(item: BatchItem): Promise<Batched> {
      const outcome = await submitBatch(item);
      if (outcome instanceof Error) throw outcome;
      return outcome;
    },
  };
}

export type Batcher = ReturnType<typeof createBatcher>;
