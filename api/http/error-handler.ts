import type { NextFunction, Request, Response } from "express";
import type { Logger } from "../../core/logger.js";
import { errorBody } from "./envelope.js";
import { AppError, ERROR_STATUS } from "./errors.js";

declare global {
  namespace Express {
    interface Request {
      /** The methods the routes of this request's path serve, noted by `allowMethods`. */
      allowedMethods?: Set<string>;
    }
  }
}

/** The order of the methods in an Allow header. */
const METHOD_ORDER = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];

/**
 * Notes the methods of a known path (HEAD with GET: Express serves it with the GET route).
 * Mounted after the path's routes, so only a request whose method none of them serves gets
 * here; `notFoundHandler` then answers it 405 rather than 404. Several patterns can match one
 * path (`/v1/users/me`, `/v1/users/{userId}`): their methods add up.
 */
export function allowMethods(methods: string[]) {
  const upper = methods.map((method) => method.toUpperCase());
  const allowed = upper.includes("GET") ? [...upper, "HEAD"] : upper;
  return (req: Request, _res: Response, next: NextFunction) => {
    req.allowedMethods ??= new Set();
    for (const method of allowed) req.allowedMethods.add(method);
    next();
  };
}

/** Requests no route served answer with the envelope, never Express's HTML page: 405 on a known path, else 404. */
export function notFoundHandler(req: Request, res: Response) {
  if (req.allowedMethods) {
    const allow = METHOD_ORDER.filter((method) => req.allowedMethods!.has(method)).join(", ");
    res.setHeader("Allow", allow);
    res.status(405).json(errorBody(req, "METHOD_NOT_ALLOWED", `${req.method} ${req.path} is not allowed; allowed: ${allow}`));
    return;
  }
  res.status(404).json(errorBody(req, "NOT_FOUND", `No route for ${req.method} ${req.path}`));
}

interface BodyParserError extends Error {
  type?: string;
  status?: number;
  code?: string;
}

/**
 * The request's body stream broke before it was read whole: the client went away, or Node's
 * parser refused the rest of the body (a malformed chunk; the `clientError` listener in
 * server.ts has then already answered and closed the connection). The client's doing,
 * never a 500.
 */
function bodyStreamBroke(error: BodyParserError | undefined, req: Request): boolean {
  if (error?.type === "request.aborted" || error?.type === "request.size.invalid") return true;
  // raw-body's other outcomes of a destroyed request: it was no longer readable, or it errored.
  return req.destroyed && (error?.type === "stream.not.readable" || error?.code === "ECONNRESET" || error?.code === "ECONNABORTED");
}

/** The one place errors become responses. Nothing internal (stack, SQL, RPC text) leaves the server. */
export function errorHandler(logger: Logger) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (res.headersSent) return;
    if (error instanceof AppError) {
      if (error.retryAfterSeconds !== undefined) res.setHeader("Retry-After", String(error.retryAfterSeconds));
      res.status(ERROR_STATUS[error.code]).json(errorBody(req, error.code, error.message, error.details));
      return;
    }
    const parserError = error as BodyParserError;
    if (bodyStreamBroke(parserError, req)) {
      res.status(400);
      // Nobody is left to read an answer when the connection is gone; the status is for the log line.
      if (req.socket?.writable && !res.destroyed) {
        res.json(errorBody(req, "VALIDATION_ERROR", "Request body ended before it was complete", { field: "body", reason: "incomplete" }));
      }
      return;
    }
    switch (parserError?.type) {
      case "entity.parse.failed":
        res.status(400).json(errorBody(req, "VALIDATION_ERROR", "Malformed JSON body", { field: "body", reason: "invalid JSON" }));
        return;
      case "entity.too.large":
        res.status(413).json(errorBody(req, "PAYLOAD_TOO_LARGE", "Request body is too large"));
        return;
      case "encoding.unsupported":
      case "charset.unsupported":
        res.status(415).json(errorBody(req, "UNSUPPORTED_MEDIA_TYPE", "Unsupported body encoding"));
        return;
    }
    logger.error({ err: error, requestId: req.context?.requestId, method: req.method, path: req.path }, "unhandled error");
    res.status(500).json(errorBody(req, "INTERNAL_ERROR", `Internal error (request ${req.context?.requestId ?? "unknown"})`));
  };
}
