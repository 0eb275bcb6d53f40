// E-mail over SMTP with nodemailer (SMTP_URL). Without an SMTP server (never in production: the
// configuration requires one there) an e-mail is written to the log instead, so `npm start`
// needs nothing else.
import type { Transporter } from "nodemailer";
import type { Logger } from "../../../core/logger.js";

export interface EmailMessage {
  to: string;
  subject: string;
  text: string;
}

/** The SMTP server refused or could not be reached: `retryable` unless it refused the message for good (5xx). */
export class EmailSendError extends Error {
  override name = "EmailSendError";
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

/** SMTP connections kept per process: as many as the runner's deliveries at once, at most. */
const POOL_CONNECTIONS = 4;

export function createEmailSender(options: { smtpUrl: string | undefined; from: string; logger?: Pick<Logger, "info"> }) {
  const { smtpUrl } = options;
  // nodemailer is loaded with the first e-mail sent, not with the process (about 100 ms and 5 MB at start; D-87).
  let transport: Promise<Transporter> | undefined;
  const transportOnce = (url: string) =>
    (transport ??= import("nodemailer").then(({ default: nodemailer }) =>
      nodemailer.createTransport({
        url,
        // A few connections kept open and reused: an e-mail costs one message, not a connection,
        // greeting and TLS handshake each (a burst of notifications is thousands of e-mails).
        pool: true,
        maxConnections: POOL_CONNECTIONS,
        connectionTimeout: 10_000,
        greetingTimeout: 10_000,
        socketTimeout: 20_000,
      }),
    ));
  return {
    /** Whether e-mails really leave (an SMTP server is configured). */
    sends: Boolean(smtpUrl),
    async send(message: EmailMessage): Promise<{ messageId: string | undefined }> {
      if (!smtpUrl) {
        options.logger?.info({ to: message.to, subject: message.subject }, "e-mail not sent (no SMTP_URL): logged instead");
        return { messageId: undefined };
      }
      try {
        const info = await (await transportOnce(smtpUrl)).sendMail({ from: options.from, ...message });
        return { messageId: info.messageId };
      } catch (error) {
        const code = (error as { responseCode?: number }).responseCode;
        throw new EmailSendError(`SMTP: ${(error as Error).message}`, !(code !== undefined && code >= 500 && code < 600));
      }
    },
    /** Closes the pooled connections (at the process's stop). */
    close: async () => (await transport?.catch(() => undefined))?.close(),
  };
}

export type EmailSender = ReturnType<typeof createEmailSender>;
