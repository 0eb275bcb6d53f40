// One error taxonomy for the whole service: a stable code, its HTTP status (service-spec part 7
// pairs them) and a message. The domain throws these; the HTTP layer answers with the status.
import { MODULE_ERRORS, type ModuleErrors } from "./modules.js";

/** The platform's error codes (service-spec part 7) and their HTTP statuses; each domain's own are in its manifest. */
export const PLATFORM_ERRORS = {
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  VALIDATION_ERROR: 400,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
  PAYLOAD_TOO_LARGE: 413,
  HEADERS_TOO_LARGE: 431,
  REQUEST_TIMEOUT: 408,
  UNSUPPORTED_MEDIA_TYPE: 415,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
} as const;

export type ErrorCode = keyof typeof PLATFORM_ERRORS | keyof ModuleErrors;

/** Every error code and its HTTP status (the API answers with it: api/http/errors.ts). */
export const ERROR_STATUS = { ...PLATFORM_ERRORS, ...MODULE_ERRORS } as Readonly<Record<ErrorCode, number>>;

export interface ErrorDetails {
  field: string;
  reason: string;
}

export class AppError extends Error {
  override name = "AppError";

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetails,
    /** Seconds after which a retry may succeed: answered as `Retry-After`. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}
