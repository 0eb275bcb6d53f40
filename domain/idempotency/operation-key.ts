import { randomUUID } from "node:crypto";
import { AppError } from "../errors.js";

/**
 * What one write is known by, down to the transactions it sends: the client's Idempotency-Key
 * when it sent one (a retry with it finds what the first attempt sent), else a key the service
 * makes for this request alone. Either way the sender records its transactions under the key
 * before broadcasting them, so a restart settles them. `requestHash` is kept beside them: the
 * same client key with another body is refused however old the key is.
 */
export interface OperationKey {
  idempotencyKey: string;
  requestHash: string;
  /** For a wallet the user holds (custody "self"): make the write ready to sign, or its signatures (D-119). */
  wallet?: WalletAuthorization;
}

/**
 * How the user's own wallet takes part in a write (D-119): `prepare` answers what to sign instead
 * of sending; `signature` (of the prepared ForwardRequest, and of its permit where one was asked)
 * sends it.
 */
export type WalletAuthorization = { prepare: true } | { signature: string; permitSignature?: string };

/**
 * A key for a request sent without an Idempotency-Key. It contains a space, which a client's key
 * never does (printable ASCII without spaces), so the two never meet.
 */
export const serviceKey = () => `request ${randomUUID()}`;

/** Whether `key` is one serviceKey made: no earlier attempt can have used it. */
export const isServiceKey = (key: string) => key.startsWith("request ");

/** 422: the key names another request (its body or operation differ), however long ago it ran. */
export const keyReused = () =>
  new AppError("IDEMPOTENCY_KEY_REUSED", "This Idempotency-Key was used with another request; use a new key for a new operation", {
    field: "Idempotency-Key",
    reason: "used with another request",
  });
