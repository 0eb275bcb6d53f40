// Text that may enter the service: PostgreSQL cannot store U+0000, and a lone surrogate is not
// Unicode (a UTF-8 encoder silently turns it into U+FFFD).

/** Control characters (C0, DEL, C1), U+0000 among them. */
const CONTROL = /\p{Cc}/gu;

export const hasControlCharacters = (value: string) => new RegExp(CONTROL.source, "u").test(value);

/** The text without control characters, lone surrogates replaced by U+FFFD, trimmed. */
export const plainText = (value: string) => value.toWellFormed().replace(CONTROL, "").trim();

/**
 * JSON text for a PostgreSQL `json` parameter (json_to_recordset): JSON.stringify escapes a lone
 * surrogate as `\udXXX`, which PostgreSQL refuses when it reads the value as text, where a text
 * parameter's UTF-8 encoding turns it into U+FFFD. Such strings are made well-formed first, as
 * that. (A pair is written as it is: an escaped surrogate in the output means a lone one, or a
 * backslash before "ud8..", when the value is written again, string by string.)
 */
export function jsonForPostgres(value: unknown): string {
  const text = JSON.stringify(value);
  if (!ESCAPED_SURROGATE.test(text)) return text;
  return JSON.stringify(value, (_key, inner) => (typeof inner === "string" && !inner.isWellFormed() ? inner.toWellFormed() : inner));
}
const ESCAPED_SURROGATE = /\\ud[89a-f]/i;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Whether a value is a UUID in its text form: an id that is not one names no row, and never reaches a uuid column. */
export const isUuid = (value: string) => UUID.test(value);

/** `0x1234…abcd`: how an address that names no one is shown to people. */
export const shortAddress = (address: string) => `${address.slice(0, 6)}…${address.slice(-4)}`;
