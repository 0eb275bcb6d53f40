// Users' own transactions, without ETH (docs/decisions.md D-61, D-86): the user's managed wallet
// signs an ERC-2771 ForwardRequest; the paying account sends it to the TrustMintForwarder in a
// batch with every other request waiting (`executeBatch`, batcher.ts). The contracts see the
// user's wallet as the caller, exactly as when that wallet calls them itself. Each request gets
// its own answer: its own logs of the batch's receipt, or its own revert, decoded. A contract
// that pulls the wallet's USDC gets a standing allowance once, by an EIP-2612 permit. A wallet
// the user holds signs its own request instead, prepared first (self-custody.ts, D-119).
import type { Contract, HDNodeWallet, Interface, JsonRpcProvider, Log, TransactionReceipt } from "ethers";
import { coalesce } from "../../core/coalesce.js";
import { FORWARD_REQUEST_TYPES, FORWARDER_DOMAIN, signTyped } from "../../core/eip712.js";
import type { Logger } from "../../core/logger.js";
import type { RelayedRequest } from "../../generated/prisma/client.js";
import { isServiceKey, keyReused } from "../idempotency/operation-key.js";
import { createAllowances } from "./allowances.js";
import type { UserRequest } from "./batcher.js";
import { needsAllowance, requestOf, type UserCall } from "./calls.js";
import { decodeRevert, TransactionRefusedError, TransactionRevertedError } from "./failures.js";
import type { Broadcast } from "./paying-account.js";
import type { RequestKey, TransactionsRepo } from "./repo.js";
import { createSelfCustody } from "./self-custody.js";
import type { SentTransaction, TransactionSender } from "./sender.js";
import { createVerdicts, type Outcome } from "./verdicts.js";
import type { Eip712Domain } from "./wallet-signatures.js";

export type { UserCall, UserCallData } from "./calls.js";

export interface UserTransactionDeps {
  repo: TransactionsRepo;
  provider: JsonRpcProvider;
  chainId: number;
  /** The one transaction sender: the relay's batches go out through it. */
  sender: TransactionSender;
  forwarder: Contract;
  usdc: Contract;
  signerOf(walletIndex: number): HDNodeWallet;
  /** The managed wallet at `address` (a cancellation signs with it: D-103); null for a wallet its user holds. */
  signerOfWallet(address: string): Promise<HDNodeWallet | null>;
  errors: Interface;
  /** The calls users may make through the relay (the platform's contracts and their user functions). */
  isAllowed(to: string, data: string): boolean | Promise<boolean>;
  logger?: Pick<Logger, "warn" | "info">;
}

/** The statuses of a request that did nothing on chain (its forwarder nonce unused). */
const DID_NOTHING = new Set(["skipped", "failed"]);

type BatchOutcome = { receipt: TransactionReceipt | null; outcomes: Map<string, Outcome> };

/** Forwarded gas above the direct call's estimate: the forwarder appends 20 bytes and state can move. */
const FORWARD_GAS_HEADROOM_PERCENT = 125n;

export function createUserTransactions(deps: UserTransactionDeps) {
  const { repo, provider, chainId, forwarder, usdc, sender } = deps;
  const allowances = createAllowances({ provider, chainId, usdc, sender });
  const forwarderAddress = (forwarder.target as string).toLowerCase();
  const executed = forwarder.interface.getEvent("ExecutedForwardRequest")!;
  /** Requests recorded under these keys (repo.recordedFor), one statement for every caller waiting. */
  const findEarlier = coalesce((keys: readonly RequestKey[]) => repo.recordedFor(keys));
  const verdicts = createVerdicts({
    provider,
    forwarder,
    chainId,
    signerOfWallet: deps.signerOfWallet,
    submit: (item) => sender.submit(item),
    settle: (transactionId, broadcast) => settleBatch(transactionId, broadcast),
    recorded: async (key) => (await findEarlier(key)).request,
    releaseKey: (id) => repo.releaseKey(id),
  });

  const forwarderDomain: Eip712Domain = { ...FORWARDER_DOMAIN, chainId, verifyingContract: forwarder.target as string };

  /** The call simulated from `from` (eth_estimateGas), its revert decoded. */
  const simulate = (from: string, to: string, data: string) =>
    provider.estimateGas({ from, to, data }).catch((error) => {
      throw decodeRevert(deps.errors, error) ?? error;
    });

  async function checkAllowed(call: UserCall) {
    if (!(await deps.isAllowed(call.to, call.data)))
      throw new Error(`the relay does not forward this call (${call.to}, ${call.data.slice(0, 10)})`);
  }

  const selfCustody = createSelfCustody({
    repo,
    provider,
    forwarder,
    usdc,
    allowances,
    forwarderDomain,
    simulate,
    checkAllowed,
    headroomPercent: FORWARD_GAS_HEADROOM_PERCENT,
    sender,
  });

  /**
   * The managed wallet's call made ready for a batch: its data checked against the allow-list
   * and simulated from the user's own address (a revert is decoded here, before anything is
   * signed for the batch or recorded), with what the batch needs to sign it with the wallet's nonce.
   */
  async function prepare(call: UserCall): Promise<UserRequest> {
    const wallet = deps.signerOf(call.user.walletIndex);
    if (wallet.address.toLowerCase() !== call.user.walletAddress.toLowerCase()) {
      throw new Error(`managed wallet ${call.user.walletIndex} is not ${call.user.walletAddress}: the seed changed`);
    }
    const { data } = call;
    await checkAllowed(call);
    let estimate: bigint;
    try {
      estimate = await simulate(wallet.address, call.to, data);
    } catch (error) {
      // The contract's own checks come before its pull, so only a pull it may not make yet is left.
      if (!needsAllowance(call, error)) throw error;
      await allowances.ensureAllowance(wallet, call.user.id, call.pulls!);
      estimate = await simulate(wallet.address, call.to, data);
    }
    const gas = (estimate * FORWARD_GAS_HEADROOM_PERCENT) / 100n;
    return {
      ...requestOf(call, wallet.address),
      sign(forwarderNonce, deadline) {
        const signed = { from: wallet.address, to: call.to, value: 0n, gas, nonce: forwarderNonce, deadline, data };
        const signature = signTyped(wallet, forwarderDomain, FORWARD_REQUEST_TYPES, signed).serialized;
        const { nonce: _signedNonce, ...request } = signed;
        return { ...request, signature };
      },
    };
  }

  /**
   * Each request's outcome from its batch's receipt: the forwarder emits
   * ExecutedForwardRequest(signer, nonce, success) after each request it ran, so a request's own
   * logs are those since the previous one; a request without the event was skipped (its nonce or
   * deadline no longer held). A reverted one is replayed after the batch to decode its error.
   */
  async function outcomesOf(receipt: TransactionReceipt, requests: RelayedRequest[]): Promise<Map<string, Outcome>> {
    const ran = new Map<string, { success: boolean; logs: Log[] }>();
    let since: Log[] = [];
    for (const log of receipt.logs) {
      if (log.address.toLowerCase() !== forwarderAddress || log.topics[0] !== executed.topicHash) {
        since.push(log);
        continue;
      }
      const { signer, nonce, success } = forwarder.interface.decodeEventLog(executed, log.data, log.topics);
      ran.set(`${(signer as string).toLowerCase()}:${nonce}`, { success: success as boolean, logs: since });
      since = [];
    }
    const outcomes = new Map<string, Outcome>();
    for (const request of requests) {
      const run = ran.get(`${request.from}:${request.forwarderNonce}`);
      if (!run) outcomes.set(request.id, { status: "skipped" });
      else if (run.success) outcomes.set(request.id, { status: "executed", logs: run.logs });
      else {
        let error: TransactionRevertedError | null = null;
        try {
          await provider.call({ from: request.from, to: request.to, data: request.data, blockTag: receipt.blockNumber });
        } catch (replayed) {
          error = decodeRevert(deps.errors, replayed);
        }
        outcomes.set(request.id, { status: "reverted", error: error ?? new TransactionRevertedError(null, "reverted") });
      }
    }
    return outcomes;
  }

  /**
   * Settles a batch: its transaction mined (broadcast again first where a restart found it
   * unsent) or refused, and every request's row with its outcome, in one statement. Several
   * callers of one batch share one settling.
   */
  const settling = new Map<string, Promise<BatchOutcome>>();
  function settleBatch(transactionId: string, broadcast?: Broadcast): Promise<BatchOutcome> {
    let settled = settling.get(transactionId);
    if (!settled) {
      settled = settle(transactionId, broadcast).finally(() => settling.delete(transactionId));
      settling.set(transactionId, settled);
    }
    return settled;
  }
  async function settle(transactionId: string, broadcast?: Broadcast): Promise<BatchOutcome> {
    const [transaction, requests] = await repo.batch(transactionId);
    let receipt: TransactionReceipt | null = null;
    try {
      if (broadcast?.error) throw await sender.refused(transaction, broadcast.error);
      receipt = await sender.mined(transaction.txHash, broadcast ? broadcast.receipt : await sender.rebroadcast(transaction));
    } catch (error) {
      if (!(error instanceof TransactionRefusedError)) throw error; // not mined yet: the requests stay pending
    }
    // A batch refused, or reverted as a whole, ran none of its requests: their nonces are unused.
    const outcomes =
      receipt?.status === 1
        ? await outcomesOf(receipt, requests)
        : new Map(requests.map((request): [string, Outcome] => [request.id, { status: "failed" }]));
    // Not run by a mined batch: said so only once it can never run, or run by whoever ran it first
    // (D-103). A batch the node refused was never public.
    for (const request of receipt ? requests : []) {
      const { status } = outcomes.get(request.id)!;
      if (status === "skipped" || status === "failed") outcomes.set(request.id, await verdicts.final(request, transaction.data, receipt!));
    }
    await repo.settleRequests(
      requests.map((request) => {
        const outcome = outcomes.get(request.id)!;
        return { id: request.id, status: outcome.status, error: outcome.status === "reverted" ? outcome.error.message : null };
      }),
    );
    return { receipt, outcomes };
  }

  /** A request's answer from its batch's outcome: its own part of the receipt, or its error. */
  function answerOf(requestId: string, { receipt, outcomes }: BatchOutcome): SentTransaction {
    const outcome = outcomes.get(requestId)!;
    if (outcome.status === "reverted") throw outcome.error;
    // Run by this batch, or first by another transaction (D-103).
    const ran = outcome.status === "executed" ? (outcome.receipt ?? receipt) : null;
    if (outcome.status !== "executed" || !ran) {
      throw new TransactionRefusedError(outcome.status === "skipped" ? "the forwarder did not run the request" : "the batch was refused");
    }
    return { txHash: ran.hash, blockNumber: ran.blockNumber, receipt: ran, logs: outcome.logs };
  }

  /** The outcome of a request recorded before (a retry): settled from its batch, never sent again. */
  async function resume(request: RelayedRequest, requestHash?: string): Promise<SentTransaction> {
    if (requestHash && request.requestHash && request.requestHash !== requestHash) throw keyReused();
    return answerOf(request.id, await settleBatch(request.transactionId));
  }

  /** A request's earlier attempt under its key, settled; undefined when there is none. */
  async function earlier(call: UserCall): Promise<SentTransaction | undefined> {
    const found = await findEarlier({ userId: call.user.id, idempotencyKey: call.idempotencyKey, purpose: call.purpose });
    if (found.request && DID_NOTHING.has(found.request.status)) {
      if (call.requestHash && found.request.requestHash && found.request.requestHash !== call.requestHash) throw keyReused();
      // Skipped by the forwarder or in a refused batch (a reorganisation can leave a request so,
      // D-92): nothing of it holds, so its key runs again. The new request signs at its nonce,
      // which the chain never used: at most one of the two can ever run.
      await repo.releaseKey(found.request.id);
      return undefined;
    }
    if (found.request) return resume(found.request, call.requestHash);
    if (found.single) return sender.resume(found.single, call.requestHash);
    return undefined;
  }

  /**
   * At start: settles the transactions a stopped process left in flight (sender.reconcile),
   * then every request still pending in them. Returns how many batches it settled.
   */
  async function reconcile(): Promise<number> {
    await sender.reconcile();
    const open = await repo.openBatches();
    let settled = 0;
    for (const transactionId of open) {
      try {
        await settleBatch(transactionId);
        settled += 1;
      } catch (error) {
        deps.logger?.warn({ transactionId, error: (error as Error).message }, "reconcile: a batch of users' requests not settled");
      }
    }
    if (open.length > 0) deps.logger?.info({ batches: open.length, settled }, "reconciled users' requests left in flight");
    return settled;
  }

  return {
    /**
     * Sends `call` as the user, in the next batch, and returns its part of the batch's receipt.
     * A revert is thrown decoded (TransactionRevertedError) with nothing recorded when the
     * simulation finds it, or recorded as reverted when the chain does. A retry with the same
     * (user, key, purpose) returns the request sent first and sends nothing.
     */
    async send(call: UserCall): Promise<SentTransaction> {
      // The wallet signed the token's authorization (D-120): the service's own transaction carries it.
      if (call.signed && call.pulls && call.byAuthorization) {
        const sent = await selfCustody.sendAuthorized({
          ...call,
          signed: call.signed,
          pulls: call.pulls,
          byAuthorization: call.byAuthorization,
        });
        if (sent) return sent;
      }
      // A key the service made for this request alone has no earlier attempt.
      const found = isServiceKey(call.idempotencyKey) ? undefined : await earlier(call);
      if (found) return found;
      const { signed } = call;
      const { request, release } = signed
        ? await selfCustody.prepareSigned({ ...call, signed })
        : { request: await prepare(call), release: undefined };
      let batched: Awaited<ReturnType<typeof sender.submit>>;
      try {
        batched = await sender.submit({ user: request });
      } catch (error) {
        await release?.();
        // The same key recorded meanwhile by a concurrent attempt (the unique key refused this one).
        const concurrent = await earlier(call);
        if (concurrent) return concurrent;
        throw error;
      }
      return answerOf(batched.request!.id, await settleBatch(batched.transaction.id, batched.broadcast));
    },

    /**
     * After a reorganisation (the job `relay.restore`, every few seconds): what it removed of the
     * service's transactions is broadcast again and settled anew, each request from its batch's new
     * receipt (D-90), as are the removed batches a later batch broadcast again. Answers how many
     * transactions were removed.
     */
    async restore(): Promise<number> {
      const removed = await sender.restoreRemoved();
      if (removed > 0) {
        await reconcile();
        return removed;
      }
      // Removed batches another batch broadcast again (batcher.ts) are mined and still open: settled here.
      for (const transactionId of await repo.openBatchesBelow(await provider.getTransactionCount(sender.address, "latest"))) {
        await settleBatch(transactionId).catch((error: Error) =>
          deps.logger?.warn({ transactionId, error: error.message }, "restore: a batch broadcast again not settled"),
        );
      }
      return removed;
    },

    reconcile,

    /** What a wallet the user holds signs for `call` (D-119): nothing is sent. */
    prepareForSignature: selfCustody.prepareForSignature,
  };
}

export type UserTransactions = ReturnType<typeof createUserTransactions>;

/**
 * The call a relayed transaction made (from the user, to the target), decoded from the
 * forwarder's `execute` calldata; null for any other transaction.
 */
export function forwardedCall(forwarder: { address: string; iface: Interface }, transaction: { to: string; data: string }) {
  if (transaction.to.toLowerCase() !== forwarder.address.toLowerCase()) return null;
  try {
    const parsed = forwarder.iface.parseTransaction({ data: transaction.data });
    if (parsed?.name !== "execute") return null;
    const request = parsed.args[0] as { from: string; to: string; data: string };
    return { from: request.from, to: request.to, data: request.data };
  } catch {
    return null;
  }
}
