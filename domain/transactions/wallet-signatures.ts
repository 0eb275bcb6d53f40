// Writes signed by the user's own wallet (D-119): what such a wallet is asked to sign, as the
// EIP-712 typed data `eth_signTypedData_v4` takes, and the refusals of a signature that does not
// fit. The relay (user-transactions.ts) prepares and sends; this file holds the shapes.
import { type TypedDataField, verifyTypedData } from "ethers";
import { FORWARD_REQUEST_TYPES, PERMIT_TYPES, RECEIVE_WITH_AUTHORIZATION_TYPES } from "../../core/eip712.js";
import { AppError } from "../errors.js";
import type { PreparedPermit } from "./repo.js";

/** How long a prepared request stays valid on chain: time to read it and sign it in a wallet. */
export const PREPARED_LIFETIME_S = 600n;
/** A request this close to its deadline is refused rather than sent: it could die in the pool. */
export const DEADLINE_MARGIN_S = 15n;
/**
 * The gas forwarded to a call whose simulation had to stop at the allowance its permit will give
 * (it cannot run before the permit): above what any relayed call of the platform uses.
 */
export const UNSIMULATED_PULL_GAS = 400_000n;

export const WALLET_SIGNATURE_HEADER = "Wallet-Signature";
export const PERMIT_SIGNATURE_HEADER = "Wallet-Permit-Signature";

const EIP712_DOMAIN_TYPE: TypedDataField[] = [
  { name: "name", type: "string" },
  { name: "version", type: "string" },
  { name: "chainId", type: "uint256" },
  { name: "verifyingContract", type: "address" },
];

export interface Eip712Domain {
  name: string;
  version: string;
  chainId: number;
  verifyingContract: string;
}

/** EIP-712 typed data as `eth_signTypedData_v4` takes it: integers as decimal strings. */
export interface TypedData {
  domain: Eip712Domain;
  types: Record<string, TypedDataField[]>;
  primaryType: string;
  message: Record<string, string>;
}

/**
 * What a self-custody wallet signs for one write: the forwarder's request, and a permit where its USDC is
 * pulled; or, for a call that takes it (D-120), the token's EIP-3009 authorization as `request`, alone.
 */
export interface PreparedWrite {
  signer: string;
  /** Chain time after which the request can no longer run. */
  expiresAt: Date;
  request: TypedData;
  permit: TypedData | null;
}

/** The ForwardRequest values a prepared request fixes. */
export interface ForwardValues {
  from: string;
  to: string;
  gas: bigint;
  forwarderNonce: bigint;
  deadline: bigint;
  data: string;
}

export function forwardRequestTypedData(domain: Eip712Domain, values: ForwardValues): TypedData {
  const { from, to, gas, forwarderNonce, deadline, data } = values;
  return {
    domain,
    types: { EIP712Domain: EIP712_DOMAIN_TYPE, ...FORWARD_REQUEST_TYPES },
    primaryType: "ForwardRequest",
    message: { from, to, value: "0", gas: `${gas}`, nonce: `${forwarderNonce}`, deadline: `${deadline}`, data },
  };
}

export function permitTypedData(domain: Eip712Domain, owner: string, permit: PreparedPermit): TypedData {
  return {
    domain,
    types: { EIP712Domain: EIP712_DOMAIN_TYPE, ...PERMIT_TYPES },
    primaryType: "Permit",
    message: { owner, spender: permit.spender, value: permit.value, nonce: permit.nonce, deadline: permit.deadline },
  };
}

/** The token's `ReceiveWithAuthorization` of `value` from the wallet to `to`, valid after 0 and before `validBefore`. */
export function authorizationTypedData(
  domain: Eip712Domain,
  values: { from: string; to: string; value: string; validBefore: string; nonce: string },
): TypedData {
  const { from, to, value, validBefore, nonce } = values;
  return {
    domain,
    types: { EIP712Domain: EIP712_DOMAIN_TYPE, ...RECEIVE_WITH_AUTHORIZATION_TYPES },
    primaryType: "ReceiveWithAuthorization",
    message: { from, to, value, validAfter: "0", validBefore, nonce },
  };
}

/** The address whose key made `signature` over `typed` (lower case); null for a signature that is no ECDSA signature. */
export function signerOf(typed: TypedData, signature: string): string | null {
  const { EIP712Domain: _domain, ...types } = typed.types;
  try {
    return verifyTypedData(typed.domain, types, typed.message, signature).toLowerCase();
  } catch {
    return null;
  }
}

/** The refusals of a signed write; nothing is recorded or sent for any of them. */
export const signatureRefusals = {
  required: (what: string, header = WALLET_SIGNATURE_HEADER) =>
    new AppError("SIGNATURE_REQUIRED", `Your wallet is your own: ${what}`, { field: header, reason: "missing" }),
  mismatch: (header = WALLET_SIGNATURE_HEADER) =>
    new AppError(
      "SIGNATURE_MISMATCH",
      "The signature is not your wallet's over the request prepared for this write: sign what the prepare call answered, with your wallet",
      { field: header, reason: "not signed by your wallet" },
    ),
  changed: () =>
    new AppError(
      "REQUEST_MISMATCH",
      "Nothing was prepared for this write with these values: prepare it again with exactly the values you send",
      { field: WALLET_SIGNATURE_HEADER, reason: "no prepared request for this write" },
    ),
  expired: () =>
    new AppError("REQUEST_EXPIRED", "The prepared request has expired: prepare it again and sign the new one", {
      field: WALLET_SIGNATURE_HEADER,
      reason: "past its deadline",
    }),
  replayed: (reason: string) =>
    new AppError("REQUEST_REPLAYED", `This signed request cannot be sent again (${reason}): prepare a new one`, {
      field: WALLET_SIGNATURE_HEADER,
      reason,
    }),
};

/**
 * Thrown by a write in prepare mode where it would have sent: carries what the wallet signs. The
 * route's prepare call answers it (api/http/route.ts); nothing of the write is sent.
 */
export class PreparedForSignature extends Error {
  constructor(readonly prepared: PreparedWrite) {
    super("prepared for the wallet's signature");
    this.name = "PreparedForSignature";
  }
}
