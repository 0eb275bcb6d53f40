import http from "node:http";
import type { AddressInfo } from "node:net";

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The exact body, as signed. */
  body: string;
  /** When it arrived, on `now` (default real ms). */
  at: number;
}

/**
 * A webhook receiver on 127.0.0.1: keeps every request it gets, and answers each path as
 * `answers` says (a handler that may also never answer), else `fallback`, else 200.
 */
export async function startWebhookReceiver(options: { now?: () => number } = {}) {
  const received: Received[] = [];
  const answers = new Map<string, (res: http.ServerResponse) => void>();
  const receiver = {
    base: "",
    received,
    answers,
    /** Answers the paths `answers` does not name (a receiver that holds every request, say). */
    fallback: undefined as ((res: http.ServerResponse, request: Received) => void) | undefined,
    of: (path: string) => received.filter((entry) => entry.path === path),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = http.createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => {
      body += chunk;
    });
    req.on("end", () => {
      const request = { path: req.url ?? "", headers: req.headers, body, at: options.now?.() ?? Date.now() };
      received.push(request);
      const answer = answers.get(request.path);
      if (answer) answer(res);
      else if (receiver.fallback) receiver.fallback(res, request);
      else res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  receiver.base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}

export type WebhookReceiver = Awaited<ReturnType<typeof startWebhookReceiver>>;
