import type { Request, Response } from "express";
import type { ErrorDetails } from "./errors.js";

export interface Pagination {
  total: number;
  limit: number;
  offset: number;
  hasMore: boolean;
}

export function meta(req: Request) {
  return { timestamp: req.context.clock.now().toISOString(), requestId: req.context.requestId };
}

/**
 * Sends `{ success: true, data, ...extra, meta }`. Written straight to the socket rather than
 * through `res.json`: API answers are `no-store`, so Express's ETag hashing and freshness check
 * would be work for nothing on every read (see bench:api).
 */
export function envelopeText(
  req: Request,
  data: unknown,
  options: { message?: string; pagination?: Pagination; extra?: Record<string, unknown> } = {},
): string {
  return JSON.stringify({
    success: true,
    data,
    ...(options.message === undefined ? {} : { message: options.message }),
    ...(options.pagination === undefined ? {} : { pagination: options.pagination }),
    ...options.extra,
    meta: meta(req),
  });
}

/** Writes a JSON answer whose text is already built (an envelope, or a kept answer replayed). */
export function sendText(res: Response, status: number, body: string): void {
  res.statusCode = status;
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", Buffer.byteLength(body));
  res.end(body);
}

export function sendData(
  req: Request,
  res: Response,
  data: unknown,
  options: { status?: number; message?: string; pagination?: Pagination; extra?: Record<string, unknown> } = {},
): void {
  sendText(res, options.status ?? 200, envelopeText(req, data, options));
}

export function errorBody(req: Request, code: string, message: string, details?: ErrorDetails) {
  return {
    success: false,
    error: { code, message, ...(details ? { details } : {}) },
    meta: meta(req),
  };
}
