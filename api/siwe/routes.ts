import type { TokenIssuer } from "../../core/token-issuer.js";
import { siweModule } from "../../domain/siwe/module.js";
import type { SiweService } from "../../domain/siwe/service.js";
import type { UsersService } from "../../domain/users/service.js";
import { defineRoute, type RouteSpec, routesOf } from "../http/route.js";
import { privateUser } from "../users/schemas.js";
import { chooseWalletBody, jwksResponse, nonceBody, nonceResponse, verifyBody, verifyResponse, walletView } from "./schemas.js";

/** How long an access token from a wallet's sign-in lasts. */
export const SIWE_TOKEN_SECONDS = 3_600;

export function siweRoutes({
  siwe,
  tokens,
  users,
}: {
  siwe: SiweService;
  tokens: TokenIssuer;
  users: Pick<UsersService, "privateView" | "wallets" | "linkWallet">;
}): RouteSpec[] {
  return routesOf(siweModule, [
    defineRoute({
      method: "post",
      path: "/v1/auth/siwe/nonce",
      operationId: "createSiweNonce",
      summary: "A nonce for a Sign-In with Ethereum message",
      auth: "none",
      // A replay by key would hand one caller's nonce to another.
      idempotent: false,
      body: nonceBody,
      response: nonceResponse,
      status: 201,
      handler: async ({ body: { address, domain, uri, statement } }) => ({
        data: await siwe.nonce(address && domain && uri ? { address: address as `0x${string}`, domain, uri, statement } : undefined),
      }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/auth/siwe/verify",
      operationId: "verifySiweSignIn",
      summary: "Sign in with a wallet: the signed message for an access token (the account is made at the first sign-in, custody self)",
      description:
        "The message (EIP-4361) must name this service's chain, a nonce from POST /v1/auth/siwe/nonce (once, within 10 minutes) and an app origin that may sign in (CORS_ORIGINS, or any outside production while it is *), with its URI's host as its domain. The account's walletAddress is the signer's; the service holds no key of it.",
      auth: "none",
      // Tokens are credentials: an anonymous replay by key would hand one caller's token to another.
      idempotent: false,
      body: verifyBody,
      response: verifyResponse,
      errors: ["NONCE_INVALID", "MESSAGE_EXPIRED", "DOMAIN_MISMATCH", "CHAIN_MISMATCH", "INVALID_SIGNATURE", "CONFLICT"],
      handler: async ({ body }) => {
        const user = await siwe.verify({ message: body.message, signature: body.signature as `0x${string}` });
        const accessToken = await tokens.issue({ sub: user.subject, expiresIn: SIWE_TOKEN_SECONDS });
        return { data: { accessToken, tokenType: "Bearer" as const, expiresIn: SIWE_TOKEN_SECONDS, user: users.privateView(user) } };
      },
    }),
    defineRoute({
      method: "get",
      path: "/v1/auth/jwks.json",
      operationId: "getServiceJwks",
      summary: "The public keys of this service's own access tokens (bare JWKS, no envelope)",
      auth: "none",
      bare: true,
      response: jwksResponse,
      handler: async () => ({ raw: tokens.jwks() }),
    }),
    defineRoute({
      method: "get",
      path: "/v1/users/me/wallets",
      operationId: "listMyWallets",
      summary: "Your wallets: the managed one, those you linked, and which one is your account's",
      auth: "token",
      response: walletView.array(),
      handler: async ({ principal }) => ({ data: await users.wallets(principal().user) }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/users/me/wallets",
      operationId: "linkMyWallet",
      summary: "Link a wallet you hold to your account, by a Sign-In with Ethereum message it signed",
      description:
        "For an account of the identity provider: the message and signature are those of POST /v1/auth/siwe/verify (a nonce of POST /v1/auth/siwe/nonce, this chain, an app origin that may sign in); the wallet is linked, not chosen (POST /v1/users/me/wallet chooses it). A wallet is linked to one account, and then signs in to no other: another account's wallet or link is CONFLICT.",
      auth: "token",
      body: verifyBody,
      response: walletView,
      status: 201,
      errors: ["NONCE_INVALID", "MESSAGE_EXPIRED", "DOMAIN_MISMATCH", "CHAIN_MISMATCH", "INVALID_SIGNATURE", "CONFLICT"],
      handler: async ({ body, principal }) => {
        const address = await siwe.prove({ message: body.message, signature: body.signature as `0x${string}` });
        return { data: await users.linkWallet(principal().user, address) };
      },
    }),
    defineRoute({
      method: "post",
      path: "/v1/users/me/wallet",
      operationId: "chooseMyWallet",
      summary: "Choose which of your wallets is your account's: the managed one, or one you linked (its writes then need its signature)",
      description:
        "The chosen wallet is your account's walletAddress from then on: positions, loans and payments are that wallet's, and a linked wallet's writes are prepared and signed by it (custody self). What the other wallet holds stays in it, and is yours again when you choose it back. Refused (CONFLICT) while the wallet you leave has loans open, overdue or defaulted.",
      auth: "token",
      body: chooseWalletBody,
      response: privateUser,
      errors: ["CONFLICT"],
      handler: async ({ body, principal }) => ({ data: users.privateView(await siwe.chooseWallet(principal().user, body.address)) }),
    }),
  ]);
}
