import { randomUUID } from "node:crypto";
import type { NextFunction, Request, Response } from "express";
import type { Clock } from "../../core/clock.js";

export interface RequestContext {
  requestId: string;
  clock: Clock;
}

declare global {
  namespace Express {
    interface Request {
      context: RequestContext;
    }
  }
}

// An incoming id is kept only when it is short and plain, so it is safe to log and echo.
const WELL_FORMED_ID = /^[A-Za-z0-9._:-]{8,128}$/;

export function requestContext(clock: Clock) {
  return (req: Request, res: Response, next: NextFunction) => {
    const incoming = req.header("x-request-id");
    const requestId = incoming && WELL_FORMED_ID.test(incoming) ? incoming : randomUUID();
    req.context = { requestId, clock };
    res.setHeader("X-Request-Id", requestId);
    next();
  };
}
