// The HTTP side of writes a user's own wallet signs (D-119): the headers that carry its
// signatures, and the answer of a write's prepare call.
import type { Request } from "express";
import { z } from "zod";
import type { WalletAuthorization } from "../../domain/idempotency/operation-key.js";
import { PERMIT_SIGNATURE_HEADER, type PreparedWrite, WALLET_SIGNATURE_HEADER } from "../../domain/transactions/wallet-signatures.js";
import { AppError } from "./errors.js";

/** An ECDSA signature as wallets answer it: r, s and v, 65 bytes. */
const SIGNATURE = /^0x[0-9a-fA-F]{130}$/;

function signatureIn(req: Request, header: string): string | undefined {
  const value = req.header(header);
  if (value === undefined) return undefined;
  if (!SIGNATURE.test(value)) {
    throw new AppError("VALIDATION_ERROR", `Invalid header: ${header}: a 65-byte signature, 0x and 130 hex digits`, {
      field: header,
      reason: "not a 65-byte signature",
    });
  }
  return value;
}

/** The wallet's signatures a signable write came with; undefined when it came with none. */
export function walletAuthorizationOf(req: Request): WalletAuthorization | undefined {
  const signature = signatureIn(req, WALLET_SIGNATURE_HEADER);
  const permitSignature = signatureIn(req, PERMIT_SIGNATURE_HEADER);
  if (signature === undefined) {
    if (permitSignature === undefined) return undefined;
    throw new AppError("VALIDATION_ERROR", `${PERMIT_SIGNATURE_HEADER} comes with ${WALLET_SIGNATURE_HEADER}`, {
      field: WALLET_SIGNATURE_HEADER,
      reason: "missing",
    });
  }
  return permitSignature === undefined ? { signature } : { signature, permitSignature };
}

const typedData = z
  .object({
    domain: z.object({ name: z.string(), version: z.string(), chainId: z.number().int(), verifyingContract: z.string() }),
    types: z.record(z.string(), z.array(z.object({ name: z.string(), type: z.string() }))),
    primaryType: z.string(),
    message: z.record(z.string(), z.string()).describe("integers as decimal strings"),
  })
  .describe("EIP-712 typed data, as eth_signTypedData_v4 takes it (types include EIP712Domain)");

export const preparedWriteResponse = z.object({
  signer: z.string().describe("the wallet that must sign: yours"),
  expiresAt: z.string().describe("ISO 8601 UTC, chain time: after it, prepare again"),
  request: typedData.describe(
    `the forwarder's ERC-2771 request: sign it and send the write again, with the same values, its signature in ${WALLET_SIGNATURE_HEADER}`,
  ),
  permit: typedData
    .nullable()
    .describe(
      `an EIP-2612 permit for exactly the USDC the write takes, where your wallet has not allowed it: its signature goes in ${PERMIT_SIGNATURE_HEADER}`,
    ),
});

export const preparedWriteData = (prepared: PreparedWrite) => ({ ...prepared, expiresAt: prepared.expiresAt.toISOString() });

export const SIGNED_WRITE_ERRORS = [
  "SIGNATURE_REQUIRED",
  "SIGNATURE_MISMATCH",
  "REQUEST_MISMATCH",
  "REQUEST_EXPIRED",
  "REQUEST_REPLAYED",
] as const;
