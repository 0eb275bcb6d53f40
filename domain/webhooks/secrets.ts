// Webhook shared secrets at rest: sealed with AES-256-GCM under WEBHOOK_SECRET_KEY (a random
// 12-byte nonce per seal, the 16-byte tag checked on open), so a copy of the database alone
// signs nothing. The key comes from configuration in production; elsewhere from the database's
// shared development secret (core/shared-secrets.ts).
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/** The sealed form's prefix: its version, so a later key or cipher can be told apart. */
const VERSION = "v1";
// AES-256-GCM's standard nonce (96 bits, random per seal) and its full 128-bit tag.
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

export interface SecretBox {
  seal(secret: string): Promise<string>;
  /** The secret; throws when the sealed text was not sealed with this key (or was altered). */
  open(sealed: string): Promise<string>;
}

/** Opened secrets kept in memory by their sealed text (every attempt of a webhook opens the same one). */
const OPENED_KEPT = 1_000;

/** Seals and opens with the key `keyOf()` answers (read once, when first needed). */
export function createSecretBox(keyOf: () => Promise<Buffer>): SecretBox {
  let key: Promise<Buffer> | undefined;
  const opened = new Map<string, string>();
  const theKey = () => {
    key ??= keyOf();
    return key;
  };
  return {
    async seal(secret) {
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv("aes-256-gcm", await theKey(), nonce);
      const sealed = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()]);
      return `${VERSION}:${Buffer.concat([nonce, cipher.getAuthTag(), sealed]).toString("base64")}`;
    },
    async open(sealed) {
      const known = opened.get(sealed);
      if (known !== undefined) return known;
      const [version, body] = sealed.split(":");
      if (version !== VERSION || body === undefined) throw new Error("not a sealed webhook secret");
      const bytes = Buffer.from(body, "base64");
      const decipher = createDecipheriv("aes-256-gcm", await theKey(), bytes.subarray(0, NONCE_BYTES));
      decipher.setAuthTag(bytes.subarray(NONCE_BYTES, NONCE_BYTES + TAG_BYTES));
      const secret = Buffer.concat([decipher.update(bytes.subarray(NONCE_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
      if (opened.size >= OPENED_KEPT) opened.clear();
      opened.set(sealed, secret);
      return secret;
    },
  };
}
