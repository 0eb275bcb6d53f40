// Sign-In with Ethereum (EIP-4361, D-118): a wallet proves its address by signing the message an
// app shows; the service answers the account of that address, made self-custody at its first
// sign-in (the API then issues its own access token for it). Each refusal has its code:
// - a message that is not EIP-4361's: VALIDATION_ERROR;
// - a domain or URI of an origin that may not sign in (its URI's host must be its domain): DOMAIN_MISMATCH;
// - another chain than the service's: CHAIN_MISMATCH;
// - issued in the future, not yet valid, or expired: MESSAGE_EXPIRED;
// - a nonce the service did not hand out, or already took, or expired: NONCE_INVALID;
// - a signature that is not the address's (an account's key, or a contract wallet's EIP-1271
//   answer, or ERC-6492's for one not deployed yet): INVALID_SIGNATURE.
// The nonce is taken (one conditional delete) before the signature is checked: two requests with
// one message cannot both pass.
import { randomBytes } from "node:crypto";
import { getAddress } from "ethers";
import { createSiweMessage, parseSiweMessage } from "viem/siwe";
import type { Clock } from "../../core/clock.js";
import { AppError } from "../errors.js";
import type { UserRecord } from "../users/repo.js";
import type { UsersService } from "../users/service.js";
import type { SiweRepo } from "./repo.js";

/** How long a nonce handed out stays usable. */
export const NONCE_LIFETIME_MS = 10 * 60_000;
/** How far ahead of the service clock a message's issued-at may be (the wallet's clock). */
const CLOCK_SKEW_MS = 60_000;

type Hex = `0x${string}`;

export interface SiweDeps {
  repo: SiweRepo;
  clock: Pick<Clock, "now">;
  /** The chain the service serves: a message must name it. */
  chainId: number;
  /** Whether apps at this origin (a message's URI's) may sign their users in. */
  allowsOrigin(origin: string): boolean;
  /** Whether `signature` is the address's over `message` (EIP-191): an account's, or a contract wallet's (EIP-1271, ERC-6492). */
  verifySignature(input: { address: Hex; message: string; signature: Hex }): Promise<boolean>;
  /** The account of a wallet its user signed in with, made at its first sign-in. */
  accountOf(address: string): Promise<UserRecord>;
  /** An account's choice among its wallets (domain/users/service.ts). */
  users: Pick<UsersService, "walletToChoose" | "chooseWallet">;
  /** Whether `wallet` has loans open, overdue or defaulted: the account may not leave it then (the loans are the wallet's). */
  holdsLoans(userId: string, wallet: string): Promise<boolean>;
  /** The wallet's own facts from before it was the account's, made the account's (rewards' `adopt`). */
  adopt(userId: string, wallet: string): Promise<unknown>;
}

const refuse = (code: ConstructorParameters<typeof AppError>[0], message: string, field = "message") =>
  new AppError(code, message, { field, reason: message });

export function createSiweService(deps: SiweDeps) {
  return {
    /**
     * A new nonce for an app's sign-in message, single-use, usable for NONCE_LIFETIME_MS; with the
     * app's wallet address, domain and URI, the message itself (EIP-4361, as viem writes it), for
     * a client that would rather not write one: it expires with its nonce.
     */
    async nonce(app?: { address: Hex; domain: string; uri: string; statement?: string }) {
      const now = deps.clock.now();
      // 32 hexadecimal characters: EIP-4361 asks for at least 8 alphanumeric ones.
      const nonce = randomBytes(16).toString("hex");
      const expiresAt = new Date(now.getTime() + NONCE_LIFETIME_MS);
      await deps.repo.addNonce(nonce, expiresAt, now);
      const message =
        app &&
        createSiweMessage({
          ...app,
          address: getAddress(app.address) as Hex,
          chainId: deps.chainId,
          nonce,
          version: "1",
          issuedAt: now,
          expirationTime: expiresAt,
        });
      return { nonce, expiresAt: expiresAt.toISOString(), chainId: deps.chainId, ...(message ? { message } : {}) };
    },

    /** The address that signed this sign-in message, once every rule above holds (its nonce taken). */
    async prove({ message, signature }: { message: string; signature: Hex }): Promise<string> {
      const fields = parseSiweMessage(message);
      const { address, domain, uri, nonce, chainId, issuedAt } = fields;
      if (!address || !domain || !uri || !nonce || chainId === undefined || !issuedAt || fields.version !== "1") {
        throw refuse("VALIDATION_ERROR", "Not a Sign-In with Ethereum message (EIP-4361)");
      }
      const origin = URL.canParse(uri) ? new URL(uri) : undefined;
      if (!origin || origin.host !== domain || !deps.allowsOrigin(origin.origin)) {
        throw refuse("DOMAIN_MISMATCH", `Apps at ${domain} may not sign in to this service`);
      }
      if (chainId !== deps.chainId)
        throw refuse("CHAIN_MISMATCH", `The message is for chain ${chainId}; this service serves chain ${deps.chainId}`);
      const now = deps.clock.now().getTime();
      if (issuedAt.getTime() > now + CLOCK_SKEW_MS || (fields.notBefore && fields.notBefore.getTime() > now)) {
        throw refuse("MESSAGE_EXPIRED", "The message is not valid yet");
      }
      if (fields.expirationTime && fields.expirationTime.getTime() <= now) throw refuse("MESSAGE_EXPIRED", "The message has expired");
      if (!(await deps.repo.takeNonce(nonce, deps.clock.now()))) {
        throw refuse("NONCE_INVALID", "Unknown, used or expired nonce: ask POST /v1/auth/siwe/nonce for a new one");
      }
      if (!(await deps.verifySignature({ address, message, signature }))) {
        throw refuse("INVALID_SIGNATURE", `The signature is not ${address}'s`, "signature");
      }
      return address;
    },

    /** The account whose wallet signed this sign-in message. */
    async verify(input: { message: string; signature: Hex }): Promise<UserRecord> {
      return deps.accountOf(await this.prove(input));
    },

    /**
     * Makes `address` the account's wallet (D-119): its managed one, or one it linked. Not while
     * the wallet it leaves has loans open, overdue or defaulted (the loans are the wallet's, and
     * its standing must not be left behind); what the linked wallet did before is adopted once.
     */
    async chooseWallet(user: UserRecord, address: string): Promise<UserRecord> {
      const wallet = await deps.users.walletToChoose(user, address);
      if (wallet.walletAddress === user.walletAddress) return user;
      if (await deps.holdsLoans(user.id, user.walletAddress)) {
        throw new AppError("CONFLICT", "Your wallet has loans open, overdue or defaulted: settle them before choosing another wallet", {
          field: "address",
          reason: "loans on the current wallet",
        });
      }
      const chosen = await deps.users.chooseWallet(user, wallet);
      if (wallet.custody === "self") await deps.adopt(user.id, wallet.walletAddress);
      return chosen;
    },
  };
}

export type SiweService = ReturnType<typeof createSiweService>;
