// Outgoing webhook requests, safe from server-side request forgery: the address judged is the
// one actually connected to (the guard sits in the connector: a hostname's every resolved address
// is checked there, and a literal IP before the connection), so no DNS answer can change between
// a check and the connection; at every attempt; redirects are never followed (a 3xx is a failed
// attempt); 5 s for the whole exchange. In production only https, and never loopback, private,
// link-local (169.254.169.254, the cloud metadata address, among them), CGNAT, multicast,
// unspecified, reserved or other special addresses; an IPv6 address that embeds IPv4 addresses
// (mapped, compatible, translated, NAT64, 6to4, Teredo) judged by them. Outside
// production, loopback http is allowed too (run-and-sandbox.md section 5), nothing else more.
import dns from "node:dns";
import net from "node:net";
import ipaddr from "ipaddr.js";
import type { Agent, Dispatcher } from "undici";

/** The receiver's time to answer (service-spec part 8). */
export const RESPONSE_TIMEOUT_MS = 5_000;
/** URLs longer than this are refused (INVALID_URL). */
export const URL_MAX_CHARS = 2_048;
const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "[::1]"]);

export type Lookup = (
  hostname: string,
  options: dns.LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void,
) => void;

/**
 * The IPv4 addresses an IPv6 address carries, and the form that carries them: a connection to it
 * may reach them (through the host's own stack, a relay or a translator), so they are judged as
 * the address. Null for an IPv6 address that embeds none.
 */
export function embeddedIPv4(address: ipaddr.IPv6): { form: string; addresses: ipaddr.IPv4[] } | null {
  const words = address.parts;
  const ipv4 = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
  const zeros = (from: number, to: number) => words.slice(from, to).every((word) => word === 0);
  const last = () => [ipv4(words[6]!, words[7]!)];
  // ::ffff:a.b.c.d (RFC 4291 2.5.5.2): the IPv4 address itself on a dual-stack socket.
  if (zeros(0, 5) && words[5] === 0xffff) return { form: "IPv4-mapped", addresses: last() };
  // ::a.b.c.d (RFC 4291 2.5.5.1, deprecated), but not :: or ::1.
  if (zeros(0, 6) && (words[6] !== 0 || words[7]! > 1)) return { form: "IPv4-compatible", addresses: last() };
  // ::ffff:0:a.b.c.d (RFC 6145, SIIT).
  if (zeros(0, 4) && words[4] === 0xffff && words[5] === 0) return { form: "IPv4-translated", addresses: last() };
  // 64:ff9b::/96 (RFC 6052, the well-known NAT64 prefix). The local-use 64:ff9b:1::/48 places the
  // address where its operator chose, so it is not read here: its range refuses it whole.
  if (words[0] === 0x64 && words[1] === 0xff9b && zeros(2, 6)) return { form: "NAT64", addresses: last() };
  // 2002:AABB:CCDD::/48 (RFC 3056).
  if (words[0] === 0x2002) return { form: "6to4", addresses: [ipv4(words[1]!, words[2]!)] };
  // 2001:0::/32 (RFC 4380): the Teredo server, and the client's address with every bit inverted.
  if (words[0] === 0x2001 && words[1] === 0) {
    return { form: "Teredo", addresses: [ipv4(words[2]!, words[3]!), ipv4(words[6]! ^ 0xffff, words[7]! ^ 0xffff)] };
  }
  return null;
}

/**
 * Why an address may not be connected to, or null when it may: its range when that is not public
 * unicast (loopback only where allowed). An IPv6 address that embeds IPv4 addresses (embeddedIPv4)
 * is judged by them: refused when one is not public, allowed when all are.
 */
export function addressRefusal(address: string, { allowLoopback }: { allowLoopback: boolean }): string | null {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    // IPv6 text in the URL standard's normal form first: ipaddr.js reads ::a.b.c.d as IPv4-mapped.
    parsed = ipaddr.parse(address.includes(":") ? new URL(`http://[${address}]/`).hostname.slice(1, -1) : address);
  } catch {
    return "not an IP address";
  }
  const refusalOf = (ip: ipaddr.IPv4 | ipaddr.IPv6) => {
    const range = ip.range();
    return range === "unicast" || (range === "loopback" && allowLoopback) ? null : range;
  };
  const embedded = parsed.kind() === "ipv6" ? embeddedIPv4(parsed as ipaddr.IPv6) : null;
  if (!embedded) return refusalOf(parsed);
  for (const ipv4 of embedded.addresses) {
    const refused = refusalOf(ipv4);
    // A mapped address is its IPv4 address: named as such; the other forms say where it hides.
    if (refused) return embedded.form === "IPv4-mapped" ? refused : `${refused} (${ipv4} in ${embedded.form} form)`;
  }
  return null;
}

/** Why a webhook URL is refused (INVALID_URL), or null. The address rule is applied again at each connection. */
export function urlRefusal(text: string, { production }: { production: boolean }): string | null {
  if (text.length > URL_MAX_CHARS) return `must be at most ${URL_MAX_CHARS} characters`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "must be an absolute https URL";
  }
  if (url.username || url.password) return "must not carry a user name or password";
  if (url.hash) return "must not have a fragment";
  const loopbackHttp = !production && url.protocol === "http:" && LOOPBACK_NAMES.has(url.hostname);
  if (url.protocol !== "https:" && !loopbackHttp) {
    return production ? "must be an https URL" : "must be an https URL (or http on 127.0.0.1, localhost or [::1] outside production)";
  }
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (net.isIP(host)) {
    const refused = addressRefusal(host, { allowLoopback: !production });
    if (refused) return `must not point at a ${refused} address`;
  } else if (production && (host === "localhost" || host.endsWith(".localhost"))) {
    return "must not point at a loopback address";
  }
  return null;
}

export interface AttemptResult {
  ok: boolean;
  /** The receiver's HTTP status; 0 when none came. */
  statusCode: number;
  durationMs: number;
  /** Why the attempt failed (absent when it succeeded). */
  error?: string;
  /** A 429 or 503 asked for this wait (Retry-After, in ms). */
  retryAfterMs?: number;
}

class RefusedAddress extends Error {
  override name = "RefusedAddress";
}

/** The whole exchange took longer than its time-out. */
class AttemptTimeout extends Error {
  override name = "TimeoutError";
}

/** URLs whose judgement and parts are kept (every attempt at a webhook posts to the same one). */
const URLS_KEPT = 1_000;

/** Retry-After as ms: delay-seconds or an HTTP date (null when absent or unreadable). */
export function retryAfterMs(value: string | string[] | undefined, nowMs = Date.now()): number | null {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined) return null;
  if (/^\d{1,10}$/.test(text.trim())) return Number(text.trim()) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

export interface WebhookEgress {
  /** One POST of `body`; never throws (the outcome says what happened). */
  post(url: string, body: string, headers: Record<string, string>): Promise<AttemptResult>;
  close(): Promise<void>;
}

export function createWebhookEgress({
  production,
  lookup = dns.lookup as unknown as Lookup,
  timeoutMs = RESPONSE_TIMEOUT_MS,
}: {
  production: boolean;
  /** The resolver (tests give their own). */
  lookup?: Lookup;
  timeoutMs?: number;
}): WebhookEgress {
  const allowLoopback = !production;
  const refusalOf = (address: string) => addressRefusal(address, { allowLoopback });
  // Every address a name resolves to must be allowed: the connection may use any of them.
  const guardedLookup = (hostname: string, options: dns.LookupOptions, callback: (...args: unknown[]) => void) => {
    lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error);
      const refused = addresses.map((entry) => [entry.address, refusalOf(entry.address)] as const).find(([, reason]) => reason !== null);
      if (refused) return callback(new RefusedAddress(`${hostname} resolves to ${refused[0]}, a ${refused[1]} address`));
      if (addresses.length === 0) return callback(new Error(`${hostname} has no address`));
      if (options.all) return callback(null, addresses);
      return callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
  // undici is loaded with the first delivery, not with the process (about 100 ms and 6 MB at start; D-87).
  let loading: Promise<Agent> | undefined;
  const agentOnce = () =>
    (loading ??= loadUndici().then(({ Agent, buildConnector }) => {
      const connector = buildConnector({ lookup: guardedLookup as never, timeout: timeoutMs });
      return new Agent({
        connect: (options, callback) => {
          const host = options.hostname.replace(/^\[|\]$/g, "");
          if (net.isIP(host)) {
            const refused = refusalOf(host);
            if (refused) return callback(new RefusedAddress(`${host} is a ${refused} address`), null);
          }
          connector(options, callback);
        },
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
    }));

  // A webhook's URL is judged and parsed once, not at every attempt (its addresses still are, at each connection).
  const targets = new Map<string, { refused: string | null; origin: string; path: string }>();
  const targetOf = (url: string) => {
    let target = targets.get(url);
    if (!target) {
      const refused = urlRefusal(url, { production });
      const parsed = refused ? undefined : new URL(url);
      target = { refused, origin: parsed?.origin ?? "", path: parsed ? `${parsed.pathname}${parsed.search}` : "" };
      if (targets.size >= URLS_KEPT) targets.clear();
      targets.set(url, target);
    }
    return target;
  };

  return {
    async post(url, body, headers) {
      const started = performance.now();
      const target = targetOf(url);
      if (target.refused) return { ok: false, statusCode: 0, durationMs: 0, error: `refused: the URL ${target.refused}` };
      let agent: Agent;
      try {
        agent = await agentOnce();
      } catch (error) {
        return { ok: false, statusCode: 0, durationMs: 0, error: describe(error, timeoutMs) };
      }
      // On undici's dispatch API (no response stream, no AbortSignal and its listeners per
      // request): the attempt ends at the response's head, and its body is read and dropped
      // after it (a slow body must not hold the attempt), under bodyTimeout.
      return new Promise<AttemptResult>((resolve) => {
        let controller: Dispatcher.DispatchController | undefined;
        let ended = false;
        const end = (result: Omit<AttemptResult, "durationMs">) => {
          if (ended) return;
          ended = true;
          clearTimeout(timer);
          resolve({ ...result, durationMs: Math.round(performance.now() - started) });
        };
        const fail = (error: unknown) => end({ ok: false, statusCode: 0, error: describe(error, timeoutMs) });
        const timer = setTimeout(() => {
          fail(new AttemptTimeout());
          controller?.abort(new AttemptTimeout());
        }, timeoutMs);
        try {
          agent.dispatch(
            {
              origin: target.origin,
              path: target.path,
              method: "POST",
              headers: { "content-type": "application/json", "user-agent": "TrustMint-Webhooks/1", ...headers },
              body,
            },
            {
              onRequestStart(dispatched) {
                controller = dispatched;
                if (ended) dispatched.abort(new AttemptTimeout());
              },
              onResponseStart(_controller, statusCode, responseHeaders) {
                if (statusCode >= 200 && statusCode < 300) return end({ ok: true, statusCode });
                const wait = statusCode === 429 || statusCode === 503 ? retryAfterMs(responseHeaders["retry-after"]) : null;
                const error = statusCode >= 300 && statusCode < 400 ? `redirect not followed (HTTP ${statusCode})` : `HTTP ${statusCode}`;
                end({ ok: false, statusCode, error, ...(wait === null ? {} : { retryAfterMs: wait }) });
              },
              onResponseData() {},
              onResponseEnd() {},
              onResponseError(_controller, error) {
                fail(error);
              },
            },
          );
        } catch (error) {
          fail(error);
        }
      });
    },
    close: async () => {
      await (await loading)?.close();
    },
  };
}

let undici: typeof import("undici") | undefined;
const loadUndici = async () => (undici ??= await import("undici"));

function describe(thrown: unknown, timeoutMs: number): string {
  const error = thrown as Error & { code?: string; cause?: unknown };
  const cause = error.cause as (Error & { code?: string }) | undefined;
  if (error instanceof RefusedAddress || cause instanceof RefusedAddress)
    return `refused: ${(cause instanceof RefusedAddress ? cause : error).message}`;
  if (
    error instanceof AttemptTimeout ||
    error.name === "TimeoutError" ||
    // undici's own errors come from a request, which loaded undici first.
    (undici !== undefined &&
      (error instanceof undici.errors.HeadersTimeoutError ||
        error instanceof undici.errors.BodyTimeoutError ||
        error instanceof undici.errors.ConnectTimeoutError))
  ) {
    return `no answer within ${timeoutMs / 1000} s`;
  }
  const code = error.code ?? cause?.code;
  return `${code ? `${code}: ` : ""}${error.message}`.slice(0, 500);
}
