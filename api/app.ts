import express, { type NextFunction, type Request, type Response } from "express";
import { pinoHttp } from "pino-http";
import type { Clock } from "../core/clock.js";
import type { Logger } from "../core/logger.js";
import { type HealthDeps, healthRoutes } from "./health/routes.js";
import { requestContext } from "./http/context.js";
import { errorBody } from "./http/envelope.js";
import { errorHandler, notFoundHandler } from "./http/error-handler.js";

export interface AppDeps extends HealthDeps {
  logger: Logger;
  clock: Clock;
}

const BODY_LIMIT = "100kb";

/** Bodies are JSON only: anything else with a body is refused before a route sees it. */
function requireJsonBody(req: Request, res: Response, next: NextFunction) {
  const hasBody = Number(req.header("content-length") ?? 0) > 0 || req.header("transfer-encoding") !== undefined;
  if (hasBody && !req.is("application/json")) {
    res.status(415).json(errorBody(req, "UNSUPPORTED_MEDIA_TYPE", "Request bodies must be application/json"));
    return;
  }
  next();
}

export function createApp(deps: AppDeps): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", "loopback");
  app.use(requestContext(deps.clock));
  app.use(
    pinoHttp({
      logger: deps.logger,
      genReqId: (req) => (req as Request).context.requestId,
      customLogLevel: (_req, res, error) => (error || res.statusCode >= 500 ? "error" : res.statusCode >= 400 ? "warn" : "debug"),
      // Request lines carry method, path, status and timing; never headers or bodies.
      serializers: {
        req: (req) => ({ id: req.id, method: req.method, url: String(req.url).split("?")[0] }),
        res: (res) => ({ statusCode: res.statusCode }),
      },
    }),
  );
  app.use(requireJsonBody);
  app.use(express.json({ limit: BODY_LIMIT, strict: true }));

  app.use(healthRoutes(deps));

  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger));
  return app;
}
