import type { ApiConnectionError, ApiError } from "@trustmint/sdk";

/**
 * What a hook's `error` is: the API's answer (`ApiError`: `code`, `status`, `details`), or no
 * answer at all (`ApiConnectionError`, `ApiTimeoutError`). Narrow with `instanceof ApiError`.
 */
export type TrustMintHookError = ApiError | ApiConnectionError;
