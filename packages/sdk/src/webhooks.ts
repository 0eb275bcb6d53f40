// Verifying a webhook delivery where it arrives: both of its signatures checked with Web Crypto
// (Node 20+, Deno, Bun, browsers and edge runtimes alike), each comparison made by
// crypto.subtle.verify, which runs in constant time:
// - `x-service-signature: sha256=<hex HMAC-SHA256 of the exact body>`, keyed with the shared
//   secret's UTF-8 bytes (service-spec part 4, note 10);
// - the Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature:
//   `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`), keyed with the bytes a `whsec_` secret
//   encodes (canonical base64 of 24 bytes or more), else the secret's UTF-8 bytes; the signed
//   timestamp must be within `toleranceSeconds` of now, so a captured delivery cannot be replayed.
// While a rotated-out secret still signs, each header carries two values (space-separated):
// either one matching is enough.
import type { components } from "./generated/openapi.js";

/**
 * A delivery's body: part 6's {id, event, timestamp, data} by event name, or `<name>.reverted`
 * after a reorg. Narrowed by `event`, `data` is that event's own.
 */
export type WebhookEvent = components["schemas"]["WebhookEvent"];
/** A test delivery (POST /v1/webhooks/{webhookId}/test): `test: true`, and no such event happened. */
export type WebhookTestEvent = components["schemas"]["WebhookTestEvent"];
/** The event names (part 6) and their `.reverted` follow-ups. */
export type WebhookEventName = WebhookEvent["event"];
/** The event of one name: `WebhookEventOf<"payment.success">["data"]`. */
export type WebhookEventOf<N extends WebhookEventName> = Extract<WebhookEvent, { event: N }>;

/** Whether a verified delivery is a test one: check it first, then switch on `event.event`. */
export const isTestEvent = (event: WebhookEvent | WebhookTestEvent): event is WebhookTestEvent => "test" in event && event.test === true;

export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** How far the signed timestamp may be from now, either way (default 300 s, the Standard Webhooks default). */
  toleranceSeconds?: number;
  /** The receiver's clock in milliseconds (default Date.now). */
  now?: () => number;
}

export type WebhookVerificationFailure = "missing_headers" | "bad_signature" | "stale_timestamp" | "bad_payload";

/** A delivery that does not verify: answer it 401 (or 400 for bad_payload) and drop it. */
export class WebhookVerificationError extends Error {
  override name = "WebhookVerificationError";
  constructor(
    readonly reason: WebhookVerificationFailure,
    message: string,
  ) {
    super(message);
  }
}

const STANDARD_PREFIX = "whsec_";
const STANDARD_KEY_MIN_BYTES = 24;
const encoder = new TextEncoder();

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const value = Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
  return Array.isArray(value) ? value.join(" ") : value;
}

function base64Bytes(text: string): Uint8Array | null {
  try {
    return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
  } catch {
    return null;
  }
}
const base64Of = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

/** The Standard Webhooks key of a secret: the bytes of a canonical `whsec_` secret, else the secret's UTF-8 bytes. */
function standardKeyOf(secret: string): Uint8Array {
  if (secret.startsWith(STANDARD_PREFIX)) {
    const encoded = secret.slice(STANDARD_PREFIX.length);
    const key = base64Bytes(encoded);
    if (key && key.length >= STANDARD_KEY_MIN_BYTES && base64Of(key) === encoded) return key;
  }
  return encoder.encode(secret);
}

const hmacKey = (bytes: Uint8Array, use: "sign" | "verify" = "verify") =>
  globalThis.crypto.subtle.importKey("raw", bytes as BufferSource, { name: "HMAC", hash: "SHA-256" }, false, [use]);

/** Whether any of the signatures (decoded; null for a malformed one) is the HMAC of `signed`. */
async function anyVerifies(key: CryptoKey, signatures: (Uint8Array | null)[], signed: Uint8Array): Promise<boolean> {
  let verified = false;
  // Every candidate is checked (no early exit), each in constant time.
  for (const signature of signatures) {
    if (signature && (await globalThis.crypto.subtle.verify("HMAC", key, signature as BufferSource, signed as BufferSource)))
      verified = true;
  }
  return verified;
}

const hexBytes = (hex: string) =>
  /^[0-9a-f]{64}$/i.test(hex) ? Uint8Array.from(hex.match(/../g)!, (pair) => Number.parseInt(pair, 16)) : null;

/**
 * Verifies a delivery and returns its event. `rawBody` is the body exactly as received (the bytes
 * or their UTF-8 text, before any JSON parsing), `headers` the request's (a Headers or Node's
 * IncomingHttpHeaders), `secret` the shared secret you registered the webhook with.
 * Throws WebhookVerificationError when a signature header is missing or does not match, or the
 * timestamp is stale.
 */
export async function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string,
  options: VerifyOptions = {},
): Promise<WebhookEvent | WebhookTestEvent> {
  const body = typeof rawBody === "string" ? encoder.encode(rawBody) : rawBody;
  const serviceSignature = header(headers, "x-service-signature");
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const standardSignature = header(headers, "webhook-signature");
  if (!serviceSignature || !id || !timestamp || !standardSignature) {
    throw new WebhookVerificationError(
      "missing_headers",
      "a delivery carries x-service-signature, webhook-id, webhook-timestamp and webhook-signature",
    );
  }

  const signedAt = /^\d{1,12}$/.test(timestamp) ? Number(timestamp) : Number.NaN;
  const now = (options.now ?? Date.now)() / 1_000;
  const tolerance = options.toleranceSeconds ?? 300;
  if (!Number.isFinite(signedAt) || Math.abs(now - signedAt) > tolerance) {
    throw new WebhookVerificationError("stale_timestamp", `webhook-timestamp is more than ${tolerance} s from now`);
  }

  const serviceValues = serviceSignature.split(" ").map((value) => (value.startsWith("sha256=") ? hexBytes(value.slice(7)) : null));
  const standardValues = standardSignature.split(" ").map((value) => (value.startsWith("v1,") ? base64Bytes(value.slice(3)) : null));
  const signed = standardSigned(id, timestamp, body);
  const [serviceOk, standardOk] = await Promise.all([
    anyVerifies(await hmacKey(encoder.encode(secret)), serviceValues, body),
    anyVerifies(await hmacKey(standardKeyOf(secret)), standardValues, signed),
  ]);
  if (!serviceOk || !standardOk) {
    throw new WebhookVerificationError("bad_signature", "the delivery's signatures do not match its body and this secret");
  }
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body)) as WebhookEvent | WebhookTestEvent;
  } catch {
    throw new WebhookVerificationError("bad_payload", "the signed body is not JSON");
  }
}

/** What the Standard Webhooks signature covers: `id.timestamp.body`. */
function standardSigned(id: string, timestamp: string, body: Uint8Array): Uint8Array {
  const prefix = encoder.encode(`${id}.${timestamp}.`);
  const signed = new Uint8Array(prefix.length + body.length);
  signed.set(prefix);
  signed.set(body, prefix.length);
  return signed;
}

export interface SignOptions {
  /** The delivery's id (default a random UUID): `webhook-id`. */
  id?: string;
  /** The signing time in seconds since the epoch (default now): `webhook-timestamp`. */
  timestamp?: number;
}

/**
 * Signs a body as the service signs a delivery, for a receiver's own tests: the four headers
 * `verifyWebhook` checks (x-service-signature and the Standard Webhooks ones), for `body` sent as is.
 *
 * @example
 * const body = JSON.stringify({ id: "evt_1", event: "payment.success", timestamp: new Date().toISOString(), data: {...} });
 * const response = await fetch("http://127.0.0.1:8080/webhooks", { method: "POST", body, headers: await signWebhook(body, secret) });
 */
export async function signWebhook(body: string | Uint8Array, secret: string, options: SignOptions = {}): Promise<Record<string, string>> {
  const bytes = typeof body === "string" ? encoder.encode(body) : body;
  const id = options.id ?? globalThis.crypto.randomUUID();
  const timestamp = String(Math.floor(options.timestamp ?? Date.now() / 1_000));
  const sign = async (key: Uint8Array, data: Uint8Array) =>
    new Uint8Array(await globalThis.crypto.subtle.sign("HMAC", await hmacKey(key, "sign"), data as BufferSource));
  const [service, standard] = await Promise.all([
    sign(encoder.encode(secret), bytes),
    sign(standardKeyOf(secret), standardSigned(id, timestamp, bytes)),
  ]);
  return {
    "content-type": "application/json",
    "x-service-signature": `sha256=${Array.from(service, (byte) => byte.toString(16).padStart(2, "0")).join("")}`,
    "webhook-id": id,
    "webhook-timestamp": timestamp,
    "webhook-signature": `v1,${base64Of(standard)}`,
  };
}
