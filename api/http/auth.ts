import { createHash } from "node:crypto";
import type { NextFunction, Request, Response } from "express";
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  type JSONWebKeySet,
  type JWTPayload,
  errors as joseErrors,
  jwtVerify,
} from "jose";
import type { Clock } from "../../core/clock.js";
import type { Logger } from "../../core/logger.js";
import { hasControlCharacters } from "../../core/text.js";
import { createTtlCache } from "../../core/ttl-cache.js";
import type { UserRecord } from "../../domain/users/repo.js";
import { OWN_WALLET_SUBJECT } from "../../domain/users/service.js";
import { AppError } from "./errors.js";
import { logThrottle } from "./log-throttle.js";

/** Who is calling: a user, through a bearer token or one of their API keys. */
export interface Principal {
  via: "token" | "apiKey";
  user: UserRecord;
  apiKeyId?: string;
  /** When the bearer token expires (its `exp`); a long-lived answer (a stream) ends then. */
  tokenExpiresAt?: Date;
}

declare global {
  namespace Express {
    interface Request {
      auth?: Principal;
      /** Credentials were sent but are unusable; routes that need authentication answer with it. */
      authError?: AppError;
    }
  }
}

/**
 * Asymmetric algorithms only: with an allowlist, a token signed with HS256 using the
 * provider's public key as the HMAC secret, or an unsigned `alg: none` token, never verifies.
 */
export const TOKEN_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];

/** Seconds of disagreement between our clock and the provider's that exp/nbf tolerate. */
const CLOCK_TOLERANCE_S = 5;

export const MESSAGES = {
  missing: "Authorization header required",
  invalid: "Invalid or expired token",
} as const;

export interface TokenVerifierOptions {
  jwksUrl: string;
  issuer: string;
  audience: string;
  clock: Pick<Clock, "now">;
  /** Minimum time between two JWKS fetches (default 30 s; tests shorten it). */
  jwksCooldownMs?: number;
  /** Verified tokens remembered (default 10,000; 0 turns the cache off). */
  cacheSize?: number;
  /** The service's own issuer (Sign-In with Ethereum's tokens) and its keys, trusted beside the provider. */
  own?: { issuer: string; jwks: JSONWebKeySet };
}

/** A token's `iss`, unverified: which key set to verify it with. */
function issuerOf(token: string): unknown {
  try {
    return decodeJwt(token).iss;
  } catch {
    return undefined;
  }
}

/**
 * How long a verified token is trusted without checking its signature again. A signature
 * check is the costliest step of an authenticated request; a client sends the same token
 * for up to an hour. Expiry is still judged on every request (the deadline is min(exp, this)).
 */
export const VERIFIED_TOKEN_TTL_MS = 5 * 60_000;

export type VerifyToken = (token: string) => Promise<JWTPayload & { sub: string }>;

/**
 * Verifies bearer JWTs against the provider's JWKS. jose caches the key set (10 min) and
 * refetches it when a token names an unknown `kid` (at most every 30 s), so a rotation at
 * the provider is picked up without a restart. exp/nbf are judged on the service clock.
 */
// No control characters (U+0000 included) and well-formed Unicode.
const PLAIN_SUBJECT = (sub: string) => !hasControlCharacters(sub) && sub.isWellFormed();

export function createTokenVerifier(options: TokenVerifierOptions): VerifyToken {
  const jwks = createRemoteJWKSet(new URL(options.jwksUrl), {
    cacheMaxAge: 10 * 60_000,
    cooldownDuration: options.jwksCooldownMs ?? 30_000,
    timeoutDuration: 5_000,
  });
  const own = options.own && { issuer: options.own.issuer, keys: createLocalJWKSet(options.own.jwks) };
  const verify: VerifyToken = async (token) => {
    const ours = own !== undefined && issuerOf(token) === own.issuer;
    const { payload } = await jwtVerify(token, ours ? own.keys : jwks, {
      issuer: ours ? own.issuer : options.issuer,
      audience: options.audience,
      algorithms: TOKEN_ALGORITHMS,
      clockTolerance: CLOCK_TOLERANCE_S,
      currentDate: options.clock.now(),
      requiredClaims: ["sub", "exp"],
    });
    // The subject keys the user row: it must be storable (no U+0000, no lone surrogate) and plain.
    if (typeof payload.sub !== "string" || payload.sub.length === 0 || payload.sub.length > 255 || !PLAIN_SUBJECT(payload.sub)) {
      throw new joseErrors.JWTClaimValidationFailed('"sub" claim must be a non-empty string', payload, "sub", "check_failed");
    }
    // A wallet's account is the service's own: a provider's token may not name one, and the service names nothing else.
    if (payload.sub.startsWith(OWN_WALLET_SUBJECT) !== ours) {
      throw new joseErrors.JWTClaimValidationFailed('"sub" claim names an account of another issuer', payload, "sub", "check_failed");
    }
    return payload as JWTPayload & { sub: string };
  };
  const cacheSize = options.cacheSize ?? 10_000;
  if (cacheSize === 0) return verify;
  // Keyed by the token's SHA-256 so the cache holds no bearer credentials. Only successes
  // are cached; each entry expires at the token's exp (with the verifier's tolerance) or
  // after VERIFIED_TOKEN_TTL_MS, whichever comes first, on the service clock.
  const verified = createTtlCache<string, JWTPayload & { sub: string }>({
    max: cacheSize,
    ttlMs: VERIFIED_TOKEN_TTL_MS,
    nowMs: () => options.clock.now().getTime(),
  });
  return (token) => {
    const key = createHash("sha256").update(token).digest("base64url");
    const hit = verified.get(key);
    if (hit) return Promise.resolve(hit);
    return verify(token).then((claims) => {
      verified.set(key, claims, ((claims.exp as number) + CLOCK_TOLERANCE_S) * 1000);
      return claims;
    });
  };
}

export interface IdentifyDeps {
  verifyToken: VerifyToken;
  /** JIT provisioning: the user of a verified token, created on first sight. */
  userForToken(claims: JWTPayload & { sub: string }): Promise<UserRecord>;
  /** The owner of an active API key, or null. */
  userForApiKey(key: string): Promise<{ user: UserRecord; apiKeyId: string } | null>;
  logger: Pick<Logger, "warn">;
}

// Credentials in a URL end up in logs, browser history and Referer headers: refused.
const QUERY_CREDENTIALS = new Set(["access_token", "id_token", "token", "jwt", "api_key", "apikey", "key"]);

function usable(user: UserRecord): void {
  if (user.deletedAt) throw new AppError("FORBIDDEN", "This account has been deleted");
}

/**
 * Resolves the caller from `Authorization: Bearer` or `X-API-Key` before rate limiting
 * (limits are per user or key). It never answers by itself: a bad credential is recorded
 * in `req.authError` for the routes that need one.
 */
export function identify(deps: IdentifyDeps) {
  // While the key set is unreachable every token fails, whoever sends it: one line a minute.
  const keySetFailures = logThrottle(60_000);
  return async (req: Request, _res: Response, next: NextFunction) => {
    try {
      const authorization = req.header("authorization");
      const apiKey = req.header("x-api-key");
      if (authorization !== undefined) {
        // The scheme name is case-insensitive (RFC 9110, 11.1).
        const match = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/i.exec(authorization.trim());
        if (!match) {
          req.authError = new AppError("UNAUTHORIZED", MESSAGES.invalid);
        } else {
          let claims: JWTPayload & { sub: string };
          try {
            claims = await deps.verifyToken(match[1]!);
          } catch (error) {
            if (!(error instanceof joseErrors.JOSEError)) {
              const { log, suppressed } = keySetFailures.due();
              if (log) deps.logger.warn({ err: error, suppressed }, "token verification failed (key set unavailable?)");
            }
            req.authError = new AppError("UNAUTHORIZED", MESSAGES.invalid);
            return next();
          }
          const user = await deps.userForToken(claims);
          usable(user);
          req.auth = { via: "token", user, tokenExpiresAt: new Date((claims.exp as number) * 1000) };
        }
      } else if (apiKey !== undefined) {
        const found = await deps.userForApiKey(apiKey);
        if (!found) {
          req.authError = new AppError("UNAUTHORIZED", "Invalid API key");
        } else {
          usable(found.user);
          if (found.user.plan === "free") {
            req.authError = new AppError("FORBIDDEN", "API keys are available on the Pro and Enterprise plans only");
          } else {
            req.auth = { via: "apiKey", user: found.user, apiKeyId: found.apiKeyId };
          }
        }
      }
      next();
    } catch (error) {
      if (error instanceof AppError && error.code === "FORBIDDEN") {
        req.authError = error;
        return next();
      }
      next(error);
    }
  };
}

/** Runs after the rate limiter, so this 401 carries the rate-limit headers like every answer. */
export function refuseQueryCredentials(req: Request, _res: Response, next: NextFunction) {
  for (const name of Object.keys(req.query)) {
    if (QUERY_CREDENTIALS.has(name.toLowerCase())) {
      // Without an Authorization header the spec's message is "Authorization header required" (part 5, item 9).
      const message =
        req.header("authorization") === undefined && req.header("x-api-key") === undefined ? MESSAGES.missing : MESSAGES.invalid;
      return next(new AppError("UNAUTHORIZED", message, { field: name, reason: "credentials are accepted in headers only" }));
    }
  }
  next();
}
