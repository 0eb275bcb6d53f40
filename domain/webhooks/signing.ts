// The signatures of a delivery: the spec's `x-service-signature: sha256=<hex HMAC-SHA256 of the
// exact body>` keyed with the shared secret as given (what GitHub-style verifiers such as
// @octokit/webhooks-methods check), and the Standard Webhooks headers (webhook-id,
// webhook-timestamp, webhook-signature: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`), which
// the standard verifiers (the svix and standardwebhooks packages) check with the secret
// `whsec_<base64 of the key>`. The key is the secret's UTF-8 bytes, or, for a secret that is
// itself a Standard Webhooks secret (`whsec_...`), the bytes it encodes.
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

/** The HMAC key of the Standard Webhooks signature for a shared secret. */
export function standardKeyOf(secret: string): Buffer {
  return secret.startsWith(STANDARD_PREFIX) ? Buffer.from(secret.slice(STANDARD_PREFIX.length), "base64") : Buffer.from(secret, "utf8");
}

/** The secret a Standard Webhooks verifier takes for a shared secret: `whsec_` and the key in base64. */
export function standardSecretOf(secret: string): string {
  return secret.startsWith(STANDARD_PREFIX) ? secret : `${STANDARD_PREFIX}${Buffer.from(secret, "utf8").toString("base64")}`;
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
