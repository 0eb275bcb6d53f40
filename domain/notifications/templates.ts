// Every text a notification shows, in one table: a title and a body per template and language,
// with placeholders filled from the item's values when the row is written. A placeholder is
// `{name}` (the value as it is) or `{name:format}`:
//   usdc      micro-USDC as decimal digits -> "20.00 USDC" ("20,00 USDC" in Spanish): two
//             decimals at least, more only when the amount has them (a debt is never rounded)
//   datetime  an ISO 8601 instant -> date and time in the recipient's time zone (UTC unless
//             their quiet hours name one), with the zone's name
//   number    a whole number, grouped as the language groups it
//   signed    a number with its sign (+5, -3)
// test/domain/notification-templates.test.ts checks that every template has every language and
// that both languages use the same placeholders.
import type { TemplateKey, TemplateValues } from "./types.js";

/** The languages notifications are written in; any other `settings.language` gets English. */
export const LANGUAGES = ["en", "es"] as const;
export type Language = (typeof LANGUAGES)[number];

export interface Text {
  title: string;
  body: string;
}

export const TEMPLATES: Record<TemplateKey, Record<Language, Text>> = {
  loan_created: {
    en: { title: "Loan requested", body: "Your request for {amount:usdc} over {duration:number} days is waiting for funding." },
    es: {
      title: "Préstamo solicitado",
      body: "Tu solicitud de {amount:usdc} a {duration:number} días está a la espera de financiación.",
    },
  },
  loan_funded: {
    en: { title: "Loan funded", body: "{netAmount:usdc} is in your wallet. Repay by {dueDate:datetime}." },
    es: { title: "Préstamo financiado", body: "{netAmount:usdc} ya está en tu billetera. Devuélvelo antes del {dueDate:datetime}." },
  },
  loan_due_reminder: {
    en: { title: "Loan due soon", body: "{remainingBalance:usdc} is due on {dueDate:datetime}." },
    es: { title: "Tu préstamo vence pronto", body: "Vence el {dueDate:datetime}: quedan {remainingBalance:usdc} por pagar." },
  },
  loan_overdue: {
    en: { title: "Loan overdue", body: "Your loan was due on {dueDate:datetime}. Repay it now to protect your Trust Score." },
    es: { title: "Préstamo vencido", body: "Tu préstamo venció el {dueDate:datetime}. Págalo ahora para proteger tu Trust Score." },
  },
  loan_repaid: {
    en: { title: "Loan repaid", body: "You repaid {totalPaid:usdc}. This loan is closed." },
    es: { title: "Préstamo pagado", body: "Pagaste {totalPaid:usdc}. Este préstamo está cerrado." },
  },
  guardian_request: {
    en: { title: "Guardian request", body: "{owner} added you as a guardian of their social vault." },
    es: { title: "Solicitud de guardián", body: "{owner} te añadió como guardián de su bóveda social." },
  },
  guardian_accepted: {
    en: { title: "Guardian active", body: "{guardian} is now an active guardian of your social vault." },
    es: { title: "Guardián activo", body: "{guardian} ya es guardián activo de tu bóveda social." },
  },
  withdrawal_requested: {
    en: {
      title: "Withdrawal requested",
      body: "A withdrawal of {amount:usdc} from your social vault was requested. It can be executed from {executeAfter:datetime}. Guardian approvals needed: {requiredApprovals:number}.",
    },
    es: {
      title: "Retiro solicitado",
      body: "Se solicitó un retiro de {amount:usdc} de tu bóveda social. Podrá ejecutarse desde el {executeAfter:datetime}. Aprobaciones de guardianes necesarias: {requiredApprovals:number}.",
    },
  },
  withdrawal_approval_needed: {
    en: { title: "Approval needed", body: "{owner} asked to withdraw {amount:usdc} from their social vault. Review the request." },
    es: { title: "Aprobación necesaria", body: "{owner} pidió retirar {amount:usdc} de su bóveda social. Revisa la solicitud." },
  },
  vault_locked: {
    en: { title: "Social vault locked", body: "The social vault of {owner} was locked. They may need help: reach out discreetly." },
    es: {
      title: "Bóveda social bloqueada",
      body: "La bóveda social de {owner} se bloqueó. Puede que necesite ayuda: contacta con discreción.",
    },
  },
  trust_score_updated: {
    en: {
      title: "Trust Score updated",
      body: "Your Trust Score went from {previousScore:number} to {newScore:number} ({change:signed}).",
    },
    es: {
      title: "Trust Score actualizado",
      body: "Tu Trust Score pasó de {previousScore:number} a {newScore:number} ({change:signed}).",
    },
  },
  level_up: {
    en: { title: "Level up!", body: "You reached the {level} level." },
    es: { title: "¡Subiste de nivel!", body: "Alcanzaste el nivel {level}." },
  },
  badge_earned: {
    en: { title: "Badge earned", body: "You earned the {badge} badge." },
    es: { title: "Insignia conseguida", body: "Conseguiste la insignia {badge}." },
  },
  webhook_failing: {
    en: {
      title: "Webhook failing",
      body: "Deliveries to {url} failed six times in a row ({error}). New events are not sent to it until you set it active again.",
    },
    es: {
      title: "Webhook con fallos",
      body: "Las entregas a {url} fallaron seis veces seguidas ({error}). No se le envían eventos nuevos hasta que lo vuelvas a activar.",
    },
  },
  payment_receipt: {
    en: { title: "Payment receipt", body: "You paid {amount:usdc} to {merchant} on {paidAt:datetime} ({description})." },
    es: { title: "Recibo de pago", body: "Pagaste {amount:usdc} a {merchant} el {paidAt:datetime} ({description})." },
  },
  loan_refused: {
    en: { title: "Loan not funded", body: "Your request for {amount:usdc} was not funded and is cancelled: {why}." },
    es: { title: "Préstamo no financiado", body: "Tu solicitud de {amount:usdc} no se financió y queda cancelada: {why}." },
  },
  transaction_reverted: {
    en: {
      title: "Transaction reversed",
      body: "“{title}” no longer holds: a chain reorganisation removed its transaction. If it comes back, you will be told again.",
    },
    es: {
      title: "Transacción revertida",
      body: "«{title}» ya no es válido: una reorganización de la cadena eliminó su transacción. Si vuelve, te avisaremos de nuevo.",
    },
  },
  payment_refunded: {
    en: {
      title: "Refund received",
      body: "{merchant} refunded {amount:usdc} of your purchase on {refundedAt:datetime}: it first reduces what you owe on its loans, the rest reaches your wallet.",
    },
    es: {
      title: "Reembolso recibido",
      body: "{merchant} reembolsó {amount:usdc} de tu compra el {refundedAt:datetime}: primero reduce lo que debes por sus préstamos y el resto llega a tu billetera.",
    },
  },
  test: {
    en: { title: "Test notification", body: "If you can read this, {channel} notifications reach you." },
    es: { title: "Notificación de prueba", body: "Si puedes leer esto, las notificaciones por {channel} te llegan." },
  },
  // The weekly summary e-mail (never an in-app notification): `highlights` is one line per recent title.
  weekly_summary: {
    en: {
      title: "Your week on TrustMint",
      body: "This week you received {count:number} notifications; {unread:number} are still unread.\n{highlights}",
    },
    es: {
      title: "Tu semana en TrustMint",
      body: "Esta semana recibiste {count:number} notificaciones; {unread:number} siguen sin leer.\n{highlights}",
    },
  },
};

/** The language of a `settings.language` tag: its primary subtag when a translation exists (`es-MX` -> es), else English. */
export function languageOf(tag: string | null | undefined): Language {
  const primary = (tag ?? "").split("-")[0]!.toLowerCase();
  return (LANGUAGES as readonly string[]).includes(primary) ? (primary as Language) : "en";
}

const PLACEHOLDER = /\{([A-Za-z]\w*)(?::([a-z]+))?\}/g;

/** The placeholders of a text: name and format. */
export function placeholdersOf(text: string): { name: string; format: string | undefined }[] {
  return [...text.matchAll(PLACEHOLDER)].map((match) => ({ name: match[1]!, format: match[2] }));
}

const MICRO_DIGITS = /^-?\d+$/;

/**
 * Formatters by their options: building an Intl formatter costs tens of microseconds, more than
 * the rest of a notification's text, and a fan-out page writes hundreds of texts in a few languages.
 */
const formatters = new Map<string, Intl.NumberFormat | Intl.DateTimeFormat>();
function cached<F extends Intl.NumberFormat | Intl.DateTimeFormat>(key: string, make: () => F): F {
  let formatter = formatters.get(key) as F | undefined;
  if (!formatter) {
    formatter = make();
    formatters.set(key, formatter);
  }
  return formatter;
}

/** "20.00" from micro-USDC digits, exact: the decimal text goes to Intl as a string, never through a float. */
function usdcText(micro: string, language: Language): string {
  const negative = micro.startsWith("-");
  const digits = (negative ? micro.slice(1) : micro).padStart(7, "0");
  const decimal = `${negative ? "-" : ""}${digits.slice(0, -6)}.${digits.slice(-6)}`;
  const format = cached(`usdc:${language}`, () => new Intl.NumberFormat(language, { minimumFractionDigits: 2, maximumFractionDigits: 6 }));
  return `${format.format(decimal as `${number}`)} USDC`;
}

function formatValue(value: string | number, format: string | undefined, language: Language, timeZone: string): string {
  switch (format) {
    case undefined:
      return String(value);
    case "usdc":
      if (typeof value === "number" ? !Number.isSafeInteger(value) : !MICRO_DIGITS.test(value)) break;
      return usdcText(String(value), language);
    case "datetime": {
      const when = new Date(value);
      if (typeof value !== "string" || Number.isNaN(when.getTime())) break;
      // Time zones are the users' own (a few hundred names at most): the cache stays small.
      return cached(
        `datetime:${language}:${timeZone}`,
        () =>
          new Intl.DateTimeFormat(language, {
            year: "numeric",
            month: "short",
            day: "numeric",
            hour: "2-digit",
            minute: "2-digit",
            timeZone,
            timeZoneName: "short",
          }),
      ).format(when);
    }
    case "number":
    case "signed":
      if (typeof value !== "number" || !Number.isFinite(value)) break;
      return cached(
        `${format}:${language}`,
        () => new Intl.NumberFormat(language, { signDisplay: format === "signed" ? "exceptZero" : "auto" }),
      ).format(value);
  }
  throw new Error(`cannot format ${JSON.stringify(value)} as ${format}`);
}

/**
 * Builds the formatters every language uses (UTC for times): a process's first Intl formatter
 * loads the locale data, tens of milliseconds that the first fan-out page would otherwise wait.
 */
export function prepareFormatters(): void {
  for (const language of LANGUAGES) {
    formatValue("1", "usdc", language, "UTC");
    formatValue(1, "number", language, "UTC");
    formatValue(1, "signed", language, "UTC");
    formatValue(new Date(0).toISOString(), "datetime", language, "UTC");
  }
}

/** Fills one text; a placeholder without a value is an error (a notification never shows `{amount}`). */
export function fill(text: string, values: TemplateValues, language: Language, timeZone = "UTC"): string {
  return text.replace(PLACEHOLDER, (_match, name: string, format: string | undefined) => {
    const value = values[name];
    if (value === undefined) throw new Error(`no value for the placeholder {${name}}`);
    return formatValue(value, format, language, timeZone);
  });
}

/** The title and body of a template in a language, filled. */
export function render(key: TemplateKey, values: TemplateValues, options: { language: Language; timeZone?: string }): Text {
  const text = TEMPLATES[key][options.language];
  return {
    title: fill(text.title, values, options.language, options.timeZone),
    body: fill(text.body, values, options.language, options.timeZone),
  };
}
