import type { JsonRpcProvider } from "ethers";
import express, { type NextFunction, type Request, type Response } from "express";
import type { Redis } from "ioredis";
import type { Clock } from "../core/clock.js";
import type { Config } from "../core/config.js";
import type { Logger } from "../core/logger.js";
import { createTokenIssuer } from "../core/token-issuer.js";
import { ROUTE_TAGS } from "../domain/modules.js";
import type { Services } from "../domain/services.js";
import { apiKeyRoutes } from "./api-keys/routes.js";
import { checkoutRoutes } from "./checkout/routes.js";
import { createCheckoutSignIn } from "./checkout/sign-in.js";
import { createDevIdentityProvider } from "./dev/identity-provider.js";
import { devRoutes } from "./dev/routes.js";
import { docsRoutes, openApiRoute } from "./docs/routes.js";
import { type HealthDeps, healthRoutes } from "./health/routes.js";
import { createTokenVerifier, identify, refuseQueryCredentials } from "./http/auth.js";
import { translateInputErrors } from "./http/bad-input.js";
import { requestContext } from "./http/context.js";
import { apiCors } from "./http/cors.js";
import { errorBody } from "./http/envelope.js";
import { allowMethods, errorHandler, notFoundHandler } from "./http/error-handler.js";
import { buildOpenApiDocument } from "./http/openapi.js";
import { createRateLimiter, refuseOverLimit } from "./http/rate-limit.js";
import { requestLog } from "./http/request-log.js";
import { mountRoutes, type RouteSpec } from "./http/route.js";
import { loanRoutes } from "./loans/routes.js";
import { notificationRoutes } from "./notifications/routes.js";
import { paymentRoutes } from "./payments/routes.js";
import { siweRoutes } from "./siwe/routes.js";
import { socialVaultRoutes } from "./social-vault/routes.js";
import { trustScoreRoutes } from "./trust-score/routes.js";
import { userRoutes } from "./users/routes.js";
import { vaultRoutes } from "./vault/routes.js";
import { webhookRoutes } from "./webhooks/routes.js";
import { webhookEvent, webhookTestEvent } from "./webhooks/schemas.js";

export interface AppDeps extends HealthDeps {
  logger: Logger;
  clock: Clock;
  chain: { provider: Pick<JsonRpcProvider, "getBlockNumber" | "send">; chainId: number };
  config: Pick<Config, "auth" | "dataDir" | "isProduction" | "trustProxy" | "corsOrigins" | "checkout" | "publicBaseUrl">;
  /** The domain services (domain/services.ts), built once per process. */
  services: Pick<
    Services,
    | "users"
    | "apiKeys"
    | "xp"
    | "trust"
    | "idempotency"
    | "sandbox"
    | "vault"
    | "payer"
    | "loans"
    | "fundsLoans"
    | "socialVault"
    | "notifications"
    | "notificationFeed"
    | "webhooks"
    | "webhookDeliveries"
    | "payments"
    | "checkout"
    | "checkoutSignIns"
    | "siwe"
  >;
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

/**
 * A request whose body never fully arrived (the client went away while it was being read, and
 * body-parser skipped it) never reaches a route: it would run with an empty body.
 */
function requireCompleteBody(req: Request, res: Response, next: NextFunction) {
  const hasBody = Number(req.header("content-length") ?? 0) > 0 || req.header("transfer-encoding") !== undefined;
  if (hasBody && (!req.complete || req.body === undefined)) {
    if (!res.headersSent && req.socket.writable) {
      res
        .status(400)
        .json(errorBody(req, "VALIDATION_ERROR", "The request body did not arrive whole", { field: "body", reason: "incomplete" }));
    }
    return;
  }
  next();
}

function apiHeaders(_req: Request, res: Response, next: NextFunction) {
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.setHeader("Cache-Control", "no-store");
  next();
}

/** The HTTP API over the domain services: routes, middleware, the OpenAPI document. */
export async function createApp(deps: AppDeps): Promise<express.Express> {
  const { logger, clock, config } = deps;

  const { users, apiKeys, xp, trust } = deps.services;

  // Sign-In with Ethereum's access tokens: the service's own issuer, trusted beside the provider.
  const ownTokens =
    deps.services.siwe &&
    (await createTokenIssuer({
      db: deps.db,
      keyName: "siwe-signing-key",
      issuer: `${config.publicBaseUrl}/v1/auth`,
      audience: config.auth.audience,
      clock,
    }));

  // One registry of route definitions: mounted, validated and documented the same way.
  // Later domains (loans, vault, ...) add their `xxxRoutes(deps)` here.
  const routes: RouteSpec[] = [...userRoutes({ users, xp }), ...trustScoreRoutes({ trust }), ...apiKeyRoutes({ apiKeys })];
  routes.push(...loanRoutes({ loans: deps.services.loans }));
  routes.push(
    ...notificationRoutes({
      notifications: deps.services.notifications,
      feed: deps.services.notificationFeed,
      production: config.isProduction,
    }),
  );
  routes.push(...webhookRoutes({ webhooks: deps.services.webhooks, deliveries: deps.services.webhookDeliveries }));
  if (deps.services.vault) routes.push(...vaultRoutes({ vault: deps.services.vault }));
  if (deps.services.siwe && ownTokens) routes.push(...siweRoutes({ siwe: deps.services.siwe, tokens: ownTokens, users }));
  if (deps.services.socialVault) routes.push(...socialVaultRoutes({ socialVault: deps.services.socialVault }));
  if (deps.services.payments && deps.services.checkout) {
    routes.push(...paymentRoutes({ payments: deps.services.payments, checkout: deps.services.checkout }));
  }
  if (config.auth.devProvider) {
    const identity = await createDevIdentityProvider({
      db: deps.db,
      dataDir: config.dataDir,
      issuer: config.auth.devIssuer,
      audience: config.auth.audience,
      clock,
    });
    const loans = deps.services.fundsLoans ? deps.services.loans : undefined;
    routes.push(...devRoutes({ identity, clock, chain: deps.chain, users, sandbox: deps.services.sandbox, loans }));
  }
  let document: unknown;
  routes.push(
    openApiRoute(() => {
      document ??= buildOpenApiDocument(
        routes,
        {
          title: "TrustMint API",
          version: "1.0.0",
          description:
            "USDC lending and savings. Every answer is a JSON envelope: `success`, then `data` (with `pagination` for lists) or `error` {code, message, details?}, and `meta` {timestamp, requestId}. Every write takes an optional `Idempotency-Key` for safe retries.",
        },
        { WebhookEvent: webhookEvent, WebhookTestEvent: webhookTestEvent },
        ROUTE_TAGS,
      );
      return document;
    }),
  );

  const app = express();
  app.disable("x-powered-by");
  // Every API answer is no-store: an ETag would be hashed for nothing.
  app.set("etag", false);
  app.set("trust proxy", config.trustProxy);
  app.set("query parser", "simple");
  app.use(requestContext(clock));
  app.use(requestLog(logger));
  // Before the credentials and the rate limit: a preflight carries neither, and a refusal must be readable.
  app.use("/v1", apiCors(config.corsOrigins));
  // The checkout's JSON calls take bearer tokens like /v1 (the SDK's payments.pay and terms); its pages stay same-origin.
  app.use(["/checkout/:paymentId/pay", "/checkout/:paymentId/terms"], apiCors(config.corsOrigins));

  app.use(healthRoutes({ ...deps, payer: deps.services.payer }));
  app.use(apiHeaders);
  app.use(
    identify({
      verifyToken: createTokenVerifier({ ...config.auth, clock, own: ownTokens && { issuer: ownTokens.issuer, jwks: ownTokens.jwks() } }),
      userForToken: (claims) => users.userForToken(claims),
      userForApiKey: (key) => apiKeys.userForApiKey(key),
      logger,
    }),
  );
  // The anonymous sandbox (absent in production) is not limited: the API fetches its own JWKS
  // there, where a throttled key set would turn valid tokens into 401s, and test suites issue
  // many tokens and move the clock often. The faucet, a user's, counts like their other calls.
  const unlimitedPaths = routes.filter((route) => route.path.startsWith("/dev/") && route.auth === "none").map((route) => route.path);
  app.use(createRateLimiter({ clock, redis: deps.redis, logger, unlimitedPaths }));
  app.use(refuseQueryCredentials);
  app.use(requireJsonBody);
  app.use(express.json({ limit: BODY_LIMIT, strict: true }));
  app.use(requireCompleteBody);

  // The docs are no route definitions: what mountRoutes does for those (the anonymous limit's
  // refusal left to the route, 405 for another method) is done here.
  app.use("/docs", (req, _res, next) => next(refuseOverLimit(req)));
  app.use(docsRoutes());
  if (deps.services.checkout) {
    const { oidcClientId, oidcClientSecret, oidcIssuer } = config.checkout;
    const signIn = oidcClientId
      ? createCheckoutSignIn({
          config: {
            issuer: oidcIssuer,
            clientId: oidcClientId,
            clientSecret: oidcClientSecret,
            audience: config.auth.audience,
            publicBaseUrl: config.publicBaseUrl,
          },
          repo: deps.services.checkoutSignIns,
          clock,
          logger,
        })
      : undefined;
    const wallet = Boolean(deps.services.siwe && ownTokens);
    app.use(checkoutRoutes({ checkout: deps.services.checkout, sandbox: config.auth.devProvider, signIn, wallet }));
  }
  app.all(["/docs", "/docs/init.js"], allowMethods(["get"]));
  app.use(mountRoutes(routes, { idempotency: deps.services.idempotency }));

  app.use(notFoundHandler);
  app.use(translateInputErrors);
  app.use(errorHandler(logger));
  return app;
}
