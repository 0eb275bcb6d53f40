import { z } from "zod";
import { PERMIT_SIGNATURE_HEADER, WALLET_SIGNATURE_HEADER } from "../../domain/transactions/wallet-signatures.js";
import { ERROR_STATUS, type ErrorCode } from "./errors.js";
import { QUERY_INTEGERS } from "./input.js";
import { acceptsIdempotencyKey, type RouteSpec } from "./route.js";
import { SIGNED_WRITE_ERRORS } from "./wallet-signature.js";

// The OpenAPI 3.0 document is generated from the same route definitions (and zod schemas)
// that validate requests, so the two cannot disagree.

type JsonSchema = Record<string, unknown>;

/**
 * The JSON Schema of a zod schema. Response shapes named with `.meta({ id })` (part 2's types) go
 * to `components.schemas` once and are referenced by name, so generated clients and the reference
 * show `Notification`, not its fields again; `named` collects them. Request shapes stay inline
 * (what a client sends may differ from what it gets back: defaults, transforms).
 */
function jsonSchema(schema: z.ZodType, io: "input", named?: undefined): JsonSchema;
function jsonSchema(schema: z.ZodType, io: "output", named: NamedSchemas): JsonSchema;
function jsonSchema(schema: z.ZodType, io: "input" | "output", named?: NamedSchemas): JsonSchema {
  const converted = z.toJSONSchema(schema, {
    target: "openapi-3.0",
    io,
    metadata: io === "output" ? z.globalRegistry : WITHOUT_IDS,
    unrepresentable: "any",
    // Query integers are parsed from digit strings, but a client sends integers.
    override: (context) => {
      const integer = QUERY_INTEGERS.get(context.zodSchema as unknown as z.ZodType);
      if (!integer) return;
      for (const key of Object.keys(context.jsonSchema)) delete (context.jsonSchema as JsonSchema)[key];
      Object.assign(context.jsonSchema, integer);
    },
  }) as JsonSchema;
  const {
    $schema: _ignored,
    definitions,
    ...rest
  } = JSON.parse(JSON.stringify(converted).replaceAll('"#/definitions/', '"#/components/schemas/')) as JsonSchema & {
    definitions?: Record<string, JsonSchema>;
  };
  for (const [name, definition] of Object.entries(definitions ?? {})) {
    const known = named?.get(name);
    if (known !== undefined && JSON.stringify(known) !== JSON.stringify(definition)) {
      throw new Error(`two response shapes are named ${name}`);
    }
    named?.set(name, definition);
  }
  return rest;
}

type NamedSchemas = Map<string, JsonSchema>;

/** The global registry's metadata (descriptions) without the names: request shapes inline. */
const WITHOUT_IDS = {
  get(schema: z.ZodType) {
    const { id: _id, ...rest } = z.globalRegistry.get(schema) ?? {};
    return Object.keys(rest).length > 0 ? rest : undefined;
  },
} as unknown as typeof z.globalRegistry;

const RATE_LIMIT_HEADERS = {
  "X-RateLimit-Limit": { $ref: "#/components/headers/X-RateLimit-Limit" },
  "X-RateLimit-Remaining": { $ref: "#/components/headers/X-RateLimit-Remaining" },
  "X-RateLimit-Reset": { $ref: "#/components/headers/X-RateLimit-Reset" },
  "X-Request-Id": { $ref: "#/components/headers/X-Request-Id" },
};

const COMPONENTS = {
  securitySchemes: {
    bearerAuth: { type: "http", scheme: "bearer", bearerFormat: "JWT", description: "Access token of the identity provider (1 hour)." },
    apiKeyAuth: {
      type: "apiKey",
      in: "header",
      name: "X-API-Key",
      description: "Pro and Enterprise plans; create one with POST /v1/api-keys.",
    },
  },
  headers: {
    "X-RateLimit-Limit": {
      description: "Requests allowed in the reported window (the one closest to running out); `unlimited` on the Enterprise plan.",
      schema: { type: "string" },
    },
    "X-RateLimit-Remaining": {
      description: "Requests left in that window; `unlimited` on the Enterprise plan.",
      schema: { type: "string" },
    },
    "X-RateLimit-Reset": { description: "Unix time (seconds) when that window ends.", schema: { type: "integer" } },
    "X-Request-Id": {
      description: "The request id (also meta.requestId); a well-formed incoming one is kept.",
      schema: { type: "string" },
    },
  },
  schemas: {
    Meta: {
      type: "object",
      required: ["timestamp", "requestId"],
      properties: { timestamp: { type: "string", format: "date-time" }, requestId: { type: "string" } },
    },
    Pagination: {
      type: "object",
      required: ["total", "limit", "offset", "hasMore"],
      properties: {
        total: { type: "integer", description: "items the list's filter matches now" },
        limit: { type: "integer" },
        offset: {
          type: "integer",
          description: "where the page starts in the list now; with a cursor, greater than 0 when newer items are ahead of it",
        },
        hasMore: {
          type: "boolean",
          description:
            "whether items go on after the page; with ending_before, whether items go on before it (the direction read, as Stripe's has_more)",
        },
      },
    },
    ErrorEnvelope: {
      type: "object",
      required: ["success", "error"],
      properties: {
        success: { type: "boolean", enum: [false] },
        error: {
          type: "object",
          required: ["code", "message"],
          properties: {
            code: { type: "string", enum: Object.keys(ERROR_STATUS) },
            message: { type: "string" },
            details: {
              type: "object",
              required: ["field", "reason"],
              properties: { field: { type: "string" }, reason: { type: "string" } },
            },
          },
        },
        meta: { $ref: "#/components/schemas/Meta" },
      },
    },
  },
};

function errorResponses(route: RouteSpec): Record<string, unknown> {
  const codes = new Set<ErrorCode>(["RATE_LIMITED", "INTERNAL_ERROR"]);
  if (route.params || route.query || route.body) codes.add("VALIDATION_ERROR");
  if (route.body) {
    codes.add("UNSUPPORTED_MEDIA_TYPE");
    codes.add("PAYLOAD_TOO_LARGE");
  }
  if (route.auth !== "none") {
    codes.add("UNAUTHORIZED");
    codes.add("FORBIDDEN");
  }
  if (acceptsIdempotencyKey(route)) {
    codes.add("IDEMPOTENCY_KEY_REUSED");
    codes.add("IDEMPOTENCY_IN_PROGRESS");
  }
  if (route.signable) for (const code of [...SIGNED_WRITE_ERRORS, "CONFLICT" as const]) codes.add(code);
  for (const code of route.errors ?? []) codes.add(code);
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  const responses: Record<string, unknown> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[String(status)] = {
      description: `Error: ${list.join(", ")}`,
      headers: RATE_LIMIT_HEADERS,
      content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorEnvelope" } } },
    };
  }
  return responses;
}

function successSchema(route: RouteSpec, named: NamedSchemas): JsonSchema {
  const data = route.response ? jsonSchema(route.response, "output", named) : {};
  if (route.bare) return data;
  const properties: Record<string, unknown> = { success: { type: "boolean", enum: [true] } };
  const required = ["success", "meta"];
  // `data`, unless the route answers a message and top-level fields only (DELETE /users/me).
  const withData = route.response !== undefined || route.envelopeExtra === undefined;
  if (withData) {
    properties.data = data;
    required.push("data");
  }
  properties.message = { type: "string" };
  if (!withData) required.push("message");
  if (route.envelopeExtra) {
    const extra = jsonSchema(route.envelopeExtra, "output", named);
    Object.assign(properties, extra.properties as object);
    required.push(...((extra.required as string[]) ?? []));
  }
  if (route.paginated) {
    properties.pagination = { $ref: "#/components/schemas/Pagination" };
    required.push("pagination");
  }
  properties.meta = { $ref: "#/components/schemas/Meta" };
  return { type: "object", required, properties };
}

function parameters(schema: z.ZodType | undefined, location: "path" | "query") {
  if (!schema) return [];
  const json = jsonSchema(schema, "input");
  const required = new Set((json.required as string[]) ?? []);
  return Object.entries((json.properties as Record<string, JsonSchema>) ?? {}).map(([name, property]) => {
    const { description, ...rest } = property;
    return {
      name,
      in: location,
      required: location === "path" || required.has(name),
      schema: rest,
      ...(description ? { description } : {}),
    };
  });
}

/** The optional header every write takes (api/http/idempotency.ts). */
const IDEMPOTENCY_PARAMETER = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  description:
    "Optional. Without it the request runs once, as a new operation. With a key of yours (a UUID) it becomes safe to retry: a retry with the same key and body within 24 hours gets the first answer again (with `Idempotent-Replayed: true`) and moves nothing, also after a timeout or a lost connection; the same key with another body is 422 IDEMPOTENCY_KEY_REUSED, however old the key; a retry while the first request still runs waits for it, or gets 409 IDEMPOTENCY_IN_PROGRESS with `Retry-After`.",
  schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x21-\\x7e]+$" },
};

/** The optional headers of a write a user's own wallet signs (D-119). */
const WALLET_SIGNATURE_PARAMETERS = [
  {
    name: WALLET_SIGNATURE_HEADER,
    in: "header",
    required: false,
    description: `Only for an account whose wallet is its own (custody "self"): the wallet's EIP-712 signature of the \`request\` the same path with /prepare answered for these very values. Without it such an account is answered 403 SIGNATURE_REQUIRED; a managed wallet's account sends none.`,
    schema: { type: "string", pattern: "^0x[0-9a-fA-F]{130}$" },
  },
  {
    name: PERMIT_SIGNATURE_HEADER,
    in: "header",
    required: false,
    description: "With Wallet-Signature, where the prepare call answered a `permit`: the wallet's signature of it.",
    schema: { type: "string", pattern: "^0x[0-9a-fA-F]{130}$" },
  },
];

function operation(route: RouteSpec, named: NamedSchemas) {
  const security = route.auth === "none" ? [] : route.auth === "token" ? [{ bearerAuth: [] }] : [{ bearerAuth: [] }, { apiKeyAuth: [] }];
  return {
    operationId: route.operationId,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: [route.tag],
    security,
    parameters: [
      ...parameters(route.params, "path"),
      ...parameters(route.query, "query"),
      ...(acceptsIdempotencyKey(route) ? [IDEMPOTENCY_PARAMETER] : []),
      ...(route.signable ? WALLET_SIGNATURE_PARAMETERS : []),
    ],
    ...(route.body
      ? { requestBody: { required: true, content: { "application/json": { schema: jsonSchema(route.body, "input") } } } }
      : {}),
    responses: {
      [String(route.status ?? 200)]: {
        description: "Success",
        headers: RATE_LIMIT_HEADERS,
        content: route.streams
          ? { [route.streams]: { schema: { type: "string", description: route.description ?? "a stream" } } }
          : { "application/json": { schema: successSchema(route, named) } },
      },
      ...errorResponses(route),
    },
  };
}

/** The document of `routes`; `schemas` adds named shapes no route answers (a webhook delivery's body, say). */
export function buildOpenApiDocument(
  routes: RouteSpec[],
  info: { title: string; version: string; description?: string },
  schemas: Record<string, z.ZodType> = {},
  /** The routes' tags, in the order the document lists them (the domains' manifests declare them). */
  tags: readonly string[] = [],
) {
  const paths: Record<string, Record<string, unknown>> = {};
  const named: NamedSchemas = new Map();
  for (const route of routes) {
    paths[route.path] ??= {};
    paths[route.path]![route.method] = operation(route, named);
  }
  for (const [name, schema] of Object.entries(schemas)) named.set(name, jsonSchema(schema, "output", named));
  return {
    openapi: "3.0.3",
    info,
    servers: [{ url: "/" }],
    tags: tags.map((name) => ({ name })),
    paths,
    components: {
      ...COMPONENTS,
      schemas: { ...COMPONENTS.schemas, ...Object.fromEntries([...named].sort(([a], [b]) => a.localeCompare(b))) },
    },
  };
}
