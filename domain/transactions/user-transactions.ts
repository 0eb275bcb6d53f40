// Users' own transactions, without ETH (docs/decisions.md D-61): the user's managed wallet signs
// an ERC-2771 ForwardRequest (and, where USDC is pulled, an EIP-2612 permit); the service's
// paying account sends it to the TrustMintForwarder through the one transaction sender. The
// contracts see the user's wallet as the caller, exactly as when that wallet calls them itself.
//
// The forwarder takes each user's requests in nonce order, so one user's transactions are signed
// and settled one at a time (a lease shared by every process); different users run in parallel.
import { randomUUID } from "node:crypto";
import {
  type Contract,
  type HDNodeWallet,
  type Interface,
  type JsonRpcProvider,
  type Signature,
  type TypedDataDomain,
  TypedDataEncoder,
  type TypedDataField,
} from "ethers";
import { FORWARD_REQUEST_TYPES, FORWARDER_DOMAIN, PERMIT_TYPES } from "../../core/eip712.js";
import type { Logger } from "../../core/logger.js";
import type { ChainTransaction } from "../../generated/prisma/client.js";
import type { Db } from "../db.js";
import { AppError } from "../errors.js";
import { type ProcessPresence, processAlive } from "../processes/presence.js";
import { decodeRevert } from "./failures.js";
import type { SentTransaction, TransactionSender } from "./sender.js";

/** An EIP-2612 permit signed by the user, in the (deadline, v, r, s) form the contracts take. */
export interface PermitSignature {
  deadline: bigint;
  v: number;
  r: string;
  s: string;
}

/** The call's data, or, where USDC is pulled, a permit for `spender` to take `value` micro-USDC and the data built from it. */
export type UserCallData =
  | { data: string; permit?: undefined }
  | { data: (permit: PermitSignature) => string; permit: { spender: string; value: bigint } };

export type UserCall = UserCallData & {
  user: { id: string; walletIndex: number; walletAddress: string };
  /** What it does (`vault.deposit`, ...): with the key, a retry finds the transaction sent first. */
  purpose: string;
  idempotencyKey: string;
  /** The request behind it (domain/idempotency/operation-key.ts): kept with the transaction. */
  requestHash?: string;
  to: string;
};

export interface UserTransactionDeps {
  db: Db;
  provider: JsonRpcProvider;
  chainId: number;
  sender: Pick<TransactionSender, "send" | "resume">;
  /** This process, holder of the leases it takes: a dead holder's lease is taken over at once. */
  presence: Pick<ProcessPresence, "id">;
  forwarder: Contract;
  usdc: Contract;
  signerOf(walletIndex: number): HDNodeWallet;
  errors: Interface;
  /** The calls users may make through the relay (the platform's contracts and their user functions). */
  isAllowed(to: string, data: string): boolean | Promise<boolean>;
  logger?: Pick<Logger, "warn">;
  /** How long a request waits for the user's earlier transaction before answering 503. */
  leaseWaitMs?: number;
}

/** What a retry of a request is found by: the transaction recorded under it. */
type RequestKey = { userId: string; idempotencyKey: string; purpose: string };

/** How long a signed request stays valid on chain: long enough for a slow block, short enough to die if lost. */
const REQUEST_LIFETIME_S = 3_600n;
/**
 * A lease outlives the sender's receipt wait (60 s); an expired one belonged to a dead process.
 * A holder whose process stopped beating loses it sooner (domain/processes/presence.ts).
 */
const LEASE_SECONDS = 120;
/** Forwarded gas above the direct call's estimate: the forwarder appends 20 bytes and state can move. */
const FORWARD_GAS_HEADROOM_PERCENT = 125n;
/** The forwarder's own work (signature, nonce, calldata) on top of the forwarded gas. */
const FORWARDER_OVERHEAD_GAS = 120_000n;

/**
 * EIP-712 signature by the wallet's key over values that are all literal (no ENS name to
 * resolve): what Wallet.signTypedData computes, without its asynchronous field resolution.
 */
function signTyped(
  wallet: HDNodeWallet,
  domain: TypedDataDomain,
  types: Record<string, TypedDataField[]>,
  value: Record<string, unknown>,
): Signature {
  return wallet.signingKey.sign(TypedDataEncoder.hash(domain, types, value));
}

export function createUserTransactions(deps: UserTransactionDeps) {
  const { db, provider, chainId, forwarder, usdc } = deps;
  const leaseWaitMs = deps.leaseWaitMs ?? 90_000;
  let permitDomain: Promise<{ name: string; version: string }> | undefined;
  const inProcess = new Map<string, Promise<unknown>>();

  /** The token's EIP-712 name and version as it reports them (ERC-5267, else name() and version()). */
  function tokenDomain() {
    permitDomain ??= (async () => {
      try {
        const [, name, version] = (await usdc.eip712Domain()) as [string, string, string];
        return { name, version };
      } catch {
        return { name: (await usdc.name()) as string, version: (await usdc.version()) as string };
      }
    })().catch((error) => {
      permitDomain = undefined;
      throw error;
    });
    return permitDomain;
  }

  /**
   * Takes the user's lease (one conditional upsert), waiting while another holder has it, and
   * reads, in the same statement, the transaction an earlier attempt of this request recorded:
   * a retry of that one needs no lease (it sends nothing new), even while a dead process's
   * lease has not expired yet.
   */
  async function leaseOrEarlier(key: RequestKey): Promise<{ holder: string | null; earlier: ChainTransaction | null }> {
    const holder = randomUUID();
    const processId = await deps.presence.id();
    const deadline = Date.now() + leaseWaitMs;
    for (let wait = 5; ; wait = Math.min(wait * 2, 200)) {
      const [row] = await db.prisma.$queryRaw<(ChainTransaction & { leaseHolder: string | null })[]>`
        WITH "taken" AS (
          INSERT INTO "UserTransactionLease" ("userId", "holder", "expiresAt", "processId")
          VALUES (${key.userId}, ${holder}, now() + make_interval(secs => ${LEASE_SECONDS}), ${processId})
          ON CONFLICT ("userId") DO UPDATE
            SET "holder" = EXCLUDED."holder", "expiresAt" = EXCLUDED."expiresAt", "processId" = EXCLUDED."processId"
            WHERE "UserTransactionLease"."expiresAt" < now()
              OR ("UserTransactionLease"."processId" IS NOT NULL AND NOT ${processAlive(`"UserTransactionLease"."processId"`)})
          RETURNING "holder")
        SELECT (SELECT "holder" FROM "taken") AS "leaseHolder", t.* FROM (SELECT 1) AS "one"
          LEFT JOIN "ChainTransaction" t
            ON t."userId" = ${key.userId} AND t."idempotencyKey" = ${key.idempotencyKey} AND t."purpose" = ${key.purpose}`;
      const taken = row?.leaseHolder === holder ? holder : null;
      const { leaseHolder: _, ...transaction } = row ?? { leaseHolder: null };
      const earlier = "id" in transaction && transaction.id ? (transaction as ChainTransaction) : null;
      if (taken || earlier) return { holder: taken, earlier };
      if (Date.now() > deadline) {
        throw new AppError("SERVICE_UNAVAILABLE", "Another transaction of yours is still in flight; retry with the same Idempotency-Key");
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  /**
   * Runs `work` holding the user's lease: in this process one after another, across processes by
   * the lease row (a retry of a recorded transaction runs without it). The answer does not wait
   * for the lease's release; the user's next transaction in this process does.
   */
  function oneAtATimeFor<T>(key: RequestKey, work: (earlier: ChainTransaction | null) => Promise<T>): Promise<T> {
    const { userId } = key;
    const previous = inProcess.get(userId) ?? Promise.resolve();
    let released: Promise<unknown> = Promise.resolve();
    const run = previous.then(async () => {
      const { holder, earlier } = await leaseOrEarlier(key);
      if (!holder) return work(earlier);
      try {
        return await work(earlier);
      } finally {
        released = db.prisma.userTransactionLease.deleteMany({ where: { userId, holder } }).catch((error: Error) =>
          // Expires by itself within LEASE_SECONDS.
          deps.logger?.warn({ userId, error: error.message }, "could not release a user's transaction lease"),
        );
      }
    });
    const tail = run.then(
      () => released,
      () => released,
    );
    inProcess.set(userId, tail);
    void tail.then(() => {
      if (inProcess.get(userId) === tail) inProcess.delete(userId);
    });
    return run;
  }

  async function signPermit(
    wallet: HDNodeWallet,
    permit: { spender: string; value: bigint; nonce: bigint; deadline: bigint },
  ): Promise<PermitSignature> {
    const domain = { ...(await tokenDomain()), chainId, verifyingContract: usdc.target as string };
    const { spender, value, nonce, deadline } = permit;
    const { v, r, s } = signTyped(wallet, domain, PERMIT_TYPES, { owner: wallet.address, spender, value, nonce, deadline });
    return { deadline, v, r, s };
  }

  async function relay(call: UserCall): Promise<SentTransaction> {
    const wallet = deps.signerOf(call.user.walletIndex);
    if (wallet.address.toLowerCase() !== call.user.walletAddress.toLowerCase()) {
      throw new Error(`managed wallet ${call.user.walletIndex} is not ${call.user.walletAddress}: the seed changed`);
    }
    // "pending": the user's earlier transaction may be broadcast and not yet mined.
    const [latest, nonce, permitNonce] = await Promise.all([
      provider.getBlock("latest"),
      forwarder.nonces(wallet.address, { blockTag: "pending" }) as Promise<bigint>,
      call.permit ? (usdc.nonces(wallet.address, { blockTag: "pending" }) as Promise<bigint>) : undefined,
    ]);
    const deadline = BigInt(latest!.timestamp) + REQUEST_LIFETIME_S;
    const data = call.permit ? call.data(await signPermit(wallet, { ...call.permit, nonce: permitNonce!, deadline })) : call.data;
    if (!(await deps.isAllowed(call.to, data))) throw new Error(`the relay does not forward this call (${call.to}, ${data.slice(0, 10)})`);

    // The user's own call, simulated: a revert is decoded here, before anything is signed or recorded.
    let gas: bigint;
    try {
      gas = await provider.estimateGas({ from: wallet.address, to: call.to, data });
    } catch (error) {
      throw decodeRevert(deps.errors, error) ?? error;
    }
    gas = (gas * FORWARD_GAS_HEADROOM_PERCENT) / 100n;
    const request = { from: wallet.address, to: call.to, value: 0n, gas, nonce, deadline, data };
    const signature = signTyped(
      wallet,
      { ...FORWARDER_DOMAIN, chainId, verifyingContract: forwarder.target as string },
      FORWARD_REQUEST_TYPES,
      request,
    ).serialized;
    const { nonce: _signedNonce, ...requestData } = request;
    return deps.sender.send({
      purpose: call.purpose,
      userId: call.user.id,
      idempotencyKey: call.idempotencyKey,
      requestHash: call.requestHash,
      to: forwarder.target as string,
      data: forwarder.interface.encodeFunctionData("execute", [{ ...requestData, signature }]),
      // The forwarder passes `gas` on and keeps 1/64 of it back (EIP-150).
      gasLimit: (gas * 64n) / 63n + FORWARDER_OVERHEAD_GAS,
      // Looked up under the user's lease just before.
      isNew: true,
    });
  }

  return {
    /**
     * Sends `call` as the user and returns its receipt. A revert is thrown decoded
     * (TransactionRevertedError) with nothing recorded when the simulation finds it, or recorded
     * as reverted when the chain does. A retry with the same (user, key, purpose) returns the
     * transaction sent first and sends nothing.
     */
    async send(call: UserCall): Promise<SentTransaction> {
      const key = { userId: call.user.id, idempotencyKey: call.idempotencyKey, purpose: call.purpose };
      // An earlier attempt with the same key (a retry, or a concurrent request that held the
      // lease first) is found under the lease and settled, never sent again.
      return oneAtATimeFor(key, (earlier) => (earlier ? deps.sender.resume(earlier, call.requestHash) : relay(call)));
    },
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
