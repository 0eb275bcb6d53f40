// The signatures of a delivery: the spec's `x-service-signature: sha256=<hex HMAC-SHA256 of the
// exact body>` keyed with the shared secret as given (what GitHub-style verifiers such as
// @octokit/webhooks-methods check), and the Standard Webhooks headers (webhook-id,
// webhook-timestamp, webhook-signature: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`), which
// the standard verifiers (the svix and standardwebhooks packages) check with the secret
// `whsec_<base64 of the key>`. The key is the secret's UTF-8 bytes, or, for a secret that is
// itself a Standard Webhooks secret (`whsec_` and the canonical base64 of at least 24 bytes), the
// bytes it encodes. Any other `whsec_...` text is an ordinary secret: its own bytes, never the few
// (or none) a lenient base64 decoder would pull out of it.
import { createHmac, createSecretKey, type KeyObject } from "node:crypto";

const STANDARD_PREFIX = "whsec_";
/** Secrets whose HMAC keys are kept ready (a key object per attempt costs more than the HMAC). */
const KEYS_KEPT = 1_000;
const keys = new Map<string, { plain: KeyObject; standard: KeyObject }>();
function keysOf(secret: string) {
  let found = keys.get(secret);
  if (!found) {
    if (keys.size >= KEYS_KEPT) keys.clear();
    found = { plain: createSecretKey(Buffer.from(secret, "utf8")), standard: createSecretKey(standardKeyOf(secret)) };
    keys.set(secret, found);
  }
  return found;
}

/** The shortest key a `whsec_` secret may encode to be used as one (Standard Webhooks: 24 to 64 bytes). */
export const STANDARD_KEY_MIN_BYTES = 24;

/** The key a Standard Webhooks secret encodes: `whsec_` then canonical base64 of 24 bytes or more; null for any other text. */
function standardKeyIn(secret: string): Buffer | null {
  if (!secret.startsWith(STANDARD_PREFIX)) return null;
  const encoded = secret.slice(STANDARD_PREFIX.length);
  const key = Buffer.from(encoded, "base64");
  // Node's decoder skips what is not base64: only text that is exactly the key's encoding counts.
  return key.length >= STANDARD_KEY_MIN_BYTES && key.toString("base64") === encoded ? key : null;
}

/** Whether a shared secret is a Standard Webhooks secret (its key is the bytes it encodes). */
export const isStandardSecret = (secret: string): boolean => standardKeyIn(secret) !== null;

/** The HMAC key of the Standard Webhooks signature for a shared secret. */
export function standardKeyOf(secret: string): Buffer {
  return standardKeyIn(secret) ?? Buffer.from(secret, "utf8");
}

/** The secret a Standard Webhooks verifier takes for a shared secret: `whsec_` and the key in base64. */
export function standardSecretOf(secret: string): string {
  return isStandardSecret(secret) ? secret : `${STANDARD_PREFIX}${Buffer.from(secret, "utf8").toString("base64")}`;
}

export interface SignedHeaders {
  "x-service-signature": string;
  "webhook-id": string;
  "webhook-timestamp": string;
  "webhook-signature": string;
}

/**
 * The signature headers of one attempt. `secrets` are the secrets signing it, the newest first
 * (two while a rotated-out secret still signs): one `sha256=` value and one `v1,` entry each,
 * separated by a space in both headers.
 * `timestampSeconds` is real time (a standard verifier refuses a timestamp 5 minutes off its own
 * clock), whatever the service clock says.
 */
export function signDelivery({
  secrets,
  messageId,
  timestampSeconds,
  body,
}: {
  secrets: readonly string[];
  messageId: string;
  timestampSeconds: number;
  body: string;
}): SignedHeaders {
  const signed = `${messageId}.${timestampSeconds}.${body}`;
  return {
    "x-service-signature": secrets
      .map((secret) => `sha256=${createHmac("sha256", keysOf(secret).plain).update(body).digest("hex")}`)
      .join(" "),
    "webhook-id": messageId,
    "webhook-timestamp": String(timestampSeconds),
    "webhook-signature": secrets
      .map((secret) => `v1,${createHmac("sha256", keysOf(secret).standard).update(signed).digest("base64")}`)
      .join(" "),
  };
}
