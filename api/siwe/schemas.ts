import { z } from "zod";
import { isoDate, privateUser, walletAddress } from "../users/schemas.js";

export const nonceBody = z
  .strictObject({
    address: z
      .string()
      .regex(/^0x[0-9a-fA-F]{40}$/)
      .optional()
      .describe("the wallet that will sign"),
    domain: z.string().min(1).max(253).optional().describe("the app's host (and port), as in its URI"),
    uri: z.url().max(2_000).optional().describe("the app's page asking to sign in"),
    statement: z
      .string()
      .max(500)
      .regex(/^[^\n]*$/, "must be one line")
      .optional()
      .describe("one line shown to the user"),
  })
  .refine((body) => [body.address, body.domain, body.uri].filter(Boolean).length % 3 === 0, {
    message: "address, domain and uri come together",
    path: ["address"],
  })
  .describe("optional: with address, domain and uri, the answer carries the message to sign, written for you");

export const nonceResponse = z.object({
  nonce: z.string().describe("put it in the message's Nonce field; usable once, until expiresAt"),
  expiresAt: isoDate,
  chainId: z.number().int().describe("the chain the message must name"),
  message: z.string().optional().describe("with a body: the EIP-4361 message to sign as it is (it expires with the nonce)"),
});

export const verifyBody = z.strictObject({
  message: z
    .string()
    .min(1)
    .max(4_000)
    .describe("the EIP-4361 message the wallet signed: this service's chain id, the nonce, and the app's domain and URI"),
  signature: z
    .string()
    .regex(/^0x(?:[0-9a-fA-F]{2})+$/, "must be 0x-prefixed hex")
    .max(20_000)
    .describe("the wallet's signature of the message (EIP-191; a contract wallet's EIP-1271 or ERC-6492 signature too)"),
});

export const verifyResponse = z.object({
  accessToken: z.string().describe("a bearer token for /v1, of this service's own issuer (its keys: GET /v1/auth/jwks.json)"),
  tokenType: z.literal("Bearer"),
  expiresIn: z.number().int().describe("seconds"),
  user: privateUser,
});

export const jwksResponse = z.object({ keys: z.array(z.record(z.string(), z.unknown())) });

export const walletView = z.object({
  address: z.string().describe("checksummed"),
  custody: z.enum(["managed", "self"]).describe("managed: the service derives its key; self: you hold it"),
  linkedAt: isoDate.nullable().describe("when you linked it; null for the managed wallet and a wallet's own account"),
  chosen: z.boolean().describe("whether it is your account's wallet now (walletAddress)"),
});

export const chooseWalletBody = z.strictObject({ address: walletAddress.describe("one of GET /v1/users/me/wallets") });
