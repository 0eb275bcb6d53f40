import type { components } from "./generated/openapi.js";

/** Every error code the API answers (service-spec part 7 and the service's documented extensions). */
export type ErrorCode = components["schemas"]["ErrorEnvelope"]["error"]["code"];

/** Every error the SDK throws for a call: {@link ApiError}, {@link ApiConnectionError}, {@link ApiTimeoutError}. */
export class TrustMintError extends Error {
  override name = "TrustMintError";
}

/** No answer came: the connection failed on every attempt (`cause` is the last failure). */
export class ApiConnectionError extends TrustMintError {
  override name = "ApiConnectionError";
}

/** No answer came within the client's timeout, on every attempt. */
export class ApiTimeoutError extends ApiConnectionError {
  override name = "ApiTimeoutError";
}

/** An error answer of the API: its HTTP status and the envelope's `error`, with the request's id. */
export class ApiError extends TrustMintError {
  override name = "ApiError";
  readonly status: number;
  readonly code: ErrorCode;
  readonly details: { field: string; reason: string } | undefined;
  readonly requestId: string | undefined;
  /** Seconds the API asked to wait before a retry (Retry-After), when it did. */
  readonly retryAfter: number | undefined;

  constructor(init: {
    status: number;
    code: ErrorCode;
    message: string;
    details?: { field: string; reason: string } | undefined;
    requestId?: string | undefined;
    retryAfter?: number | undefined;
  }) {
    super(init.message);
    this.status = init.status;
    this.code = init.code;
    this.details = init.details;
    this.requestId = init.requestId;
    this.retryAfter = init.retryAfter;
  }
}

type ErrorEnvelope = components["schemas"]["ErrorEnvelope"];

/** The ApiError of an error answer (its body read as the envelope, or described when it is not one). */
export function apiErrorOf(response: Response, body: unknown): ApiError {
  const envelope = body as Partial<ErrorEnvelope> | undefined;
  const retryAfter = Number(response.headers.get("retry-after"));
  const common = {
    status: response.status,
    requestId: envelope?.meta?.requestId ?? response.headers.get("x-request-id") ?? undefined,
    retryAfter: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined,
  };
  if (envelope?.error && typeof envelope.error.code === "string") {
    return new ApiError({ ...common, code: envelope.error.code, message: envelope.error.message, details: envelope.error.details });
  }
  return new ApiError({
    ...common,
    code: codeOfStatus(response.status),
    message: `HTTP ${response.status} without the API's error envelope (a proxy's or a gateway's answer?)`,
  });
}

/** The code of an answer without the API's envelope (a proxy, a gateway), by its status. */
const CODE_OF_STATUS: Record<number, ErrorCode> = {
  400: "VALIDATION_ERROR",
  401: "UNAUTHORIZED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  405: "METHOD_NOT_ALLOWED",
  408: "REQUEST_TIMEOUT",
  409: "CONFLICT",
  413: "PAYLOAD_TOO_LARGE",
  415: "UNSUPPORTED_MEDIA_TYPE",
  429: "RATE_LIMITED",
  431: "HEADERS_TOO_LARGE",
  502: "SERVICE_UNAVAILABLE",
  503: "SERVICE_UNAVAILABLE",
  504: "SERVICE_UNAVAILABLE",
};
const codeOfStatus = (status: number): ErrorCode =>
  CODE_OF_STATUS[status] ?? (status >= 400 && status < 500 ? "VALIDATION_ERROR" : "INTERNAL_ERROR");
