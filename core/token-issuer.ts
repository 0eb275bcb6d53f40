// An issuer of access tokens the service signs itself: one ES256 key, made at the first start and
// kept in the database (`ServiceSecret`), so tokens survive restarts and every process on the
// database signs and accepts the same ones. Its public key is published as a JWKS. The sandbox's
// identity provider (api/dev/) and Sign-In with Ethereum's tokens (domain/siwe/) are two of them.
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from "jose";
import type { Clock } from "./clock.js";
import type { Database } from "./db.js";
import { sharedSecret } from "./shared-secrets.js";

/** ES256: asymmetric, small keys and signatures, supported by every JWT library. */
const ALG = "ES256";

export interface TokenIssuer {
  /** The tokens' `iss`. */
  readonly issuer: string;
  jwks(): { keys: JWK[] };
  issue(claims: { sub: string; email?: string; name?: string; expiresIn: number }): Promise<string>;
}

export async function createTokenIssuer(options: {
  db: Pick<Database, "prisma">;
  /** The name its key is kept under (ServiceSecret). */
  keyName: string;
  issuer: string;
  audience: string;
  clock: Pick<Clock, "nowSeconds">;
  /** Where an earlier version kept the key, taken if present (the sandbox's, per DATA_DIR). */
  legacyKey?: () => string | undefined;
}): Promise<TokenIssuer> {
  const privateJwk = JSON.parse(
    await sharedSecret(options.db, options.keyName, async () => {
      const legacy = options.legacyKey?.();
      if (legacy !== undefined) return legacy;
      const { privateKey } = await generateKeyPair(ALG, { extractable: true });
      const jwk = await exportJWK(privateKey);
      jwk.kid = await calculateJwkThumbprint(jwk);
      return JSON.stringify(jwk);
    }),
  ) as JWK;
  const { d: _private, ...publicJwk } = privateJwk;
  const kid = privateJwk.kid ?? (await calculateJwkThumbprint(publicJwk));
  const signingKey = await importJWK(privateJwk, ALG);
  const published = { keys: [{ ...publicJwk, kid, alg: ALG, use: "sig" }] };

  return {
    issuer: options.issuer,
    jwks: () => published,
    issue: async ({ sub, email, name, expiresIn }) => {
      const now = options.clock.nowSeconds();
      return new SignJWT({ ...(email === undefined ? {} : { email }), ...(name === undefined ? {} : { name }) })
        .setProtectedHeader({ alg: ALG, kid, typ: "JWT" })
        .setIssuer(options.issuer)
        .setAudience(options.audience)
        .setSubject(sub)
        .setIssuedAt(now)
        .setNotBefore(now)
        .setExpirationTime(now + expiresIn)
        .setJti(crypto.randomUUID())
        .sign(signingKey);
    },
  };
}
