// How every request leaves the client: the caller's credentials on each attempt (getToken is
// called per request, so an app refreshes its token before the hour is up; a 401 calls it once
// more and retries once), an Idempotency-Key on every write (generated unless the caller gives
// one, and the same on every retry, so a retried write moves money once), and retries of what is
// safe to retry: a network failure, an attempt past the timeout, a 5xx, 429 and 409
// IDEMPOTENCY_IN_PROGRESS, after Retry-After when the API says (up to maxRetryAfterMs; a longer
// wait is the caller's to decide: the error comes back at once), else exponential backoff with
// jitter, a bounded number of times. What no attempt answered is an ApiConnectionError (an
// ApiTimeoutError when the attempts timed out); a success that is not JSON, an ApiError.
import { ApiConnectionError, ApiError, ApiTimeoutError } from "./errors.js";
import { CLIENT_HEADER, SDK_VERSION } from "./version.js";

export interface Credentials {
  /** The user's access token, called before each request (`forceRefresh` after a 401): return a fresh one before it expires. */
  getToken?: ((context: { forceRefresh: boolean }) => string | Promise<string>) | undefined;
  /** A server's API key (Pro and Enterprise plans), sent as X-API-Key. */
  apiKey?: string | undefined;
}

export interface RetryOptions {
  /** Retries after the first attempt (default 3). */
  maxRetries?: number;
  /** The first backoff (default 250 ms); doubles each retry, with jitter. */
  baseDelayMs?: number;
  /** The longest backoff between attempts (default 10 s). */
  maxDelayMs?: number;
  /** The longest Retry-After honoured (default 60 s): an answer asking for longer comes back at once as its ApiError. */
  maxRetryAfterMs?: number;
}

export interface TransportOptions extends Credentials {
  fetch?: (input: Request) => Promise<Response>;
  retry?: RetryOptions;
  /** How long one attempt may wait for its answer's headers (default 60 s); 0: no limit. */
  timeoutMs?: number | undefined;
}

/** Node and other servers: a User-Agent of ours beside the client header (a browser keeps its own). */
const nodeVersion = (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node;
const USER_AGENT = nodeVersion ? `trustmint-sdk-js/${SDK_VERSION} node/${nodeVersion}` : undefined;

/** The headers every request of the SDK carries: who is calling. */
export function clientHeaders(headers: Headers): Headers {
  headers.set("x-trustmint-client", CLIENT_HEADER);
  if (USER_AGENT) headers.set("user-agent", USER_AGENT);
  return headers;
}

const RETRYABLE_STATUS = (status: number) => status === 429 || status >= 500;
const sleep = (ms: number, signal?: AbortSignal | null) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });

/** Is this 409 the API's "an earlier request with this key is still running" (worth waiting for)? */
async function keyInProgress(response: Response): Promise<boolean> {
  if (response.status !== 409) return false;
  const body = (await response
    .clone()
    .json()
    .catch(() => null)) as { error?: { code?: string } } | null;
  return body?.error?.code === "IDEMPOTENCY_IN_PROGRESS";
}

/** A fetch for openapi-fetch that authenticates, keys and retries each request as the file's head says. */
export function createTransport(options: TransportOptions): (request: Request) => Promise<Response> {
  const baseFetch = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const maxRetries = options.retry?.maxRetries ?? 3;
  const baseDelayMs = options.retry?.baseDelayMs ?? 250;
  const maxDelayMs = options.retry?.maxDelayMs ?? 10_000;
  const maxRetryAfterMs = options.retry?.maxRetryAfterMs ?? 60_000;
  const timeoutMs = options.timeoutMs ?? 60_000;
  const backoff = (attempt: number) => Math.min(maxDelayMs, baseDelayMs * 2 ** attempt * (0.5 + Math.random()));

  async function authorize(headers: Headers, forceRefresh: boolean) {
    if (options.getToken) headers.set("authorization", `Bearer ${await options.getToken({ forceRefresh })}`);
    else if (options.apiKey) headers.set("x-api-key", options.apiKey);
  }

  return async (request) => {
    const write = request.method !== "GET" && request.method !== "HEAD";
    // One key for every attempt of this request: the API answers a retry with the first attempt's outcome.
    const idempotencyKey = write ? (request.headers.get("idempotency-key") ?? globalThis.crypto.randomUUID()) : undefined;
    const body = write ? await request.clone().arrayBuffer() : undefined;
    let refreshed = false;
    for (let attempt = 0; ; attempt++) {
      const headers = clientHeaders(new Headers(request.headers));
      if (idempotencyKey) headers.set("idempotency-key", idempotencyKey);
      await authorize(headers, refreshed);
      let response: Response;
      const timeout = timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined;
      const signal = timeout ? AbortSignal.any([request.signal, timeout]) : request.signal;
      try {
        response = await baseFetch(new Request(request.url, { method: request.method, headers, body, signal }));
      } catch (error) {
        // The caller's own abort is theirs: as it came.
        if (request.signal.aborted) throw error;
        // The connection failed or timed out (the request may or may not have arrived): the same key makes a retry safe.
        if (attempt < maxRetries) {
          await sleep(backoff(attempt), request.signal);
          continue;
        }
        throw timeout?.aborted
          ? new ApiTimeoutError(`No answer within ${timeoutMs} ms (${attempt + 1} attempts): ${request.method} ${request.url}`, {
              cause: error,
            })
          : new ApiConnectionError(`The connection failed (${attempt + 1} attempts): ${request.method} ${request.url}`, { cause: error });
      }
      if (response.status === 401 && options.getToken && !refreshed) {
        refreshed = true;
        continue;
      }
      const retryAfterMs = Number(response.headers.get("retry-after")) * 1_000;
      const asked = Number.isFinite(retryAfterMs) && retryAfterMs > 0;
      if (
        attempt < maxRetries &&
        (!asked || retryAfterMs <= maxRetryAfterMs) &&
        (RETRYABLE_STATUS(response.status) || (await keyInProgress(response)))
      ) {
        await response.body?.cancel();
        await sleep(asked ? retryAfterMs : backoff(attempt), request.signal);
        continue;
      }
      if (response.ok && response.status !== 204 && !/json|event-stream/.test(response.headers.get("content-type") ?? "")) {
        await response.body?.cancel();
        throw new ApiError({
          status: response.status,
          code: "INTERNAL_ERROR",
          message: `HTTP ${response.status} with a body that is not JSON (${response.headers.get("content-type") ?? "no content type"})`,
          requestId: response.headers.get("x-request-id") ?? undefined,
        });
      }
      return response;
    }
  };
}
