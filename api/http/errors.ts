// One error taxonomy for the whole API: a code, its HTTP status, a message.

export const ERROR_STATUS = {
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  VALIDATION_ERROR: 400,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  INVALID_AMOUNT: 400,
  INVALID_DURATION: 400,
  NOT_ELIGIBLE: 403,
  LOAN_NOT_FOUND: 404,
  ALREADY_REPAID: 409,
  DAILY_LIMIT_EXCEEDED: 400,
  VAULT_LOCKED: 400,
  NOT_GUARDIAN: 403,
  TIMELOCK_ACTIVE: 409,
  INSUFFICIENT_BALANCE: 400,
  AMOUNT_TOO_SMALL: 400,
  INSUFFICIENT_LIQUIDITY: 400,
  VAULT_PAUSED: 503,
  USER_NOT_FOUND: 404,
  SCORE_PRIVATE: 403,
  INVALID_URL: 400,
  INVALID_EVENTS: 400,
  WEBHOOK_NOT_FOUND: 404,
  URL_EXISTS: 409,
  NOTIFICATION_NOT_FOUND: 404,
  INVALID_TOKEN: 400,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorDetails {
  field: string;
  reason: string;
}

export class AppError extends Error {
  override name = "AppError";
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetails,
  ) {
    super(message);
    this.status = ERROR_STATUS[code];
  }
}
