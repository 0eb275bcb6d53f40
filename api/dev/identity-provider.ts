import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from "jose";
import type { Clock } from "../../core/clock.js";
import type { Database } from "../../core/db.js";
import { sharedSecret } from "../../core/shared-secrets.js";

/** ES256: asymmetric, small keys and signatures, supported by every JWT library. */
const ALG = "ES256";
/** Where earlier versions kept the key (per DATA_DIR): still taken, so their tokens stay valid. */
const LEGACY_KEY_FILE = "dev-identity-key.json";
const KEY_SECRET = "dev-identity-signing-key";

export interface DevIdentityProvider {
  jwks(): { keys: JWK[] };
  issue(claims: { sub: string; email?: string; name?: string; expiresIn: number }): Promise<string>;
}

/**
 * The sandbox's identity provider: one signing key, generated at the first start and kept in the
 * database (`ServiceSecret`), so tokens survive restarts and every API process on the database
 * signs and accepts the same tokens (with one PUBLIC_BASE_URL, one issuer). The API trusts it
 * only through its published JWKS, exactly as it trusts a production provider.
 */
export async function createDevIdentityProvider(options: {
  db: Pick<Database, "prisma">;
  dataDir: string;
  issuer: string;
  audience: string;
  clock: Pick<Clock, "nowSeconds">;
}): Promise<DevIdentityProvider> {
  const legacy = path.resolve(options.dataDir, LEGACY_KEY_FILE);
  const privateJwk = JSON.parse(
    await sharedSecret(options.db, KEY_SECRET, async () => {
      if (existsSync(legacy)) return readFileSync(legacy, "utf8");
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
