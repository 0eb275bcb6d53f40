import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from "jose";
import type { Clock } from "../../core/clock.js";

/** ES256: asymmetric, small keys and signatures, supported by every JWT library. */
const ALG = "ES256";
const KEY_FILE = "dev-identity-key.json";

export interface DevIdentityProvider {
  jwks(): { keys: JWK[] };
  issue(claims: { sub: string; email?: string; name?: string; expiresIn: number }): Promise<string>;
}

/**
 * The sandbox's identity provider: one signing key, generated at the first start and kept
 * in `$DATA_DIR/dev-identity-key.json` (mode 0600) so tokens survive restarts. The API
 * trusts it only through its published JWKS, exactly as it trusts a production provider.
 */
export async function createDevIdentityProvider(options: {
  dataDir: string;
  issuer: string;
  audience: string;
  clock: Pick<Clock, "nowSeconds">;
}): Promise<DevIdentityProvider> {
  const file = path.resolve(options.dataDir, KEY_FILE);
  let privateJwk: JWK;
  if (existsSync(file)) {
    privateJwk = JSON.parse(readFileSync(file, "utf8")) as JWK;
  } else {
    const { privateKey } = await generateKeyPair(ALG, { extractable: true });
    privateJwk = await exportJWK(privateKey);
    privateJwk.kid = await calculateJwkThumbprint(privateJwk);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify(privateJwk), { mode: 0o600 });
  }
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
