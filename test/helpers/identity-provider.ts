import http from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT } from "jose";

/**
 * An outside identity provider for tests of a production API (where the development provider is
 * off): its JWKS served on 127.0.0.1 over real HTTP, and tokens signed with its key.
 */
export async function startIdentityProvider(audience = "trustmint-api") {
  const { privateKey, publicKey } = await generateKeyPair("ES256");
  const jwk = { ...(await exportJWK(publicKey)), kid: "test-idp-1", alg: "ES256", use: "sig" };
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const issuer = `${base}/`;
  return {
    /** The API's settings for this provider. */
    env: { AUTH_JWKS_URL: `${base}/.well-known/jwks.json`, AUTH_ISSUER: issuer, AUTH_AUDIENCE: audience },
    /** A token for `sub`, valid `expiresIn` seconds from `nowSeconds` (real time by default). */
    token: (sub: string, options: { expiresIn?: number; nowSeconds?: number } = {}) => {
      const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
      return new SignJWT({})
        .setProtectedHeader({ alg: "ES256", kid: jwk.kid })
        .setSubject(sub)
        .setIssuer(issuer)
        .setAudience(audience)
        .setIssuedAt(now)
        .setExpirationTime(now + (options.expiresIn ?? 3_600))
        .sign(privateKey);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
