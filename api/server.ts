import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { Duplex } from "node:stream";
import type express from "express";
import type { Clock } from "../core/clock.js";
import type { Logger } from "../core/logger.js";
import { type AppDeps, createApp } from "./app.js";
import { ERROR_STATUS, type ErrorCode, type ErrorDetails } from "./http/errors.js";
import { connectRedis } from "./http/rate-limit.js";

export class HttpStartError extends Error {
  override name = "HttpStartError";
}

export interface RunningServer {
  url: string;
  close(): Promise<void>;
}

interface ClientErrorAnswer {
  code: ErrorCode;
  message: string;
  details?: ErrorDetails;
}

/**
 * The answer to a request Node's HTTP parser refused before (or while) Express saw it. The
 * statuses are Node's own defaults (socketOnError in lib/_http_server.js); `reason` is
 * llhttp's fixed description of the fault, never bytes of the request.
 */
export function clientErrorAnswer(error: NodeJS.ErrnoException & { reason?: unknown }): ClientErrorAnswer {
  const code = error.code ?? "";
  const reason = typeof error.reason === "string" && error.reason.length > 0 ? error.reason : "malformed";
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return {
        code: "HEADERS_TOO_LARGE",
        message: `Request line and headers must not exceed ${http.maxHeaderSize} bytes`,
        details: { field: "headers", reason: "too large" },
      };
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return { code: "PAYLOAD_TOO_LARGE", message: "Chunk extensions are too large", details: { field: "body", reason: "too large" } };
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return { code: "REQUEST_TIMEOUT", message: "The request was not received in time" };
  }
  const field = code.includes("CHUNK") ? "body" : /HEADER|CONTENT_LENGTH|TRANSFER_ENCODING/.test(code) ? "headers" : "request";
  return { code: "VALIDATION_ERROR", message: "Malformed HTTP request", details: { field, reason } };
}

type ServerSocket = Socket & { _httpMessage?: http.ServerResponse | null };

// The id goes into a header written by hand: only the characters requestContext ever keeps.
const HEADER_SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * `clientError`: the envelope instead of Node's bare 400/431/408, under Node's own rule for
 * when anything may still be written (a writable socket whose in-flight response, if any, has
 * sent nothing yet); otherwise, and for a reset connection, the socket is only destroyed.
 * Either way the connection ends here: the parser cannot go on after an error. A request
 * Express had already been given (a malformed chunked body) keeps its request id, so the
 * answer and the request's log line match; whatever Express writes later goes nowhere.
 * A pipelined request refused while an earlier one is still being answered takes that
 * answer's place, as with Node's default.
 */
function answerClientError(clock: Pick<Clock, "now">, logger: Pick<Logger, "isLevelEnabled" | "debug"> | undefined) {
  return (error: NodeJS.ErrnoException, stream: Duplex) => {
    const socket = stream as ServerSocket;
    const inFlight = socket._httpMessage;
    if (error.code === "ECONNRESET" || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    // A listener that threw would throw inside Node's parser callback and end the process.
    try {
      const answer = clientErrorAnswer(error);
      const status = ERROR_STATUS[answer.code];
      // The fault is in the in-flight request when its body was still arriving (a malformed chunk);
      // behind a complete one it is in a pipelined request of its own.
      const started = inFlight?.req && !inFlight.req.complete ? inFlight.getHeader("x-request-id") : undefined;
      const requestId = typeof started === "string" && HEADER_SAFE_ID.test(started) ? started : randomUUID();
      const body = JSON.stringify({
        success: false,
        error: { code: answer.code, message: answer.message, ...(answer.details ? { details: answer.details } : {}) },
        meta: { timestamp: clock.now().toISOString(), requestId },
      });
      socket.write(
        `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\n` +
          `Date: ${new Date().toUTCString()}\r\n` +
          "Content-Type: application/json; charset=utf-8\r\n" +
          `Content-Length: ${Buffer.byteLength(body)}\r\n` +
          "Connection: close\r\n" +
          "X-Content-Type-Options: nosniff\r\n" +
          "Cache-Control: no-store\r\n" +
          `X-Request-Id: ${requestId}\r\n\r\n${body}`,
      );
      if (logger?.isLevelEnabled("debug")) {
        logger.debug(
          { req: { id: requestId }, res: { statusCode: status }, err: { code: error.code } },
          "request refused by the HTTP parser",
        );
      }
    } catch {
      // Nothing more can be said on this connection.
    } finally {
      socket.destroy();
    }
  };
}

export interface ListenOptions {
  /** The service clock, for `meta.timestamp` of the answers written outside Express (default: the wall clock). */
  clock?: Pick<Clock, "now">;
  /** Where those answers are logged (at debug, like every 4xx). */
  logger?: Pick<Logger, "isLevelEnabled" | "debug">;
}

export function listen(app: express.Express, host: string, port: number, options: ListenOptions = {}): Promise<RunningServer> {
  const server = http.createServer(app);
  server.keepAliveTimeout = 65_000;
  server.on("clientError", answerClientError(options.clock ?? { now: () => new Date() }, options.logger));
  return new Promise((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => {
      reject(
        new HttpStartError(
          error.code === "EADDRINUSE"
            ? `api: PORT ${port} is already in use; set PORT to a free port`
            : `api: cannot listen on ${host}:${port} (${error.code ?? error.message})`,
        ),
      );
    });
    server.listen(port, host, () => {
      const { port: bound } = server.address() as AddressInfo;
      resolve({
        url: `http://${host}:${bound}`,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeIdleConnections();
          }),
      });
    });
  });
}

/**
 * The API of a process (`npm start`, `npm run api`): the rate-limit counters in Redis when
 * REDIS_URL is set, the app, and its listening server, each registered with `onStop`.
 */
export async function serveApi(
  deps: Omit<AppDeps, "redis" | "config"> & { config: AppDeps["config"] & { redisUrl?: string; http: { host: string; port: number } } },
  onStop: (stopper: () => void | Promise<void>) => void,
) {
  const redis = deps.config.redisUrl ? await connectRedis(deps.config.redisUrl, deps.logger) : undefined;
  // quit() refuses while the connection is still being made (no offline queue): then drop it.
  if (redis)
    onStop(() =>
      redis.quit().then(
        () => {},
        () => redis.disconnect(),
      ),
    );
  const app = await createApp({ ...deps, redis });
  const server = await listen(app, deps.config.http.host, deps.config.http.port, { clock: deps.clock, logger: deps.logger });
  onStop(() => server.close());
  // Stoppers run last-registered first: the live streams end, then the server closes (it waits
  // for open connections, and a stream never ends by itself).
  onStop(() => deps.services.notificationFeed.stop());
  return { app, server };
}
