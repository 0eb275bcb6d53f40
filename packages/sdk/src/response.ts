// What came back with a success, as stripe-node's `lastResponse`: every object a call returns
// carries it as a property that is not enumerable (JSON.stringify, spreads and deep equality
// leave it out), so the request id can be quoted to support and a replayed write told apart.

export interface ResponseInfo {
  status: number;
  /** The API's id of the request (`X-Request-Id`, also `meta.requestId`): quote it to support. */
  requestId: string | undefined;
  /** Whether a write's answer was replayed for its Idempotency-Key (`Idempotent-Replayed: true`): it moved nothing this time. */
  idempotentReplayed: boolean;
  headers: Headers;
}

/** A call's result with the response it came in. */
export type WithResponse<T> = T extends object ? T & { readonly lastResponse: ResponseInfo } : T;

export function responseInfo(response: Response): ResponseInfo {
  return {
    status: response.status,
    requestId: response.headers.get("x-request-id") ?? undefined,
    idempotentReplayed: response.headers.get("idempotent-replayed") === "true",
    headers: response.headers,
  };
}

/** `value` with `lastResponse` (objects and arrays; a number or a string stays as it is). */
export function withResponse<T>(value: T, info: ResponseInfo): WithResponse<T> {
  if (typeof value === "object" && value !== null) {
    Object.defineProperty(value, "lastResponse", { value: info, enumerable: false, configurable: true });
  }
  return value as WithResponse<T>;
}
