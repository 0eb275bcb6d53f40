// Writes of a wallet the user holds (D-119): the relay cannot sign them, so a write runs in two
// calls. The first prepares the ForwardRequest (and, where the call pulls USDC not yet allowed,
// a permit for exactly that amount) and records it; the second finds it by its call, checks the
// wallet's signature over it, takes it once, and hands it to the batcher at the very nonce signed.
// A call that takes USDC's EIP-3009 authorization instead (D-120) is one signature, and the
// service sends that call itself.
import { randomUUID } from "node:crypto";
import { type Contract, getAddress, isError, type JsonRpcProvider, Signature, ZeroHash } from "ethers";
import type { PreparedRequest } from "../../generated/prisma/client.js";
import type { Allowances } from "./allowances.js";
import type { ForwardRequestData, UserRequest } from "./batcher.js";
import { needsAllowance, requestOf, type UserCall, type UserCallData } from "./calls.js";
import { TransactionRevertedError } from "./failures.js";
import type { PreparedAuthorization, PreparedPermit, TransactionsRepo } from "./repo.js";
import type { SentTransaction, TransactionSender } from "./sender.js";
import {
  authorizationTypedData,
  DEADLINE_MARGIN_S,
  type Eip712Domain,
  forwardRequestTypedData,
  PERMIT_SIGNATURE_HEADER,
  PREPARED_LIFETIME_S,
  type PreparedWrite,
  permitTypedData,
  signatureRefusals,
  signerOf,
  type TypedData,
  UNSIMULATED_PULL_GAS,
} from "./wallet-signatures.js";

type SignedCall = UserCall & { signed: NonNullable<UserCall["signed"]> };
type AuthorizedCall = UserCall & Required<Pick<UserCallData, "pulls" | "byAuthorization">>;

export function createSelfCustody(deps: {
  repo: TransactionsRepo;
  provider: JsonRpcProvider;
  forwarder: Contract;
  usdc: Contract;
  allowances: Allowances;
  forwarderDomain: Eip712Domain;
  /** The call simulated from the wallet (its gas), its revert decoded. */
  simulate(from: string, to: string, data: string): Promise<bigint>;
  /** Throws for a call the relay does not forward. */
  checkAllowed(call: UserCall): Promise<void>;
  /** Gas forwarded above the simulation's estimate, in percent. */
  headroomPercent: bigint;
  /** The service's own transactions: a call carrying the wallet's authorization is one (D-120). */
  sender: Pick<TransactionSender, "earlier" | "resume" | "send">;
}) {
  const { repo, provider, forwarder, usdc, allowances, forwarderDomain, simulate } = deps;
  const { allowanceAndBalance, emptyWallet, grant } = allowances;

  /**
   * A call of a wallet the user holds, made ready for its signature (D-119): checked and simulated
   * as a managed wallet's call is, with the wallet's next forwarder nonce and a short deadline;
   * where it pulls USDC the wallet has not allowed, an EIP-2612 permit for exactly that amount
   * is asked for as well. Recorded, so that the write finds the values it was signed with.
   */
  async function prepareForSignature(call: UserCall): Promise<PreparedWrite> {
    if (call.pulls && call.byAuthorization && (await takesAuthorization(call as AuthorizedCall)))
      return prepareAuthorization(call as AuthorizedCall);
    await deps.checkAllowed(call);
    const from = call.user.walletAddress.toLowerCase();
    const [latest, chainNonce, recorded] = await Promise.all([
      provider.getBlock("latest"),
      forwarder.nonces(from, { blockTag: "pending" }) as Promise<bigint>,
      repo.lastRecordedNonce(from),
    ]);
    const deadline = BigInt(latest!.timestamp) + PREPARED_LIFETIME_S;
    let gas: bigint;
    let permit: PreparedPermit | null = null;
    try {
      gas = ((await simulate(from, call.to, call.data)) * deps.headroomPercent) / 100n;
    } catch (error) {
      if (!needsAllowance(call, error)) throw error;
      const { spender, value } = call.pulls!;
      const [, balance] = await allowanceAndBalance(from, spender);
      if (balance === 0n) throw emptyWallet(from, value);
      const nonce = (await usdc.nonces(from, { blockTag: "pending" })) as bigint;
      permit = { spender: getAddress(spender), value: `${value}`, nonce: `${nonce}`, deadline: `${deadline}` };
      gas = UNSIMULATED_PULL_GAS;
    }
    const next = recorded !== null && recorded + 1n > chainNonce ? recorded + 1n : chainNonce;
    const values = { from: getAddress(from), to: getAddress(call.to), gas, forwarderNonce: next, deadline, data: call.data };
    await repo.addPrepared({ ...preparedOf(call, from, deadline), gas, forwarderNonce: next, permit, authorization: null });
    return {
      signer: values.from,
      expiresAt: new Date(Number(deadline) * 1000),
      request: forwardRequestTypedData(forwarderDomain, values),
      permit: permit && permitTypedData(await allowances.permitDomain(), values.from, permit),
    };
  }

  /**
   * A call that pulls USDC by the wallet's EIP-3009 authorization (D-120): one signature, the
   * token's `ReceiveWithAuthorization` of exactly what it pulls to the contract that pulls, with the
   * call's own nonce, valid as long as a prepared request. Checked first as the call itself: run from
   * the wallet, where only the allowance it does not need may stop it, and against its balance.
   */
  async function prepareAuthorization(call: AuthorizedCall): Promise<PreparedWrite> {
    const from = call.user.walletAddress.toLowerCase();
    const { spender, value } = call.pulls;
    await simulate(from, call.to, call.data).catch((error) => {
      if (!needsAllowance(call, error)) throw error;
    });
    const [[, balance], latest] = await Promise.all([allowanceAndBalance(from, spender), provider.getBlock("latest")]);
    if (balance < value) throw emptyWallet(from, value, balance);
    const deadline = BigInt(latest!.timestamp) + PREPARED_LIFETIME_S;
    const authorization = { value: `${value}`, nonce: call.byAuthorization.nonce };
    const row = { ...preparedOf(call, from, deadline), gas: null, forwarderNonce: null, permit: null, authorization };
    await repo.addPrepared(row);
    return { signer: getAddress(from), expiresAt: new Date(Number(deadline) * 1000), request: await typedDataOf(row), permit: null };
  }

  /**
   * Whether the call can be paid by an authorization: the token takes them (USDC does), and so does
   * the call's contract (one of a deployment recorded by an earlier version may not). The twin, run
   * with an authorization already expired, is refused with a reason (the contract's or the token's),
   * not for want of the function (a revert with no data).
   */
  async function takesAuthorization(call: AuthorizedCall): Promise<boolean> {
    if (!(await allowances.takesAuthorizations())) return false;
    const from = getAddress(call.user.walletAddress);
    const probe = call.byAuthorization.data({ from, validAfter: 0n, validBefore: 0n, v: 27, r: ZeroHash, s: ZeroHash });
    return provider.call({ to: call.to, data: probe }).then(
      () => true,
      (error) => {
        if (!isError(error, "CALL_EXCEPTION")) throw error;
        return typeof error.data === "string" && error.data.length > 2;
      },
    );
  }

  /** What the wallet signed for a prepared request: its authorization (D-120), or its forwarded request. */
  async function typedDataOf(row: Pick<PreparedRequest, "from" | "to" | "deadline" | "authorization">): Promise<TypedData> {
    const authorization = row.authorization as PreparedAuthorization | null;
    if (!authorization) return forwardRequestTypedData(forwarderDomain, forwardValuesOf(row as PreparedRequest));
    const values = { from: getAddress(row.from), to: getAddress(row.to), validBefore: `${row.deadline}`, ...authorization };
    return authorizationTypedData(await allowances.permitDomain(), values);
  }

  /**
   * The request prepared for this call that the wallet signed, checked (its signer, deadline, and
   * permit) and taken once; with `release` to give it back if the write is refused before it is
   * recorded. Each refusal has its code (wallet-signatures.ts), nothing sent.
   */
  async function takeSigned(call: SignedCall) {
    const from = call.user.walletAddress.toLowerCase();
    const candidates = await repo.preparedFor(call.user.id, call.to, call.data);
    if (candidates.length === 0) throw signatureRefusals.changed();
    let row: PreparedRequest | undefined;
    for (const each of candidates) {
      if (signerOf(await typedDataOf(each), call.signed.signature) === from) {
        row = each;
        break;
      }
    }
    if (!row) throw signatureRefusals.mismatch();
    if (row.usedAt) throw signatureRefusals.replayed("sent already");
    const latest = await provider.getBlock("latest");
    if (row.deadline <= BigInt(latest!.timestamp) + DEADLINE_MARGIN_S) throw signatureRefusals.expired();
    const permit = row.permit as PreparedPermit | null;
    let permitSignature: Signature | undefined;
    if (permit && (await allowanceAndBalance(from, permit.spender))[0] < BigInt(permit.value)) {
      const signature = call.signed.permitSignature;
      if (!signature)
        throw signatureRefusals.required(
          "this write pulls your USDC: sign the permit the prepare call answered too",
          PERMIT_SIGNATURE_HEADER,
        );
      if (signerOf(permitTypedData(await allowances.permitDomain(), getAddress(from), permit), signature) !== from)
        throw signatureRefusals.mismatch(PERMIT_SIGNATURE_HEADER);
      permitSignature = Signature.from(signature);
    }
    if (!(await repo.takePrepared(row.id, new Date()))) throw signatureRefusals.replayed("sent already");
    const taken = row;
    return {
      row: taken,
      permit: permit && permitSignature ? { permit, signature: permitSignature } : null,
      release: () => repo.releasePrepared(taken.id),
    };
  }

  /**
   * The call of a wallet the user holds, signed by it (D-119): the prepared request taken, its
   * permit submitted where the allowance still falls short, the call simulated again; the batch
   * must give it the very nonce it was signed with. `release` gives the prepared request back.
   */
  async function prepareSigned(call: SignedCall) {
    const taken = await takeSigned(call);
    try {
      if (taken.row.authorization) throw signatureRefusals.changed();
      const values = forwardValuesOf(taken.row);
      if (taken.permit) {
        const { permit, signature } = taken.permit;
        const value = BigInt(permit.value);
        const signedPermit = { spender: permit.spender, value, nonce: BigInt(permit.nonce), deadline: BigInt(permit.deadline) };
        await grant(values.from, call.user.id, signedPermit, signature).catch(async (error) => {
          if ((await allowanceAndBalance(values.from, permit.spender))[0] >= value) return; // applied all the same
          // The token refused it: another permit of the wallet used its nonce meanwhile, so it can never apply.
          throw error instanceof TransactionRevertedError ? signatureRefusals.replayed("its permit's nonce is used") : error;
        });
      }
      await simulate(values.from, values.to, values.data);
      const request: UserRequest = {
        ...requestOf(call, values.from),
        sign(forwarderNonce): ForwardRequestData {
          // Another request of the wallet took the nonce it signed: it can never run.
          if (forwarderNonce !== values.forwarderNonce) throw signatureRefusals.replayed("its nonce is used");
          return {
            from: values.from,
            to: values.to,
            value: 0n,
            gas: values.gas,
            deadline: values.deadline,
            data: values.data,
            signature: call.signed.signature,
          };
        },
      };
      return { request, release: taken.release };
    } catch (error) {
      await taken.release();
      throw error;
    }
  }

  /**
   * The call carrying the wallet's signed authorization (D-120), sent by the service as its own
   * transaction: the prepared authorization checked and taken once as any prepared request, then
   * recorded and sent under the write's key, so a retry settles the one sent. Given back when
   * nothing was recorded (its simulation refused it) or the node refused what was. Null, with
   * nothing taken, when what was prepared for the call is a forwarded request.
   */
  async function sendAuthorized(call: SignedCall & AuthorizedCall): Promise<SentTransaction | null> {
    const key = { userId: call.user.id, idempotencyKey: call.idempotencyKey, purpose: call.purpose };
    const recorded = await deps.sender.earlier(key);
    if (recorded) return deps.sender.resume(recorded, call.requestHash);
    const taken = await takeSigned(call);
    // Prepared as a forwarded request (the token or the contract takes no authorization): the relay's path.
    if (!taken.row.authorization) {
      await taken.release();
      return null;
    }
    const { v, r, s } = Signature.from(call.signed.signature);
    const data = call.byAuthorization.data({ from: getAddress(taken.row.from), validAfter: 0n, validBefore: taken.row.deadline, v, r, s });
    try {
      return await deps.sender.send({ ...key, requestHash: call.requestHash, to: call.to, data });
    } catch (error) {
      // Nothing recorded (its simulation refused it), or bytes the node refused (never public): the signature may go again.
      const recordedNow = await deps.sender.earlier(key);
      if (!recordedNow || recordedNow.status === "failed") await taken.release();
      throw error;
    }
  }

  return { prepareForSignature, prepareSigned, sendAuthorized };
}

/** What every prepared request of `call` records: who signs, the call, and until when. */
const preparedOf = (call: UserCall, from: string, deadline: bigint) => ({
  id: randomUUID(),
  userId: call.user.id,
  purpose: call.purpose,
  from,
  to: call.to.toLowerCase(),
  data: call.data,
  deadline,
  createdAt: new Date(),
});

/** The ForwardRequest values a prepared request fixed. */
const forwardValuesOf = (row: PreparedRequest) => ({
  from: getAddress(row.from),
  to: getAddress(row.to),
  gas: row.gas!,
  forwarderNonce: row.forwarderNonce!,
  deadline: row.deadline,
  data: row.data,
});

export type SelfCustody = ReturnType<typeof createSelfCustody>;
