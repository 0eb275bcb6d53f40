import type { JsonRpcProvider } from "ethers";
import express, { type NextFunction, type Request, type Response } from "express";
import type { Redis } from "ioredis";
import { pinoHttp } from "pino-http";
import type { Clock } from "../core/clock.js";
import type { Config } from "../core/config.js";
import type { Logger } from "../core/logger.js";
import { createManagedWallets, loadManagedWalletMnemonic } from "../core/wallets.js";
import { createApiKeysRepo } from "./api-keys/repo.js";
import { apiKeyRoutes } from "./api-keys/routes.js";
import { createApiKeysService } from "./api-keys/service.js";
import { createDevIdentityProvider } from "./dev/identity-provider.js";
import { devRoutes } from "./dev/routes.js";
import { docsRoutes, openApiRoute } from "./docs/routes.js";
import { type HealthDeps, healthRoutes } from "./health/routes.js";
import { createTokenVerifier, identify, refuseQueryCredentials } from "./http/auth.js";
import { requestContext } from "./http/context.js";
import { errorBody } from "./http/envelope.js";
import { errorHandler, notFoundHandler } from "./http/error-handler.js";
import { buildOpenApiDocument } from "./http/openapi.js";
import { createRateLimiter } from "./http/rate-limit.js";
import { mountRoutes, type RouteSpec } from "./http/route.js";
import { createUsersRepo } from "./users/repo.js";
import { userRoutes } from "./users/routes.js";
import { createUsersService } from "./users/service.js";

export interface AppDeps extends HealthDeps {
  logger: Logger;
  clock: Clock;
  chain: { provider: Pick<JsonRpcProvider, "getBlockNumber" | "send">; chainId: number };
  config: Pick<Config, "auth" | "dataDir" | "isProduction" | "managedWalletMnemonic">;
  /** Rate-limit counters shared across API processes (REDIS_URL); in-process otherwise. */
  redis?: Redis;
}

export const BODY_LIMIT = "100kb";

/** Bodies are JSON only: anything else with a body is refused before a route sees it. */
function requireJsonBody(req: Request, res: Response, next: NextFunction) {
  const hasBody = Number(req.header("content-length") ?? 0) > 0 || req.header("transfer-encoding") !== undefined;
  if (hasBody && !req.is("application/json")) {
    res.status(415).json(errorBody(req, "UNSUPPORTED_MEDIA_TYPE", "Request bodies must be application/json"));
    return;
  }
  next();
}

function apiHeaders(_req: Request, res: Response, next: NextFunction) {
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.setHeader("Cache-Control", "no-store");
  next();
}

/** The composition root of the HTTP API: repositories, services, routes, middleware. */
export async function createApp(deps: AppDeps): Promise<express.Express> {
  const { logger, clock, db, config } = deps;

  const wallets = createManagedWallets(
    loadManagedWalletMnemonic({ mnemonic: config.managedWalletMnemonic, dataDir: config.dataDir, isProduction: config.isProduction }),
  );
  const usersRepo = createUsersRepo({ db });
  const apiKeysRepo = createApiKeysRepo({ db });
  const users = createUsersService({ repo: usersRepo, apiKeys: apiKeysRepo, wallets, clock });
  const apiKeys = createApiKeysService({ repo: apiKeysRepo, clock });

  // One registry of route definitions: mounted, validated and documented the same way.
  // Later domains (loans, vault, ...) add their `xxxRoutes(deps)` here.
  const routes: RouteSpec[] = [...userRoutes({ users }), ...apiKeyRoutes({ apiKeys })];
  if (config.auth.devProvider) {
    const identity = await createDevIdentityProvider({
      dataDir: config.dataDir,
      issuer: config.auth.devIssuer,
      audience: config.auth.audience,
      clock,
    });
    routes.push(...devRoutes({ identity, clock, chain: deps.chain, users }));
  }
  let document: unknown;
  routes.push(
    openApiRoute(() => {
      document ??= buildOpenApiDocument(routes, {
        title: "TrustMint API",
        version: "1.0.0",
        description: "USDC lending and savings. Every answer uses the envelope of service-spec part 1.",
      });
      return document;
    }),
  );

  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", "loopback");
  app.set("query parser", "simple");
  app.use(requestContext(clock));
  app.use(
    pinoHttp({
      logger,
      genReqId: (req) => (req as Request).context.requestId,
      customLogLevel: (_req, res, error) => (error || res.statusCode >= 500 ? "error" : res.statusCode >= 400 ? "warn" : "debug"),
      // Request lines carry method, path, status and timing; never headers, bodies or query strings.
      serializers: {
        req: (req) => ({ id: req.id, method: req.method, url: String(req.url).split("?")[0] }),
        res: (res) => ({ statusCode: res.statusCode }),
      },
    }),
  );

  app.use(healthRoutes(deps));
  app.use(apiHeaders);
  app.use(
    identify({
      verifyToken: createTokenVerifier({ ...config.auth, clock }),
      userForToken: (claims) => users.userForToken(claims),
      userForApiKey: (key) => apiKeys.userForApiKey(key),
      logger,
    }),
  );
  app.use(createRateLimiter({ clock, redis: deps.redis, logger }));
  app.use(refuseQueryCredentials);
  app.use(requireJsonBody);
  app.use(express.json({ limit: BODY_LIMIT, strict: true }));

  app.use(docsRoutes());
  app.use(mountRoutes(routes));

  app.use(notFoundHandler);
  app.use(errorHandler(logger));
  return app;
}
