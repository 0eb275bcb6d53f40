// The hosted checkout page (D-81): rendered on the server with the payment's summary (merchant,
// description, amount, what each method costs), so it shows before any script runs; its script
// and styles are the service's own files (a Content-Security-Policy allows nothing else). English
// and Spanish, chosen from Accept-Language (or ?lang=).
import { usdcNumber } from "../../core/money.js";
import type { PaymentMethod } from "../../domain/payments/rules.js";

export const LANGUAGES = ["en", "es"] as const;
export type Language = (typeof LANGUAGES)[number];

const TEXT = {
  en: {
    title: "Checkout",
    pay: "Pay",
    to: "to",
    signInTitle: "Sign in to pay",
    account: "Account (sandbox)",
    signIn: "Sign in",
    signedIn: "Signed in",
    payingAs: "Paying as",
    methods: "How would you like to pay?",
    direct: "Pay now from your wallet",
    directDetail: "The full amount leaves your USDC wallet at once.",
    credit: "Pay later (credit)",
    split: "Pay in installments (split)",
    creditDetail: "The lending pool pays the merchant now; you repay it plus interest at your Trust Score tier's rate, by one due date.",
    termsHint: "Sign in to see your terms.",
    splitDetail: "The lending pool pays the merchant now and you repay in installments, each a loan with its insurance fee and interest:",
    installment: "in {days} days",
    yourTerms: "Your terms: insurance {insurance} USDC and interest {interest} USDC, {total} USDC due {due}.",
    yourInstallments: "Your installments: {list}.",
    notForYou: "Not available to you now: {reason}",
    total: "Total",
    cancel: "Cancel and return to the merchant",
    paying: "Paying…",
    paid: "Paid. Thank you!",
    alreadyPaid: "This payment has been paid.",
    expired: "This payment has expired. Ask the merchant for a new one.",
    cancelled: "The merchant cancelled this payment.",
    processing: "A payment is under way. Refresh this page in a moment.",
    notFound: "Payment not found",
    notFoundDetail: "This link is not a payment. Check it with the merchant.",
    expires: "Pay before",
    sandbox: "Sandbox: sign in with any account name; test USDC comes from the faucet.",
    signInNeeded: "Sign in first.",
    signInWith: "Sign in with your account",
    signInWithWallet: "Sign in with your wallet",
    walletSigning: "Confirm in your wallet",
    signInFailed: "The sign-in did not complete. Go back to the payment page and sign in again.",
  },
  es: {
    title: "Pago",
    pay: "Pagar",
    to: "a",
    signInTitle: "Inicia sesión para pagar",
    account: "Cuenta (sandbox)",
    signIn: "Iniciar sesión",
    signedIn: "Sesión iniciada",
    payingAs: "Pagas como",
    methods: "¿Cómo quieres pagar?",
    direct: "Pagar ahora desde tu billetera",
    directDetail: "El importe completo sale de tu billetera de USDC al instante.",
    credit: "Pagar más tarde (crédito)",
    split: "Pagar a plazos (split)",
    creditDetail:
      "El fondo de préstamos paga al comercio ahora; tú lo devuelves con intereses según el nivel de tu Trust Score, en una fecha.",
    termsHint: "Inicia sesión para ver tus condiciones.",
    splitDetail: "El fondo de préstamos paga al comercio ahora y tú lo devuelves a plazos, cada uno un préstamo con su seguro e intereses:",
    installment: "en {days} días",
    yourTerms: "Tus condiciones: seguro de {insurance} USDC e intereses de {interest} USDC, {total} USDC antes del {due}.",
    yourInstallments: "Tus plazos: {list}.",
    notForYou: "No disponible para ti ahora: {reason}",
    total: "Total",
    cancel: "Cancelar y volver al comercio",
    paying: "Pagando…",
    paid: "Pagado. ¡Gracias!",
    alreadyPaid: "Este pago ya se ha realizado.",
    expired: "Este pago ha caducado. Pide uno nuevo al comercio.",
    cancelled: "El comercio canceló este pago.",
    processing: "Hay un pago en curso. Actualiza esta página en un momento.",
    notFound: "Pago no encontrado",
    notFoundDetail: "Este enlace no es un pago. Compruébalo con el comercio.",
    expires: "Paga antes de",
    sandbox: "Sandbox: inicia sesión con cualquier nombre de cuenta; el USDC de prueba viene del faucet.",
    signInNeeded: "Inicia sesión primero.",
    signInWith: "Inicia sesión con tu cuenta",
    signInWithWallet: "Inicia sesión con tu billetera",
    walletSigning: "Confírmalo en tu billetera",
    signInFailed: "El inicio de sesión no se completó. Vuelve a la página del pago e inicia sesión de nuevo.",
  },
} satisfies Record<Language, Record<string, string>>;

/**
 * Why credit or installments are not offered, as a sentence (the terms' `reason` codes); the
 * script shows `other` for a code not listed here.
 */
const REASONS = {
  en: {
    AMOUNT_ABOVE_TIER: "this amount is above what your Trust Score tier may borrow.",
    DURATION_ABOVE_TIER: "your Trust Score tier's longest term is too short for these installments.",
    TERMS_ABOVE_TIER: "these terms are above what your Trust Score tier allows.",
    INTEREST_ABOVE_OFFER: "your tier's interest rate is above what this merchant offers.",
    AMOUNT_BELOW_LOAN_MINIMUM: "this amount is below the smallest loan the pool makes.",
    INSUFFICIENT_LIQUIDITY: "the lending pool cannot lend this amount right now. Try again later.",
    MAX_LOANS_REACHED: "you already have as many open loans as your tier allows.",
    NEW_BORROWER_LIMIT: "the pool is lending all it can right now on loans larger than you have repaid before. Try again later.",
    INSTALLMENTS_ABOVE_TIER: "these installments are more loans than your Trust Score tier may have open at once.",
    OVERDUE_LOAN: "one of your loans is overdue. Repay it first.",
    RECENT_DEFAULT: "a recent loan of yours was not repaid.",
    SCORE_TOO_LOW: "your Trust Score is below what borrowing needs.",
    other: "you cannot borrow for this payment now.",
  },
  es: {
    AMOUNT_ABOVE_TIER: "este importe supera lo que tu nivel de Trust Score puede pedir prestado.",
    DURATION_ABOVE_TIER: "el plazo más largo de tu nivel de Trust Score es demasiado corto para estos plazos.",
    TERMS_ABOVE_TIER: "estas condiciones superan lo que permite tu nivel de Trust Score.",
    INTEREST_ABOVE_OFFER: "el interés de tu nivel supera lo que ofrece este comercio.",
    AMOUNT_BELOW_LOAN_MINIMUM: "este importe es menor que el préstamo más pequeño del fondo.",
    INSUFFICIENT_LIQUIDITY: "el fondo de préstamos no puede prestar este importe ahora. Inténtalo más tarde.",
    MAX_LOANS_REACHED: "ya tienes tantos préstamos abiertos como permite tu nivel.",
    NEW_BORROWER_LIMIT: "el fondo ya presta todo lo que puede ahora en préstamos mayores que los que ya devolviste. Inténtalo más tarde.",
    INSTALLMENTS_ABOVE_TIER: "estos plazos son más préstamos de los que tu nivel de Trust Score puede tener abiertos a la vez.",
    OVERDUE_LOAN: "uno de tus préstamos está vencido. Devuélvelo primero.",
    RECENT_DEFAULT: "un préstamo tuyo reciente no se devolvió.",
    SCORE_TOO_LOW: "tu Trust Score es menor que el necesario para pedir prestado.",
    other: "no puedes pedir prestado para este pago ahora.",
  },
} satisfies Record<Language, Record<string, string>>;

/** The language of a request: ?lang= when it names one, else Accept-Language's best, else English. */
export function languageOf(query: unknown, acceptLanguage: string | undefined): Language {
  if (typeof query === "string" && (LANGUAGES as readonly string[]).includes(query)) return query as Language;
  const ranked = (acceptLanguage ?? "")
    .split(",")
    .map((part) => {
      const [tag = "", ...params] = part.trim().toLowerCase().split(";");
      const q = params.map((param) => /^q=([0-9.]+)$/.exec(param.trim())?.[1]).find((value) => value !== undefined);
      return { language: tag.split("-")[0]!, q: q === undefined ? 1 : Number(q) };
    })
    .filter((entry) => entry.q > 0)
    .sort((a, b) => b.q - a.q);
  return (ranked.find((entry) => (LANGUAGES as readonly string[]).includes(entry.language))?.language as Language) ?? "en";
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (char) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[char]!);

/**
 * A merchant's text as the payer reads it: without the Unicode direction controls (embeddings,
 * overrides, isolates, marks), so "\u202Eelgoog" reads "elgoog", not "google"; shown in a
 * `<bdi>`, a right-to-left name still reads right to left without reordering the sentence around it.
 */
export const withoutDirectionControls = (text: string) => text.replace(/[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g, "");
const merchantText = (text: string) => `<bdi>${escapeHtml(withoutDirectionControls(text))}</bdi>`;

/**
 * Parts of a total as a person reads them, in cents that add up to the total shown: every part
 * but the last rounded down to the cent, the last what is left (whole cents when the total is).
 */
export function partsInCents(parts: readonly bigint[], total: bigint): string[] {
  if (parts.length === 0) return [];
  const CENT = 10_000n;
  const shown = parts.slice(0, -1).map((part) => (part / CENT) * CENT);
  return [...shown, total - shown.reduce((sum, part) => sum + part, 0n)].map(displayAmount);
}

/** An amount as the page shows it: two decimals at least, every significant micro-USDC digit kept. */
export function displayAmount(micro: bigint): string {
  const [whole, fraction = ""] = usdcNumber(micro).toString().split(".");
  return `${whole}.${fraction.padEnd(2, "0")}`;
}

export interface CheckoutPage {
  id: string;
  status: string;
  merchantName: string;
  description: string;
  amount: bigint;
  methods: PaymentMethod[];
  expiresAt: Date;
  cancelUrl: string | null;
  /** The sandbox's sign-in form (outside production). */
  sandbox: boolean;
  /** The identity provider's sign-in (where configured). */
  signIn: boolean;
  /** Sign-In with Ethereum with the payer's browser wallet (where the service signs its own tokens: D-119). */
  wallet: boolean;
  /** A split payment's installments: amount and days until due. */
  schedule: { amount: bigint; days: number }[];
}

const htmlPage = (language: Language, title: string, body: string) => `<!doctype html>
<html lang="${language}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="/checkout/assets/checkout.css">
<script src="/checkout/assets/checkout.js" defer></script>
</head>
<body>
${body}
</body>
</html>
`;

export function renderCheckout(page: CheckoutPage, language: Language): string {
  const t = TEXT[language];
  const amount = `${displayAmount(page.amount)} USDC`;
  const closed = { success: t.alreadyPaid, expired: t.expired, cancelled: t.cancelled, processing: t.processing }[page.status];
  const detail: Record<PaymentMethod, string> = {
    direct: `${escapeHtml(t.directDetail)} ${escapeHtml(t.total)}: <strong>${escapeHtml(amount)}</strong>`,
    credit: `${escapeHtml(t.creditDetail)} <span class="terms-hint">${escapeHtml(t.termsHint)}</span>`,
    split: `${escapeHtml(t.splitDetail)}</p>
<ol class="schedule">${partsInCents(
      page.schedule.map((part) => part.amount),
      page.amount,
    )
      .map((shown, i) => `<li>${escapeHtml(`${shown} USDC ${t.installment.replace("{days}", String(page.schedule[i]!.days))}`)}</li>`)
      .join("")}</ol>
<p class="detail">`,
  };
  const method = (
    name: PaymentMethod,
  ) => `<li><button type="button" class="method" data-method="${name}" disabled>${escapeHtml(t[name])}</button>
<p class="detail">${detail[name]}</p>
<p class="terms" data-terms="${name}" aria-live="polite"></p></li>`;
  const body = `<main class="checkout" data-payment-id="${escapeHtml(page.id)}" data-status="${escapeHtml(page.status)}">
<header>
<p class="merchant">${escapeHtml(t.pay)} ${escapeHtml(t.to)} <strong>${merchantText(page.merchantName)}</strong></p>
<h1><span class="amount">${escapeHtml(amount)}</span></h1>
${page.description ? `<p class="description">${merchantText(page.description)}</p>` : ""}
<p class="expires">${escapeHtml(t.expires)} <time datetime="${page.expiresAt.toISOString()}">${escapeHtml(page.expiresAt.toISOString().replace("T", " ").slice(0, 16))} UTC</time></p>
</header>
${
  closed
    ? `<p class="closed" role="status">${escapeHtml(closed)}</p>`
    : `<section id="signin" aria-labelledby="signin-title">
<h2 id="signin-title" data-signed-in="${escapeHtml(t.signedIn)}">${escapeHtml(t.signInTitle)}</h2>
${
  page.sandbox
    ? `<form id="sandbox-signin">
<label for="account">${escapeHtml(t.account)}</label>
<input id="account" name="account" autocomplete="username" required maxlength="100">
<button type="submit">${escapeHtml(t.signIn)}</button>
</form>
<p class="hint terms-hint">${escapeHtml(t.sandbox)}</p>`
    : ""
}
${page.signIn ? `<p><a class="button" id="provider-signin" href="/checkout/${escapeHtml(page.id)}/signin?lang=${language}">${escapeHtml(t.signInWith)}</a></p>` : ""}
${page.wallet ? `<p><button type="button" id="wallet-signin" hidden>${escapeHtml(t.signInWithWallet)}</button></p>` : ""}
<p id="signed-in" hidden>${escapeHtml(t.payingAs)}: <span id="who"></span></p>
</section>
<section id="methods" aria-labelledby="methods-title">
<h2 id="methods-title">${escapeHtml(t.methods)}</h2>
<ul>
${page.methods.map(method).join("\n")}
</ul>
</section>`
}
<p id="message" role="status" aria-live="polite" data-paying="${escapeHtml(t.paying)}" data-paid="${escapeHtml(t.paid)}" data-sign-in="${escapeHtml(t.signInNeeded)}" data-your-terms="${escapeHtml(t.yourTerms)}" data-your-installments="${escapeHtml(t.yourInstallments)}" data-not-for-you="${escapeHtml(t.notForYou)}" data-wallet-signing="${escapeHtml(t.walletSigning)}" data-reasons="${escapeHtml(JSON.stringify(REASONS[language]))}"></p>
${page.cancelUrl && !closed ? `<p class="cancel"><a id="cancel" href="${escapeHtml(page.cancelUrl)}">${escapeHtml(t.cancel)}</a></p>` : ""}
</main>`;
  return htmlPage(language, `${t.title}: ${withoutDirectionControls(page.merchantName)}`, body);
}

/** A page of one message (a failed sign-in's). */
export function renderMessage(language: Language, key: "signInFailed"): string {
  const t = TEXT[language];
  return htmlPage(
    language,
    t.title,
    `<main class="checkout"><h1>${escapeHtml(t.title)}</h1><p role="alert">${escapeHtml(t[key])}</p></main>`,
  );
}

export function renderNotFound(language: Language): string {
  const t = TEXT[language];
  return htmlPage(
    language,
    t.notFound,
    `<main class="checkout"><h1>${escapeHtml(t.notFound)}</h1><p>${escapeHtml(t.notFoundDetail)}</p></main>`,
  );
}
