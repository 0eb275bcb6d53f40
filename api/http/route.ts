import { type NextFunction, type Request, type Response, Router } from "express";
import type { z } from "zod";
import { type OperationKey, serviceKey } from "../../domain/idempotency/operation-key.js";
import { PERMIT_SIGNATURE_HEADER, PreparedForSignature, WALLET_SIGNATURE_HEADER } from "../../domain/transactions/wallet-signatures.js";
import type { Principal } from "./auth.js";
import { envelopeText, errorBody, sendText } from "./envelope.js";
import { allowMethods } from "./error-handler.js";
import { AppError, ERROR_STATUS, type ErrorCode, type ErrorDetails } from "./errors.js";
import { type IdempotencyStore, idempotencyKeyOf, requestHashOf, runIdempotent } from "./idempotency.js";
import { assertFitInput } from "./input.js";
import { refuseOverLimit } from "./rate-limit.js";
import { preparedWriteData, preparedWriteResponse, SIGNED_WRITE_ERRORS, walletAuthorizationOf } from "./wallet-signature.js";

// One route definition drives everything about an endpoint: the Express route, the
// validation of params, query and body (VALIDATION_ERROR with details.field and
// details.reason), the handler's types, the response shape (response schemas strip any
// field they do not name, so a secret cannot leak by accident) and the OpenAPI operation.

export type HttpMethod = "get" | "post" | "put" | "patch" | "delete";

/**
 * - `none`: no credentials needed (credentials sent anyway are ignored).
 * - `user`: a bearer token or an API key of a Pro/Enterprise user.
 * - `token`: a bearer token only (account-management routes an API key may not call).
 */
export type AuthMode = "none" | "user" | "token";

type AnySchema = z.ZodType;
type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface HandlerContext<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  req: Request;
  res: Response;
  /** The authenticated caller; throws UNAUTHORIZED on routes without authentication. */
  principal(): Principal;
  /**
   * What this write is known by down to its transactions: the client's Idempotency-Key, or a key
   * made for this request alone when it sent none (domain/idempotency/operation-key.ts).
   */
  operation: OperationKey;
}

export interface Pagination {
  total: number;
  limit: number;
  offset: number;
  hasMore: boolean;
}

export type HandlerResult<R> =
  | {
      data: R;
      message?: string;
      pagination?: Pagination;
      /** Top-level fields beside `data` (GET /notifications' unreadCount), as the route's `envelopeExtra` names them. */
      extra?: Record<string, unknown>;
      status?: number;
    }
  /** An envelope without `data` (DELETE /users/me): `message` plus top-level fields. */
  | { data?: undefined; message: string; extra: Record<string, unknown>; status?: number }
  /** Bare JSON without the envelope (JWKS), as a contract fixes it. */
  | { raw: unknown }
  /** The handler wrote the answer itself (a Server-Sent Events stream): nothing more is sent. */
  | { streamed: true };

export interface RouteSpec<
  P extends AnySchema | undefined = AnySchema | undefined,
  Q extends AnySchema | undefined = AnySchema | undefined,
  B extends AnySchema | undefined = AnySchema | undefined,
  R extends AnySchema | undefined = AnySchema | undefined,
> {
  method: HttpMethod;
  /** OpenAPI form: `/v1/users/{userId}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  /** The OpenAPI tag: its domain's (routesOf). */
  tag: string;
  auth: AuthMode;
  params?: P;
  query?: Q;
  body?: B;
  /** Schema of `data` (or of the bare JSON when `bare`). */
  response?: R;
  /** Success status (default 200). */
  status?: number;
  /** Answer without the envelope (the JWKS). */
  bare?: boolean;
  /** The answer is a stream of this media type (text/event-stream), written by the handler. */
  streams?: string;
  /**
   * Top-level envelope fields other than data: beside `data` when the route has a `response`
   * (GET /notifications' unreadCount), else with a `message` and no data (DELETE /users/me's
   * deletionDate; an empty object for a message alone).
   */
  envelopeExtra?: AnySchema;
  paginated?: boolean;
  /**
   * Whether the route takes an optional `Idempotency-Key` header: with one, the first answer is
   * kept per (user, key) for 24 hours and replayed to retries (api/http/idempotency.ts). Every
   * write does (the default for every method but GET); false only where a replay would hand one
   * caller's answer to another (the sandbox's anonymous token issuer).
   */
  idempotent?: boolean;
  /**
   * The conditions service-spec part 7 names a code for (INVALID_URL, VAULT_LOCKED, ...), judged
   * when the request fails its schemas: a request that breaks one answers that code rather than
   * VALIDATION_ERROR, whatever else is wrong with it. Given what was sent, unparsed (read
   * defensively: any type may come); throws the area's AppError, or returns and VALIDATION_ERROR
   * answers. Requests that pass their schemas meet the same conditions in the domain, in the same
   * order, so valid requests pay nothing for it.
   */
  areaRules?(request: { params: unknown; body: unknown; principal(): Principal }): Promise<void>;
  /** Error codes this route may answer besides the platform's (validation, auth, rate limit, internal). */
  errors?: ErrorCode[];
  /**
   * A write sent as the caller's own transaction (D-119): a wallet the caller holds signs it. The
   * route takes the Wallet-Signature headers, and gets a twin at `<path>/prepare` that answers
   * what to sign (routesOf).
   */
  signable?: boolean;
  handler(context: HandlerContext<Out<P>, Out<Q>, Out<B>>): Promise<HandlerResult<R extends z.ZodType ? z.input<R> : undefined>>;
}

/** A route as its domain's routes file defines it: its OpenAPI tag is its domain's (`routesOf`). */
export type RouteDefinition = Omit<RouteSpec, "tag">;

/** Identity function that keeps the schemas' types flowing into the handler. */
export function defineRoute<
  P extends AnySchema | undefined = undefined,
  Q extends AnySchema | undefined = undefined,
  B extends AnySchema | undefined = undefined,
  R extends AnySchema | undefined = undefined,
>(spec: Omit<RouteSpec<P, Q, B, R>, "tag">): RouteDefinition {
  return spec as unknown as RouteDefinition;
}

/**
 * A domain's routes, under the OpenAPI tag its manifest declares (domain/<name>/module.ts); a
 * signable write followed by its prepare call.
 */
export function routesOf(module: { readonly routeTag: string }, routes: RouteDefinition[]): RouteSpec[] {
  return routes.flatMap((definition) => {
    const route = { ...definition, tag: module.routeTag };
    return route.signable ? [route, preparing(route)] : [route];
  });
}

/**
 * The prepare call of a signable write (D-119): the same path with /prepare, the same
 * parameters, body and checks, answering what the caller's own wallet signs instead of sending.
 */
function preparing(route: RouteSpec): RouteSpec {
  const name = route.operationId;
  return {
    ...route,
    method: "post",
    path: `${route.path}/prepare`,
    operationId: `prepare${name.charAt(0).toUpperCase()}${name.slice(1)}`,
    summary: `Prepare for your wallet's signature: ${route.summary.charAt(0).toLowerCase()}${route.summary.slice(1)}`,
    description: `For an account whose wallet is its own (custody "self", signed in with Ethereum): takes exactly what ${route.method.toUpperCase()} ${route.path} takes, checks it the same way, and answers the EIP-712 typed data to sign, nothing sent. Sign \`request\` (and \`permit\` when there is one) with the wallet, then send ${route.method.toUpperCase()} ${route.path} with the same values and the signatures in the ${WALLET_SIGNATURE_HEADER} (and ${PERMIT_SIGNATURE_HEADER}) header: the service relays it and pays the gas. A managed wallet's account is answered CONFLICT.`,
    response: preparedWriteResponse,
    status: 200,
    idempotent: false,
    signable: false,
    errors: [...new Set([...(route.errors ?? []), "CONFLICT" as const])],
    async handler(context) {
      try {
        await route.handler({ ...context, operation: { ...context.operation, wallet: { prepare: true } } });
      } catch (error) {
        if (error instanceof PreparedForSignature) return { data: preparedWriteData(error.prepared) };
        throw error;
      }
      throw new Error(`${name} answered without reaching its transaction: nothing to sign`);
    },
  };
}

function validationError(location: string, error: z.ZodError): AppError {
  const issue = error.issues[0]!;
  const keys = (issue as { keys?: string[] }).keys;
  const path = issue.path.map(String);
  if (issue.code === "unrecognized_keys" && keys?.length) path.push(keys[0]!);
  const field = path.length > 0 ? path.join(".") : location;
  const reason = issue.code === "unrecognized_keys" ? "unknown field" : issue.message;
  const details: ErrorDetails = { field, reason };
  return new AppError("VALIDATION_ERROR", `Invalid ${location}: ${field}: ${reason}`, details);
}

function parse(schema: AnySchema | undefined, value: unknown, location: string): unknown {
  // Checked even where no schema reads the value: nothing unfit reaches a handler or the log.
  assertFitInput(value, location);
  if (!schema) return undefined;
  const result = schema.safeParse(value);
  if (!result.success) throw validationError(location, result.error);
  return result.data;
}

/** The request's params, query and body through their schemas; on a refusal, the route's area rules first. */
async function parseRequest(route: RouteSpec, req: Request) {
  try {
    return {
      params: parse(route.params, req.params, "path parameter"),
      query: parse(route.query, req.query, "query parameter"),
      // A route with a body schema treats a missing body as an empty object, so a
      // missing required field is named like any other.
      body: parse(route.body, req.body ?? {}, "body"),
    };
  } catch (error) {
    if (route.areaRules && error instanceof AppError && error.code === "VALIDATION_ERROR") {
      await route.areaRules({ params: req.params, body: req.body ?? {}, principal: () => principalOf(req) });
    }
    throw error;
  }
}

function principalOf(req: Request): Principal {
  if (!req.auth) throw new AppError("UNAUTHORIZED", "Authorization header required");
  return req.auth;
}

/** Every write takes an Idempotency-Key unless its definition says otherwise. */
export const acceptsIdempotencyKey = (route: Pick<RouteSpec, "method" | "idempotent">) => route.idempotent ?? route.method !== "get";

export function toExpressPath(path: string): string {
  return path.replace(/\{([A-Za-z0-9_]+)\}/g, ":$1");
}

/** Authentication gate of one route; `req.auth` was set by the identify middleware. */
function authGate(mode: AuthMode, req: Request): void {
  if (mode === "none") {
    // Over the anonymous limit with an unusable credential: the limiter left the refusal to
    // the route, as one that needs authentication answers the credential's 401 instead.
    const refusal = refuseOverLimit(req);
    if (refusal) throw refusal;
    return;
  }
  if (req.authError) throw req.authError;
  if (!req.auth) throw new AppError("UNAUTHORIZED", "Authorization header required");
  if (mode === "token" && req.auth.via !== "token") {
    throw new AppError("FORBIDDEN", "This operation needs a bearer token; API keys may not call it");
  }
}

/** Runs a route's handler and builds its answer (status and text), without writing it. */
type Input = { params: unknown; query: unknown; body: unknown; operation: OperationKey };

async function answer(route: RouteSpec, req: Request, res: Response, input: Input) {
  const result = await route.handler({
    ...input,
    req,
    res,
    principal: () => principalOf(req),
  });
  if ("streamed" in result) return null;
  if ("raw" in result) return { status: route.status ?? 200, body: JSON.stringify(result.raw) };
  const status = result.status ?? route.status ?? 200;
  // Like data, top-level fields are what the route's schema names, nothing more.
  const extra = result.extra && (route.envelopeExtra ? (route.envelopeExtra.parse(result.extra) as Record<string, unknown>) : result.extra);
  if (result.data === undefined) {
    return { status, body: envelopeText(req, undefined, { message: result.message, extra }) };
  }
  const data = route.response ? route.response.parse(result.data) : result.data;
  return { status, body: envelopeText(req, data, { message: result.message, pagination: result.pagination, extra }) };
}

const UNKEPT = new Set<ErrorCode>(["IDEMPOTENCY_KEY_REUSED", ...SIGNED_WRITE_ERRORS]);

/** The answer a client error becomes inside an idempotent request, so that it is kept like a success. */
async function answerOrRefusal(route: RouteSpec, req: Request, res: Response, input: Input) {
  try {
    const answered = await answer(route, req, res, input);
    if (!answered) throw new Error(`route ${route.operationId} streamed an answer that an Idempotency-Key would have to keep`);
    return answered;
  } catch (error) {
    // Not this request's to keep, thrown so the key is freed: a key the domain finds used by
    // another request; a wallet's signature refused before anything was sent (a new signature may follow).
    if (error instanceof AppError && ERROR_STATUS[error.code] < 500 && !UNKEPT.has(error.code)) {
      return { status: ERROR_STATUS[error.code], body: JSON.stringify(errorBody(req, error.code, error.message, error.details)) };
    }
    throw error;
  }
}

/** The Idempotency-Key scope of requests without a user (a user id never has this form). */
const ANONYMOUS_SCOPE = "anonymous";

export function mountRoutes(routes: RouteSpec[], deps: { idempotency?: IdempotencyStore } = {}): Router {
  const router = Router();
  for (const route of routes) {
    router[route.method](toExpressPath(route.path), async (req: Request, res: Response, next: NextFunction) => {
      try {
        authGate(route.auth, req);
        const { params, query, body } = await parseRequest(route, req);
        const operationName = `${route.method.toUpperCase()} ${route.path}`;
        const write = acceptsIdempotencyKey(route);
        const key = write ? idempotencyKeyOf(req) : undefined;
        // Reads send nothing: no hash to keep with a transaction, none computed on the hot path.
        const requestHash = write ? requestHashOf(operationName, req.body) : "";
        const wallet = route.signable ? walletAuthorizationOf(req) : undefined;
        if (key !== undefined) {
          // Requests refused by validation or authentication above are not kept (nothing ran).
          if (!deps.idempotency) throw new Error(`route ${route.operationId} takes keys but no idempotency store is mounted`);
          // Keys are per user; routes without authentication (the sandbox's) share one scope.
          const scope = req.auth?.user.id ?? (route.auth === "none" ? ANONYMOUS_SCOPE : undefined);
          if (!scope) throw new AppError("UNAUTHORIZED", "Authorization header required");
          const result = await runIdempotent(
            deps.idempotency,
            { userId: scope, key, operation: operationName, requestHash, now: () => req.context.clock.now() },
            () => answerOrRefusal(route, req, res, { params, query, body, operation: { idempotencyKey: key, requestHash, wallet } }),
          );
          if (result.replayed) res.setHeader("Idempotent-Replayed", "true");
          sendText(res, result.status, result.body);
          return;
        }
        const result = await answer(route, req, res, {
          params,
          query,
          body,
          operation: { idempotencyKey: serviceKey(), requestHash, wallet },
        });
        if (result) sendText(res, result.status, result.body);
      } catch (error) {
        next(error);
      }
    });
  }
  // After every route: a known path asked with a method none of its routes serves is answered
  // 405 with the path's methods (notFoundHandler), not 404 as an unknown path is.
  for (const [path, sharing] of Map.groupBy(routes, (route) => route.path)) {
    router.all(toExpressPath(path), allowMethods(sharing.map((route) => route.method)));
  }
  return router;
}
