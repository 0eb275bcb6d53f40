import type { JsonRpcProvider } from "ethers";
import express, { type NextFunction, type Request, type Response } from "express";
import type { Redis } from "ioredis";
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
import { requestLog } from "./http/request-log.js";
import { mountRoutes, type RouteSpec } from "./http/route.js";
import { chainLoansOf } from "./loans/records.js";
import { guardiansOfOwner } from "./social-vault/guardians.js";
import { trustScoreRoutes } from "./trust-score/routes.js";
import { createTrustScoreService, type TrustScoreService } from "./trust-score/service.js";
import { eraseDueAccounts } from "./users/erase-job.js";
import { createUsersRepo } from "./users/repo.js";
import { userRoutes } from "./users/routes.js";
import { createUsersService } from "./users/service.js";
import { vaultHistoryOf } from "./vault/records.js";
import { createXpService, type XpService } from "./xp/service.js";

export interface AppDeps extends HealthDeps {
  logger: Logger;
  clock: Clock;
  chain: { provider: Pick<JsonRpcProvider, "getBlockNumber" | "send">; chainId: number };
  config: Pick<Config, "auth" | "dataDir" | "isProduction" | "managedWalletMnemonic">;
  /** Rate-limit counters shared across API processes (REDIS_URL); in-process otherwise. */
  redis?: Redis;
}

export const BODY_LIMIT = "100kb";

/** The domain services other parts of this process (indexer handlers, workers, tests) call. */
export interface DomainServices {
  xp: XpService;
  trust: TrustScoreService;
  /** Drops this process's cached row of a user; call after committing a write to it. */
  invalidateUser(userId: string): void;
  /** The erase job (personal data of accounts past their deletion date); returns the ids erased. */
  eraseDueAccounts(now: Date): Promise<string[]>;
}

declare global {
  namespace Express {
    interface Locals {
      services: DomainServices;
    }
  }
}

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
  const usersRepo = createUsersRepo({ db, clock });
  const apiKeysRepo = createApiKeysRepo({ db });
  const users = createUsersService({
    repo: usersRepo,
    apiKeys: apiKeysRepo,
    wallets,
    clock,
    chainRecords: {
      guardiansOf: (wallet, now) => guardiansOfOwner(db.prisma, wallet, now),
      loansOf: (wallet) => chainLoansOf(db.prisma, wallet),
      vaultHistoryOf: (wallet) => vaultHistoryOf(db.prisma, wallet),
    },
  });
  const apiKeys = createApiKeysService({ repo: apiKeysRepo, users: usersRepo, clock });
  const trust = createTrustScoreService({ db, clock, users: usersRepo });
  const xp = createXpService({
    db,
    clock,
    invalidateUser: usersRepo.invalidate,
    // The level bonus of the Trust Score follows the XP level.
    onLevelChange: (tx, userId, reason) => trust.recomputeTrustScore(tx, userId, reason),
  });

  // One registry of route definitions: mounted, validated and documented the same way.
  // Later domains (loans, vault, ...) add their `xxxRoutes(deps)` here.
  const routes: RouteSpec[] = [...userRoutes({ users }), ...trustScoreRoutes({ trust }), ...apiKeyRoutes({ apiKeys })];
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
  app.locals.services = {
    xp,
    trust,
    invalidateUser: usersRepo.invalidate,
    eraseDueAccounts: async (now) => {
      const erased = await eraseDueAccounts(db, now);
      for (const id of erased) usersRepo.invalidate(id);
      return erased;
    },
  };
  app.disable("x-powered-by");
  // Every API answer is no-store: an ETag would be hashed for nothing.
  app.set("etag", false);
  app.set("trust proxy", "loopback");
  app.set("query parser", "simple");
  app.use(requestContext(clock));
  app.use(requestLog(logger));

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
