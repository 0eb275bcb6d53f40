import type { TokenIssuer } from "../../core/token-issuer.js";
import { siweModule } from "../../domain/siwe/module.js";
import type { SiweService } from "../../domain/siwe/service.js";
import type { UsersService } from "../../domain/users/service.js";
import { defineRoute, type RouteSpec, routesOf } from "../http/route.js";
import { jwksResponse, nonceBody, nonceResponse, verifyBody, verifyResponse } from "./schemas.js";

/** How long an access token from a wallet's sign-in lasts. */
export const SIWE_TOKEN_SECONDS = 3_600;

export function siweRoutes({
  siwe,
  tokens,
  users,
}: {
  siwe: SiweService;
  tokens: TokenIssuer;
  users: Pick<UsersService, "privateView">;
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
  ]);
}
