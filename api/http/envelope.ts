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

/** Sends `{ success: true, data, ...extra, meta }`. */
export function sendData(
  req: Request,
  res: Response,
  data: unknown,
  options: { status?: number; message?: string; pagination?: Pagination; extra?: Record<string, unknown> } = {},
): void {
  res.status(options.status ?? 200).json({
    success: true,
    data,
    ...(options.message === undefined ? {} : { message: options.message }),
    ...(options.pagination === undefined ? {} : { pagination: options.pagination }),
    ...options.extra,
    meta: meta(req),
  });
}

export function errorBody(req: Request, code: string, message: string, details?: ErrorDetails) {
  return {
    success: false,
    error: { code, message, ...(details ? { details } : {}) },
    meta: meta(req),
  };
}
