import type { components } from "./generated/openapi.js";

/** Every error code the API answers (service-spec part 7 and the service's documented extensions). */
export type ErrorCode = components["schemas"]["ErrorEnvelope"]["error"]["code"];

/** An error answer of the API: its HTTP status and the envelope's `error`, with the request's id. */
export class ApiError extends Error {
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
    code: response.status >= 500 ? "INTERNAL_ERROR" : "NOT_FOUND",
    message: `HTTP ${response.status} without the API's error envelope`,
  });
}
