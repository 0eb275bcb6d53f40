// How every request leaves the client: the caller's credentials on each attempt (getToken is
// called per request, so an app refreshes its token before the hour is up; a 401 calls it once
// more and retries once), an Idempotency-Key on every write (generated unless the caller gives
// one, and the same on every retry, so a retried write moves money once), and retries of what is
// safe to retry: a network failure, a 5xx, 429 and 409 IDEMPOTENCY_IN_PROGRESS, after Retry-After
// when the API says, else exponential backoff with jitter, a bounded number of times.

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
  /** The longest wait between attempts, Retry-After included (default 10 s). */
  maxDelayMs?: number;
}

export interface TransportOptions extends Credentials {
  fetch?: (input: Request) => Promise<Response>;
  retry?: RetryOptions;
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
      const headers = new Headers(request.headers);
      if (idempotencyKey) headers.set("idempotency-key", idempotencyKey);
      await authorize(headers, refreshed);
      let response: Response;
      try {
        response = await baseFetch(new Request(request.url, { method: request.method, headers, body, signal: request.signal }));
      } catch (error) {
        // The connection failed (the request may or may not have arrived): the same key makes a retry safe.
        if (attempt >= maxRetries || request.signal.aborted) throw error;
        await sleep(backoff(attempt), request.signal);
        continue;
      }
      if (response.status === 401 && options.getToken && !refreshed) {
        refreshed = true;
        continue;
      }
      if (attempt < maxRetries && (RETRYABLE_STATUS(response.status) || (await keyInProgress(response)))) {
        const retryAfter = Number(response.headers.get("retry-after"));
        await response.body?.cancel();
        await sleep(
          Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(maxDelayMs, retryAfter * 1_000) : backoff(attempt),
          request.signal,
        );
        continue;
      }
      return response;
    }
  };
}
