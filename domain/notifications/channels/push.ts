// Push through Expo's push API (https://docs.expo.dev/push-notifications/sending-notifications/):
// one POST of up to 100 messages, answered with one ticket per message in order. The URL and
// access token are configuration (EXPO_PUSH_URL, EXPO_ACCESS_TOKEN), so tests point it at a local
// receiver that speaks the same answer format.

/** One push message in Expo's format. */
export interface PushMessage {
  to: string;
  title: string;
  body: string;
  data: Record<string, unknown>;
  sound?: "default";
  priority?: "default" | "high";
}

/** What Expo said of one message: accepted, or refused (and whether the device is gone for good). */
export type PushTicket = { ok: true; id: string | undefined } | { ok: false; error: string; deviceGone: boolean };

/** Expo's refusal of a whole request: retry later (429, 5xx, a network failure) or not (other 4xx). */
export class PushRequestError extends Error {
  override name = "PushRequestError";
  constructor(
    message: string,
    readonly retryable: boolean,
    /** Seconds Expo asked to wait (Retry-After), when it said. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

/** Expo refuses more than 100 messages in one request. */
export const EXPO_MAX_MESSAGES = 100;
/** An Expo request still unanswered after this fails, and its job retries: a hung connection never holds a delivery slot. */
const TIMEOUT_MS = 10_000;

export function createExpoPush(options: { url: string; accessToken?: string }) {
  return {
    async send(messages: PushMessage[]): Promise<PushTicket[]> {
      if (messages.length === 0) return [];
      if (messages.length > EXPO_MAX_MESSAGES) throw new Error(`at most ${EXPO_MAX_MESSAGES} push messages per request`);
      let response: Response;
      try {
        response = await fetch(options.url, {
          method: "POST",
          headers: {
            accept: "application/json",
            "content-type": "application/json",
            ...(options.accessToken ? { authorization: `Bearer ${options.accessToken}` } : {}),
          },
          body: JSON.stringify(messages),
          redirect: "error",
          signal: AbortSignal.timeout(TIMEOUT_MS),
        });
      } catch (error) {
        throw new PushRequestError(`push service unreachable: ${(error as Error).message}`, true);
      }
      const text = await response.text();
      if (!response.ok) {
        const retryAfter = Number(response.headers.get("retry-after"));
        throw new PushRequestError(
          `push service answered ${response.status}: ${text.slice(0, 200)}`,
          response.status === 429 || response.status >= 500,
          Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined,
        );
      }
      let tickets: unknown;
      try {
        tickets = (JSON.parse(text) as { data?: unknown }).data;
      } catch {
        throw new PushRequestError("push service answered something other than JSON", true);
      }
      if (!Array.isArray(tickets) || tickets.length !== messages.length) {
        throw new PushRequestError("push service answered without one ticket per message", true);
      }
      return tickets.map((ticket: { status?: string; id?: string; message?: string; details?: { error?: string } }) =>
        ticket.status === "ok"
          ? { ok: true as const, id: ticket.id }
          : {
              ok: false as const,
              error: ticket.details?.error ?? ticket.message ?? "refused",
              // Expo's word that the token will never work again: the device unregistered the app.
              deviceGone: ticket.details?.error === "DeviceNotRegistered",
            },
      );
    },
  };
}

export type ExpoPush = ReturnType<typeof createExpoPush>;
