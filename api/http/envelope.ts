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
export function sendData(
  req: Request,
  res: Response,
  data: unknown,
  options: { status?: number; message?: string; pagination?: Pagination; extra?: Record<string, unknown> } = {},
): void {
  const body = JSON.stringify({
    success: true,
    data,
    ...(options.message === undefined ? {} : { message: options.message }),
    ...(options.pagination === undefined ? {} : { pagination: options.pagination }),
    ...options.extra,
    meta: meta(req),
  });
  res.statusCode = options.status ?? 200;
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", Buffer.byteLength(body));
  res.end(body);
}

export function errorBody(req: Request, code: string, message: string, details?: ErrorDetails) {
  return {
    success: false,
    error: { code, message, ...(details ? { details } : {}) },
    meta: meta(req),
  };
}
