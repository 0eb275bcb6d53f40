import type { NextFunction, Request, Response } from "express";
import { AppError } from "./errors.js";

interface HttpLikeError extends Error {
  status?: number;
  code?: string;
  type?: string;
}

/**
 * Errors raised by Express and body-parser for input the client got wrong, before any route
 * ran, turned into the envelope's codes (they would otherwise fall through to a 500):
 * a path with bad percent-encoding (Express 5 throws a URIError with status 400), a body whose
 * Content-Encoding does not match its bytes (zlib's error, status 400), and other 400s of the
 * body reader. The body-parser types the error handler already knows pass through unchanged.
 */
export function translateInputErrors(error: unknown, _req: Request, _res: Response, next: NextFunction) {
  const e = error as HttpLikeError;
  if (error instanceof URIError) {
    return next(new AppError("VALIDATION_ERROR", "Invalid path: bad percent-encoding", { field: "path", reason: "bad percent-encoding" }));
  }
  if (!(error instanceof AppError) && e?.status === 400 && e.type === undefined) {
    const reason = e.code?.startsWith("Z_") ? "the body does not match its Content-Encoding" : "the body could not be read";
    return next(new AppError("VALIDATION_ERROR", `Invalid body: ${reason}`, { field: "body", reason }));
  }
  next(error);
}
