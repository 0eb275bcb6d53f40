import http from "node:http";
import type { AddressInfo } from "node:net";

/** A push message as Expo receives it (what createExpoPush sends). */
export interface SeenPush {
  to: string;
  title: string;
  body: string;
  data: Record<string, unknown>;
}

/**
 * An HTTP server on 127.0.0.1 standing in for Expo's push API. Each request's messages go to
 * `respond`, which answers on `res` (see `answerTickets`), or keeps `res` to answer later (a
 * delivery in flight). It keeps every request it got.
 */
export async function startPushReceiver(respond: (messages: SeenPush[], res: http.ServerResponse) => void) {
  const received: { headers: http.IncomingHttpHeaders; messages: SeenPush[] }[] = [];
  const server = http.createServer((req, res) => {
    let text = "";
    req.on("data", (chunk) => {
      text += chunk;
    });
    req.on("end", () => {
      const messages = JSON.parse(text) as SeenPush[];
      received.push({ headers: req.headers, messages });
      respond(messages, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/--/api/v2/push/send`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Expo's answer: one ticket per message, in order. */
export function answerTickets(res: http.ServerResponse, tickets: unknown[], status = 200, headers: Record<string, string> = {}) {
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify({ data: tickets }));
}

/** Expo's refusal of a whole request. */
export function answerError(res: http.ServerResponse, status: number, headers: Record<string, string> = {}) {
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify({ errors: [{ code: "REFUSED" }] }));
}
