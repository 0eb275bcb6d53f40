// Whose signature a sign-in message carries, by viem's verifier: an account's key (EIP-191), a
// contract wallet's answer (EIP-1271's isValidSignature, as a Safe gives it), or, for a contract
// wallet not deployed yet, ERC-6492's wrapped signature, checked by a call against the chain.
import type { JsonRpcProvider } from "ethers";
import { createPublicClient, custom } from "viem";
import { verifyMessage } from "viem/actions";

type Hex = `0x${string}`;

/** A verifier over the service's own chain connection (the ethers provider, as a viem transport). */
export function signatureVerifier(provider: Pick<JsonRpcProvider, "send">) {
  const client = createPublicClient({
    transport: custom({ request: ({ method, params }) => provider.send(method, (params as unknown[] | undefined) ?? []) }),
  });
  return ({ address, message, signature }: { address: Hex; message: string; signature: Hex }): Promise<boolean> =>
    verifyMessage(client, { address, message, signature });
}
