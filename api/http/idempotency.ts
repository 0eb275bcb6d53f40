import { createHash } from "node:crypto";
import type { Request } from "express";
import { keyReused } from "../../domain/idempotency/operation-key.js";
import type { IdempotencyRepo } from "../../domain/idempotency/repo.js";
import { AppError } from "./errors.js";

export const IDEMPOTENCY_HEADER = "Idempotency-Key";
/** Printable ASCII without spaces, as the IETF draft and Stripe use (a UUID fits). */
const WELL_FORMED_KEY = /^[\x21-\x7e]{1,255}$/;
/**
 * How long a request waits for a concurrent one holding its key before answering 409: longer
 * than it takes to see that a holder died (presence DEAD_AFTER_S), so a retry after a crash
 * takes the key over instead of being refused.
 */
const WAIT_FOR_HOLDER_MS = 15_000;
/** How often a request waiting for the key's holder looks for its answer. */
const POLL_MS = 50;
/** What a 409 IDEMPOTENCY_IN_PROGRESS tells the client to wait before retrying with the same key. */
export const IN_PROGRESS_RETRY_AFTER_S = 2;

export type IdempotencyStore = Pick<IdempotencyRepo, "start" | "complete" | "release">;

/** The request's key, optional on every write (Stripe's semantics); refused when malformed. */
export function idempotencyKeyOf(req: Request): string | undefined {
  const key = req.header(IDEMPOTENCY_HEADER);
  if (key === undefined) return undefined;
  if (!WELL_FORMED_KEY.test(key)) {
    throw new AppError("VALIDATION_ERROR", `Invalid ${IDEMPOTENCY_HEADER}: 1 to 255 printable ASCII characters without spaces`, {
      field: IDEMPOTENCY_HEADER,
      reason: "1 to 255 printable ASCII characters without spaces",
    });
  }
  return key;
}

/** JSON with object keys sorted, so the same body hashes the same however its fields are ordered. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

export const requestHashOf = (operation: string, body: unknown) =>
  createHash("sha256")
    .update(`${operation}\n${canonical(body ?? {})}`)
    .digest("hex");

/**
 * Runs `execute` once per (user, key): the first request runs it and its answer (success or a
 * 4xx refusal) is kept 24 hours; a retry with the same body gets that answer again, byte for
 * byte, and runs nothing; the same key with another body is 422 IDEMPOTENCY_KEY_REUSED; a
 * request arriving while another holds the key waits for its answer (then 409 if it takes too
 * long). A failure that is not the client's (5xx) frees the key, so a retry runs again: money
 * operations find what an earlier attempt sent by the same key before sending anything.
 */
export async function runIdempotent(
  store: IdempotencyStore,
  input: { userId: string; key: string; operation: string; requestHash: string; now: () => Date },
  execute: () => Promise<{ status: number; body: string }>,
): Promise<{ status: number; body: string; replayed: boolean }> {
  const { requestHash } = input;
  const deadline = Date.now() + WAIT_FOR_HOLDER_MS;
  for (;;) {
    const claim = await store.start({ userId: input.userId, key: input.key, operation: input.operation, requestHash, now: input.now() });
    if (claim.kind === "replay") return { status: claim.status, body: claim.body, replayed: true };
    if (claim.kind === "mismatch") throw keyReused();
    if (claim.kind === "in_progress") {
      if (Date.now() > deadline) {
        throw new AppError(
          "IDEMPOTENCY_IN_PROGRESS",
          "A request with this Idempotency-Key is still being processed; retry with the same key after Retry-After seconds",
          { field: IDEMPOTENCY_HEADER, reason: "in progress" },
          IN_PROGRESS_RETRY_AFTER_S,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      continue;
    }
    let answer: { status: number; body: string };
    try {
      answer = await execute();
    } catch (error) {
      await store.release(input.userId, input.key).catch(() => {});
      throw error;
    }
    if (answer.status >= 500) await store.release(input.userId, input.key);
    else await store.complete(input.userId, input.key, answer.status, answer.body);
    return { ...answer, replayed: false };
  }
}
