// A user's call as the relay takes it (user-transactions.ts): the contract call, who makes it,
// what it is known by, and, for a wallet the user holds, its signatures (D-119).
import { TransactionRevertedError, tokenRefusal } from "./failures.js";

/** An EIP-3009 authorization as the wallet signed it: what the call that carries it takes. */
export interface SignedAuthorization {
  from: string;
  validAfter: bigint;
  validBefore: bigint;
  v: number;
  r: string;
  s: string;
}

/** The call's data, and, where it pulls USDC from the wallet, who pulls (`spender`) and how much. */
export interface UserCallData {
  data: string;
  pulls?: { spender: string; value: bigint };
  /**
   * A call that pulls (`pulls`) and has a twin taking the wallet's EIP-3009 authorization instead (D-120):
   * a wallet the user holds then signs that one message, with this nonce, and the service sends the
   * twin's `data` itself. A managed wallet makes the call itself, as ever.
   */
  byAuthorization?: { nonce: string; data(authorization: SignedAuthorization): string };
}

export type UserCall = UserCallData & {
  user: { id: string; walletIndex: number; walletAddress: string };
  /** What it does (`vault.deposit`, ...): with the key, a retry finds the request sent first. */
  purpose: string;
  idempotencyKey: string;
  /** The request behind it (domain/idempotency/operation-key.ts): kept with the transaction. */
  requestHash?: string;
  to: string;
  /** A wallet the user holds: the signatures of the request prepared for this call (D-119); else the managed wallet signs. */
  signed?: { signature: string; permitSignature?: string };
};

/** The batcher's part of a call (batcher.ts `UserRequest`, without its signing). */
export const requestOf = (call: UserCall, from: string) => ({
  purpose: call.purpose,
  userId: call.user.id,
  idempotencyKey: call.idempotencyKey,
  requestHash: call.requestHash,
  from: from.toLowerCase(),
  to: call.to,
});

/** Whether the call's simulation stopped only at the USDC it pulls and may not yet. */
export const needsAllowance = (call: Pick<UserCall, "pulls">, error: unknown) =>
  call.pulls !== undefined && error instanceof TransactionRevertedError && tokenRefusal(error.revert) === "allowance";
