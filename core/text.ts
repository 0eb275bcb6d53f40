// Text that may enter the service: PostgreSQL cannot store U+0000, and a lone surrogate is not
// Unicode (a UTF-8 encoder silently turns it into U+FFFD).

/** Control characters (C0, DEL, C1), U+0000 among them. */
const CONTROL = /\p{Cc}/gu;

export const hasControlCharacters = (value: string) => new RegExp(CONTROL.source, "u").test(value);

/** The text without control characters, lone surrogates replaced by U+FFFD, trimmed. */
export const plainText = (value: string) => value.toWellFormed().replace(CONTROL, "").trim();
