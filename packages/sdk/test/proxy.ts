import http from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** What the proxy does with a request a rule matches. */
export type ProxyAction =
  /** Sends it on, and once the service has answered, closes the client's connection without the answer. */
  | "drop-after-answer"
  /** Sends it on, and closes the client's connection at once (the service works on it regardless). */
  | "drop-at-once"
  /** Never answers (the connection stays open): a server that hangs. */
  | "hang"
  /** Closes the connection at once, without sending the request on: a failed network. */
  | "reset"
  /** Answers itself, without the service: `body` as JSON, or `raw` as it is (a proxy's HTML page, say). */
  | { status: number; headers?: Record<string, string>; body?: unknown; raw?: string };

export interface ProxiedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** The service's answer: its status and headers (none when the proxy answered itself). */
  answer?: { status: number; headers: http.IncomingHttpHeaders };
}

/**
 * An HTTP proxy in front of the service, for what a network does to a client: it streams every
 * request and answer through (Server-Sent Events too), records them, and lets a test drop a
 * connection or answer in the service's place (one-shot rules, first match wins).
 */
export async function startProxy(target: string) {
  const seen: ProxiedRequest[] = [];
  const rules: { match: (request: ProxiedRequest) => boolean; action: ProxyAction }[] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const request: ProxiedRequest = {
      method: req.method ?? "GET",
      path: req.url ?? "/",
      headers: req.headers,
      body: Buffer.concat(chunks).toString(),
    };
    seen.push(request);
    const index = rules.findIndex((rule) => rule.match(request));
    const action = index >= 0 ? rules.splice(index, 1)[0]!.action : undefined;
    if (action === "hang") return;
    if (action === "reset") {
      req.socket.destroy();
      return;
    }
    if (typeof action === "object") {
      res
        .writeHead(action.status, { "content-type": "application/json", ...action.headers })
        .end(action.raw ?? JSON.stringify(action.body ?? {}));
      return;
    }
    const upstream = http.request(
      `${target}${request.path}`,
      { method: request.method, headers: { ...req.headers, host: new URL(target).host } },
      (answer) => {
        request.answer = { status: answer.statusCode ?? 0, headers: answer.headers };
        if (action === "drop-after-answer") {
          answer.resume();
          answer.on("end", () => req.socket.destroy());
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => res.destroy());
    // A client that goes away takes its upstream request with it (a stream, say), unless the rule keeps it running.
    res.on("close", () => {
      if (action !== "drop-at-once" && action !== "drop-after-answer") upstream.destroy();
    });
    upstream.end(Buffer.concat(chunks));
    if (action === "drop-at-once") upstream.on("finish", () => req.socket.destroy());
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    /** Applies `action` to the next request `match` accepts. */
    once(match: (request: ProxiedRequest) => boolean, action: ProxyAction) {
      rules.push({ match, action });
    },
    /** Cuts every open connection (a dropped network). */
    dropAll() {
      for (const socket of sockets) socket.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export type TestProxy = Awaited<ReturnType<typeof startProxy>>;
