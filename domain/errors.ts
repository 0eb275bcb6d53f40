// One error taxonomy for the whole service: a stable code and a message. The domain throws
// these; the HTTP layer maps each code to its status once (api/http/errors.ts).

export const ERROR_CODES = [
  "UNAUTHORIZED",
  "FORBIDDEN",
  "NOT_FOUND",
  "VALIDATION_ERROR",
  "RATE_LIMITED",
  "INTERNAL_ERROR",
  "SERVICE_UNAVAILABLE",
  "PAYLOAD_TOO_LARGE",
  "HEADERS_TOO_LARGE",
  "REQUEST_TIMEOUT",
  "UNSUPPORTED_MEDIA_TYPE",
  "METHOD_NOT_ALLOWED",
  "CONFLICT",
  "INVALID_AMOUNT",
  "INVALID_DURATION",
  "NOT_ELIGIBLE",
  "LOAN_NOT_FOUND",
  "ALREADY_REPAID",
  "EXTENSION_NOT_ALLOWED",
  "SOCIAL_VAULT_EXISTS",
  "SOCIAL_VAULT_NOT_FOUND",
  "INVALID_GUARDIAN",
  "GUARDIAN_EXISTS",
  "GUARDIAN_LIMIT_REACHED",
  "GUARDIAN_NOT_FOUND",
  "WITHDRAWAL_NOT_FOUND",
  "NOT_ENOUGH_GUARDIANS",
  "WITHDRAWAL_EXPIRED",
  "DAILY_LIMIT_EXCEEDED",
  "VAULT_LOCKED",
  "NOT_GUARDIAN",
  "TIMELOCK_ACTIVE",
  "INSUFFICIENT_BALANCE",
  "AMOUNT_TOO_SMALL",
  "INSUFFICIENT_LIQUIDITY",
  "VAULT_PAUSED",
  "USER_NOT_FOUND",
  "SCORE_PRIVATE",
  "INVALID_URL",
  "INVALID_EVENTS",
  "WEBHOOK_NOT_FOUND",
  "URL_EXISTS",
  "WEBHOOK_LIMIT_REACHED",
  "NOTIFICATION_NOT_FOUND",
  "INVALID_TOKEN",
  "PAYMENT_NOT_FOUND",
  "ALREADY_PAID",
  "PAYMENT_EXPIRED",
  "PAYMENT_CANCELLED",
  "PAYMENT_IN_PROGRESS",
  "PAYMENT_NOT_PAID",
  "PAYMENT_DECLINED",
  "SELF_PAYMENT",
  "IDEMPOTENCY_KEY_REUSED",
  "IDEMPOTENCY_IN_PROGRESS",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

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
