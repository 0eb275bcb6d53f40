// The typed-data shapes users' managed wallets sign for gasless operations (docs/decisions.md
// D-60): the TrustMintForwarder's ERC-2771 request, an EIP-2612 permit and an EIP-3009
// authorization (D-120). One definition for the relayer, the gas bench and the contract tests.
import { type BaseWallet, type Signature, type TypedDataDomain, TypedDataEncoder, type TypedDataField } from "ethers";

/** The forwarder's EIP-712 domain, without chainId and verifyingContract (they come from the deployment). */
export const FORWARDER_DOMAIN = { name: "TrustMintForwarder", version: "1" } as const;

export const FORWARD_REQUEST_TYPES: Record<string, TypedDataField[]> = {
  ForwardRequest: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "gas", type: "uint256" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint48" },
    { name: "data", type: "bytes" },
  ],
};

/** EIP-2612; the domain is the token's own `name()` and `version()`. */
export const PERMIT_TYPES: Record<string, TypedDataField[]> = {
  Permit: [
    { name: "owner", type: "address" },
    { name: "spender", type: "address" },
    { name: "value", type: "uint256" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint256" },
  ],
};

/** EIP-3009's transfer that only its payee submits; the domain is the token's, as for a permit. */
export const RECEIVE_WITH_AUTHORIZATION_TYPES: Record<string, TypedDataField[]> = {
  ReceiveWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
};

/**
 * EIP-712 signature by the wallet's key over values that are all literal (no ENS name to
 * resolve): what Wallet.signTypedData computes, without its asynchronous field resolution.
 */
export function signTyped(
  wallet: Pick<BaseWallet, "signingKey">,
  domain: TypedDataDomain,
  types: Record<string, TypedDataField[]>,
  value: Record<string, unknown>,
): Signature {
  return wallet.signingKey.sign(TypedDataEncoder.hash(domain, types, value));
}
