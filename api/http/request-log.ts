import type { NextFunction, Request, Response } from "express";
import type { Logger } from "../../core/logger.js";

/**
 * One log line per request: method, path (query string cut off), status and timing; never
 * headers or bodies. Successes log at debug, 4xx at warn, 5xx at error. Nothing is built
 * for a line the logger's level would drop, so at the usual `info` level a successful
 * request costs one listener and one `performance.now()`. (pino-http built a child logger
 * and serializer objects for every request, whatever the level.)
 */
export function requestLog(logger: Pick<Logger, "isLevelEnabled" | "debug" | "warn" | "error">) {
  if (!logger.isLevelEnabled("error")) return (_req: Request, _res: Response, next: NextFunction) => next();
  return (req: Request, res: Response, next: NextFunction) => {
    const start = performance.now();
    res.once("close", () => {
      const statusCode = res.statusCode;
      const aborted = !res.writableFinished;
      const level = statusCode >= 500 ? "error" : statusCode >= 400 || aborted ? "warn" : "debug";
      if (!logger.isLevelEnabled(level)) return;
      logger[level](
        {
          req: { id: req.context.requestId, method: req.method, url: req.originalUrl.split("?")[0] },
          res: { statusCode },
          responseTime: Math.round(performance.now() - start),
        },
        aborted ? "request aborted" : "request completed",
      );
    });
    next();
  };
}
