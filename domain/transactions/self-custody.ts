// Writes of a wallet the user holds (D-119): the relay cannot sign them, so a write runs in two
// calls. The first prepares the ForwardRequest (and, where the call pulls USDC not yet allowed,
// a permit for exactly that amount) and records it; the second finds it by its call, checks the
// wallet's signature over it, takes it once, and hands it to the batcher at the very nonce signed.
import { randomUUID } from "node:crypto";
import { type Contract, getAddress, type JsonRpcProvider, Signature } from "ethers";
import type { Allowances } from "./allowances.js";
import type { ForwardRequestData, UserRequest } from "./batcher.js";
import { needsAllowance, requestOf, type UserCall } from "./calls.js";
import { TransactionRevertedError } from "./failures.js";
import type { PreparedPermit, TransactionsRepo } from "./repo.js";
import {
  DEADLINE_MARGIN_S,
  type Eip712Domain,
  forwardRequestTypedData,
  PERMIT_SIGNATURE_HEADER,
  PREPARED_LIFETIME_S,
  type PreparedWrite,
  permitTypedData,
  signatureRefusals,
  signerOf,
  UNSIMULATED_PULL_GAS,
} from "./wallet-signatures.js";

type SignedCall = UserCall & { signed: NonNullable<UserCall["signed"]> };

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
    await repo.addPrepared({
      id: randomUUID(),
      userId: call.user.id,
      purpose: call.purpose,
      from,
      to: call.to.toLowerCase(),
      data: call.data,
      gas,
      forwarderNonce: next,
      deadline,
      permit,
      createdAt: new Date(),
    });
    return {
      signer: values.from,
      expiresAt: new Date(Number(deadline) * 1000),
      request: forwardRequestTypedData(forwarderDomain, values),
      permit: permit && permitTypedData(await allowances.permitDomain(), values.from, permit),
    };
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
    const valuesOf = (row: (typeof candidates)[number]) => ({
      from: getAddress(row.from),
      to: getAddress(row.to),
      gas: row.gas,
      forwarderNonce: row.forwarderNonce,
      deadline: row.deadline,
      data: row.data,
    });
    const row = candidates.find(
      (each) => signerOf(forwardRequestTypedData(forwarderDomain, valuesOf(each)), call.signed.signature) === from,
    );
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
    return {
      values: valuesOf(row),
      permit: permit && permitSignature ? { permit, signature: permitSignature } : null,
      release: () => repo.releasePrepared(row.id),
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
      const { values } = taken;
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

  return { prepareForSignature, prepareSigned };
}

export type SelfCustody = ReturnType<typeof createSelfCustody>;
