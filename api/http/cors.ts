// Cross-origin calls to /v1 from browser apps (D-108). The API takes credentials only in headers
// (a bearer token or an API key), never cookies, so any origin is safe by default: a page on
// another site can use only the credentials its own code holds. An operator may name the origins
// instead (CORS_ORIGINS). Mounted on /v1 and on the checkout's JSON calls (pay, its prepare call,
// terms: bearer tokens too); the checkout's pages and their sign-in stay same-origin.
import cors from "cors";

/** The request headers the API reads, which a browser must be allowed to send. */
export const CORS_REQUEST_HEADERS = [
  "Authorization",
  "Content-Type",
  "Idempotency-Key",
  "X-API-Key",
  "Last-Event-ID",
  // A user's own wallet's signatures of a write (D-119).
  "Wallet-Signature",
  "Wallet-Permit-Signature",
  // The SDK's name and version (a browser keeps User-Agent its own).
  "X-TrustMint-Client",
];

/** The response headers a client needs beyond the CORS-safelisted ones. */
export const CORS_EXPOSED_HEADERS = [
  "X-Request-Id",
  "Idempotent-Replayed",
  "Retry-After",
  "X-RateLimit-Limit",
  "X-RateLimit-Remaining",
  "X-RateLimit-Reset",
];

/** A browser may cache a preflight's answer this long (Chromium caps it at 2 hours). */
const PREFLIGHT_MAX_AGE_S = 600;

export function apiCors(origins: "*" | readonly string[]) {
  return cors({
    origin: origins === "*" ? "*" : [...origins],
    methods: ["GET", "POST", "PUT", "PATCH", "DELETE"],
    allowedHeaders: CORS_REQUEST_HEADERS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
    credentials: false,
    maxAge: PREFLIGHT_MAX_AGE_S,
    optionsSuccessStatus: 204,
  });
}
