import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Clock } from "../../core/clock.js";
import type { Database } from "../../core/db.js";
import { createTokenIssuer, type TokenIssuer } from "../../core/token-issuer.js";

/** Where earlier versions kept the key (per DATA_DIR): still taken, so their tokens stay valid. */
const LEGACY_KEY_FILE = "dev-identity-key.json";

export type DevIdentityProvider = Pick<TokenIssuer, "jwks" | "issue">;

/**
 * The sandbox's identity provider: a token issuer of the service's own (core/token-issuer.ts),
 * under `${PUBLIC_BASE_URL}/dev`. The API trusts it only through its published JWKS, exactly as
 * it trusts a production provider.
 */
export function createDevIdentityProvider(options: {
  db: Pick<Database, "prisma">;
  dataDir: string;
  issuer: string;
  audience: string;
  clock: Pick<Clock, "nowSeconds">;
}): Promise<DevIdentityProvider> {
  const legacy = path.resolve(options.dataDir, LEGACY_KEY_FILE);
  return createTokenIssuer({
    ...options,
    keyName: "dev-identity-signing-key",
    legacyKey: () => (existsSync(legacy) ? readFileSync(legacy, "utf8") : undefined),
  });
}
