import type { NextFunction, Request, Response } from "express";
import type { Logger } from "../../core/logger.js";

/**
 * One log line per request: method, path (query string cut off), status and timing; never
 * headers or bodies. The level says whether an operator must act: 5xx at error (the service
 * failed), 503 at warn (a known state: a paused vault, the chain away); everything else at debug, 4xx (401, 404, 429 included) and requests the client
 * abandoned alike, since a client decides how many of those there are and a warning per
 * request would let it flood the log. Nothing is built for a line the logger's level would
 * drop, so at the usual `info` level a request that did not fail costs one listener and one
 * `performance.now()`. (pino-http built a child logger and serializer objects for every
 * request, whatever the level.)
 */
export function requestLog(logger: Pick<Logger, "isLevelEnabled" | "debug" | "warn" | "error">) {
  if (!logger.isLevelEnabled("error")) return (_req: Request, _res: Response, next: NextFunction) => next();
  return (req: Request, res: Response, next: NextFunction) => {
    const start = performance.now();
    res.once("close", () => {
      const statusCode = res.statusCode;
      const aborted = !res.writableFinished;
      // 503 is a known state (paused vault, chain or indexer away, transaction still pending), not a failure of the code.
      const level = statusCode === 503 ? "warn" : statusCode >= 500 ? "error" : "debug";
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
