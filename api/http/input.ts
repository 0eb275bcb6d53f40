import { z } from "zod";
import { microFromNumber } from "../../core/money.js";
import { AppError } from "./errors.js";

// Hostile input that zod's types let through: strings PostgreSQL cannot store (U+0000) or
// that are not Unicode at all (lone surrogates, which JSON and percent-decoding can produce
// and a UTF-8 encoder would silently turn into U+FFFD). Refused everywhere, with the field named.

/** Why a string may not enter the service, or null when it is fine. */
export function unfitString(value: string): string | null {
  if (value.includes("\u0000")) return "must not contain U+0000";
  if (!value.isWellFormed()) return "must be well-formed Unicode (no lone surrogates)";
  return null;
}

/**
 * How deep a request's JSON may nest (an object or array inside another counts one level). The
 * deepest shape the API takes is far shallower; the bound keeps every walk over a request (this
 * one, zod's, the idempotency hash) from exhausting the stack.
 */
export const MAX_INPUT_DEPTH = 32;

/**
 * Refuses a value (path parameters, query, body) that holds an unfit string anywhere, keys
 * included, with VALIDATION_ERROR naming the first such field, or that nests deeper than
 * MAX_INPUT_DEPTH. A loop over an explicit stack, not recursion: it runs on whatever was sent.
 */
export function assertFitInput(value: unknown, location: string): void {
  const fail = (reason: string, at: readonly string[]) => {
    const field = at.length > 0 ? at.join(".") : location;
    throw new AppError("VALIDATION_ERROR", `Invalid ${location}: ${field}: ${reason}`, { field, reason });
  };
  // Children are pushed in reverse, so the first unfit field in document order is the one named.
  const stack: { value: unknown; path: readonly string[] }[] = [{ value, path: [] }];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const { value: item, path } = next;
    if (typeof item === "string") {
      const reason = unfitString(item);
      if (reason) fail(reason, path);
      continue;
    }
    if (item === null || typeof item !== "object") continue;
    // The containers above this one, plus this one.
    if (path.length >= MAX_INPUT_DEPTH) fail(`must not nest deeper than ${MAX_INPUT_DEPTH} levels`, []);
    const entries = Array.isArray(item) ? item.map((child, index) => [String(index), child] as const) : Object.entries(item);
    for (const [key] of entries) {
      const reason = Array.isArray(item) ? null : unfitString(key);
      if (reason) fail(`field name ${reason}`, path);
    }
    for (let i = entries.length - 1; i >= 0; i--) stack.push({ value: entries[i]![1], path: [...path, entries[i]![0]] });
  }
}

/** The OpenAPI schema of each query integer (see `queryInteger`): documented as an integer, parsed from decimal digits. */
export const QUERY_INTEGERS = new WeakMap<z.ZodType, Record<string, unknown>>();

/**
 * A query parameter that is a whole number written in decimal digits only: `0x10`, `1e2`,
 * `+5`, ` 5` and `5.0` are refused (z.coerce.number() would take them), as are values past
 * `max`. Documented in OpenAPI as `type: integer`.
 */
export function queryInteger(options: { min: number; max: number; default: number; description?: string }) {
  const digits = z
    .string()
    .regex(/^\d{1,16}$/, "must be a whole number in decimal digits")
    .transform(Number)
    .pipe(z.number().int().min(options.min).max(options.max));
  QUERY_INTEGERS.set(digits, {
    type: "integer",
    minimum: options.min,
    maximum: options.max,
    default: options.default,
  });
  const withDefault = digits.default(options.default);
  return options.description ? withDefault.describe(options.description) : withDefault;
}

/**
 * A USDC amount in a request body: a JSON number above 0 and at most `max`, with at most 6
 * decimals, turned into micro-USDC (bigint) from its decimal text (core/money.ts), never by
 * float arithmetic.
 */
export function usdcAmount(options: { max: number; description?: string }) {
  const schema = z
    .number()
    .positive()
    .max(options.max)
    .transform((amount, context) => {
      const micro = microFromNumber(amount);
      if (micro === null || micro === 0n) {
        context.addIssue({ code: "custom", message: "must be a USDC amount with at most 6 decimals" });
        return z.NEVER;
      }
      return micro;
    });
  return options.description ? schema.describe(options.description) : schema;
}
