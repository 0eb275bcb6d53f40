import { type Logger, pino } from "pino";

export type { Logger };

// Field paths that must never reach a log line, wherever they appear.
const REDACT = [
  "req.headers.authorization",
  "req.headers.cookie",
  'req.headers["x-api-key"]',
  "*.privateKey",
  "*.secret",
  "*.password",
  "*.accessToken",
  "*.duressPin",
];

export function createLogger(level: string, name = "trustmint"): Logger {
  return pino({ name, level, redact: { paths: REDACT, censor: "[redacted]" } });
}
