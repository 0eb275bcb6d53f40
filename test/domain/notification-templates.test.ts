import { expect } from "chai";
import { type EventContext, type NotifiableEvent, notificationsFor } from "../../domain/notifications/from-events.js";
import {
  applyPatch,
  canonicalTimeZone,
  DEFAULT_STORED,
  deliveryFor,
  preferencesOf,
  quietUntil,
  readStored,
} from "../../domain/notifications/preferences.js";
import { fill, LANGUAGES, languageOf, placeholdersOf, render, TEMPLATES } from "../../domain/notifications/templates.js";
import { NOTIFICATION_TYPES, type NotificationItem, type TemplateKey, type TemplateValues } from "../../domain/notifications/types.js";

// The notifications' words and rules without a database: every template in every language with
// every placeholder filled, the mapping from each catalogue event to its notifications, and the
// channels preferences and quiet hours give.

const SAMPLE: Record<string, string | number> = { usdc: "20000000", datetime: "2026-11-24T14:45:00.000Z", number: 3, signed: 5 };

/** Values for every placeholder of a template, made from their formats. */
function sampleValues(key: TemplateKey): TemplateValues {
  const values: TemplateValues = {};
  for (const language of LANGUAGES) {
    for (const text of [TEMPLATES[key][language].title, TEMPLATES[key][language].body]) {
      for (const { name, format } of placeholdersOf(text)) values[name] = format ? SAMPLE[format]! : "Ana";
    }
  }
  return values;
}

const signature = (key: TemplateKey, language: (typeof LANGUAGES)[number]) =>
  [TEMPLATES[key][language].title, TEMPLATES[key][language].body]
    .flatMap(placeholdersOf)
    .map(({ name, format }) => `${name}:${format ?? ""}`)
    .sort();

describe("notification templates", () => {
  it("has a template for each of the 13 types, the five extensions (and the test notification), nothing else", () => {
    expect(NOTIFICATION_TYPES).to.have.length(18);
    expect(Object.keys(TEMPLATES).sort()).to.deep.equal([...NOTIFICATION_TYPES, "test", "weekly_summary"].sort());
  });

  for (const key of Object.keys(TEMPLATES) as TemplateKey[]) {
    it(`${key}: English and Spanish, the same placeholders, each filled`, () => {
      expect(Object.keys(TEMPLATES[key]).sort()).to.deep.equal([...LANGUAGES].sort());
      expect(signature(key, "es")).to.deep.equal(signature(key, "en"));
      const values = sampleValues(key);
      for (const language of LANGUAGES) {
        const text = render(key, values, { language });
        for (const part of [text.title, text.body]) {
          expect(part.trim(), `${key} ${language}`).to.not.equal("");
          expect(part, `${key} ${language}`).to.not.match(/[{}]/);
          expect(part, `${key} ${language}`).to.not.include("undefined");
        }
      }
      // No two languages read the same (a translation was not forgotten).
      expect(render(key, values, { language: "es" })).to.not.deep.equal(render(key, values, { language: "en" }));
    });
  }

  it("formats amounts for people, exactly: two decimals at least, never rounded away", () => {
    expect(fill("{a:usdc}", { a: "20000000" }, "en")).to.equal("20.00 USDC");
    expect(fill("{a:usdc}", { a: "20000000" }, "es")).to.equal("20,00 USDC");
    expect(fill("{a:usdc}", { a: "102989700" }, "en")).to.equal("102.9897 USDC");
    expect(fill("{a:usdc}", { a: "1234567500000" }, "en")).to.equal("1,234,567.50 USDC");
    expect(fill("{a:usdc}", { a: "1" }, "en")).to.equal("0.000001 USDC");
    expect(fill("{a:usdc}", { a: "0" }, "en")).to.equal("0.00 USDC");
    expect(fill("{c:signed} {d:signed}", { c: 5, d: -3 }, "en")).to.equal("+5 -3");
  });

  it("shows times in the given zone with its name", () => {
    const at = "2026-11-24T14:45:00.000Z";
    expect(fill("{t:datetime}", { t: at }, "en")).to.match(/Nov 24, 2026.*02:45.*PM UTC/);
    expect(fill("{t:datetime}", { t: at }, "en", "Europe/Madrid")).to.match(/03:45/);
    expect(fill("{t:datetime}", { t: at }, "es")).to.match(/24 nov 2026.*14:45 UTC/);
  });

  it("refuses a missing value or one of the wrong kind rather than show a placeholder", () => {
    expect(() => fill("Hello {name}", {}, "en")).to.throw(/no value for the placeholder \{name\}/);
    expect(() => fill("{a:usdc}", { a: "20.5" }, "en")).to.throw(/cannot format/);
    expect(() => fill("{t:datetime}", { t: "soon" }, "en")).to.throw(/cannot format/);
  });

  it("picks the language from settings.language, English where no translation exists", () => {
    expect(languageOf("es")).to.equal("es");
    expect(languageOf("es-MX")).to.equal("es");
    expect(languageOf("ES-es")).to.equal("es");
    expect(languageOf("en-GB")).to.equal("en");
    expect(languageOf("pt-BR")).to.equal("en");
    expect(languageOf("")).to.equal("en");
  });
});

const OWNER = "usr_owner";
const GUARDIAN = "usr_guardian";
const OTHER_GUARDIAN = "usr_guardian2";
const VAULT = "0x1111111111111111111111111111111111111111";
const GUARDIAN_WALLET = "0x2222222222222222222222222222222222222222";
const OTHER_WALLET = "0x3333333333333333333333333333333333333333";
const STRANGER_WALLET = "0x4444444444444444444444444444444444444444";
const OWNER_WALLET = "0x5555555555555555555555555555555555555555";
const TX = `0x${"ab".repeat(32)}`;
const AT = "2026-11-24T10:00:00.000Z";

const context: EventContext = {
  userIdByWallet: (address) =>
    ({ [GUARDIAN_WALLET]: GUARDIAN, [OTHER_WALLET]: OTHER_GUARDIAN, [OWNER_WALLET]: OWNER })[address.toLowerCase()] ?? null,
  displayNameOf: (userId) => ({ [OWNER]: "Olivia", [GUARDIAN]: "Gus" })[userId] ?? null,
  activeGuardiansOf: (vault) => (vault.toLowerCase() === VAULT ? [GUARDIAN_WALLET, OTHER_WALLET, STRANGER_WALLET, OWNER_WALLET] : []),
};

const ev = (event: { type: string; userId: string | null; data: unknown }, id = "evt-1") => ({ id, ...event }) as NotifiableEvent;

const EVENTS: NotifiableEvent[] = [
  ev({
    type: "loan.created",
    userId: OWNER,
    data: {
      loanId: "loan-1",
      userId: OWNER,
      amount: 20,
      netAmount: 18,
      duration: 30,
      interestRate: 0.05,
      totalRepayment: 21,
      expiresAt: AT,
      raw: { amount: 20_000_000n, interest: 1_000_000n, insuranceFee: 2_000_000n },
    },
  }),
  ev({
    type: "loan.funded",
    userId: OWNER,
    data: {
      loanId: "loan-1",
      amount: 20,
      netAmount: 18,
      dueDate: AT,
      txHash: TX,
      raw: { chainLoanId: 1n, principal: 20_000_000n, netAmount: 18_000_000n, interest: 1_000_000n, insuranceFee: 2_000_000n },
    },
  }),
  ev({ type: "loan.due_reminder", userId: OWNER, data: { loanId: "loan-1", userId: OWNER, dueDate: AT, remainingBalance: 20.5 } }),
  ev({ type: "loan.overdue", userId: OWNER, data: { loanId: "loan-1", daysOverdue: 2, raw: { chainLoanId: 1n, dueDate: AT } } }),
  ev({
    type: "loan.repaid",
    userId: OWNER,
    data: { loanId: "loan-1", totalPaid: 21, txHash: TX, raw: { chainLoanId: 1n, totalPaid: 21_000_000n } },
  }),
  ev({
    type: "user.guardian_added",
    userId: OWNER,
    data: { vaultAddress: VAULT, guardianAddress: GUARDIAN_WALLET, guardianUserId: GUARDIAN, activeAt: "2026-11-25T10:00:00.000Z" },
  }),
  ev({
    type: "social_vault.withdrawal_requested",
    userId: OWNER,
    data: {
      withdrawalId: `${VAULT}-1`,
      amount: "500.00",
      recipient: STRANGER_WALLET,
      requiredApprovals: 2,
      executeAfter: AT,
      expiresAt: AT,
      raw: { vault: VAULT, requestId: 1n, amount: 500_000_000n },
    },
  }),
  ev({
    type: "social_vault.guardian_alert",
    userId: GUARDIAN,
    data: { vaultAddress: VAULT, vaultOwner: OWNER, guardianAddress: GUARDIAN_WALLET, reason: "locked", lockedAt: AT },
  }),
  ev({
    type: "trust_score.updated",
    userId: OWNER,
    data: { userId: OWNER, previousScore: 40, newScore: 45, change: 5, reason: "repayment", timestamp: AT },
  }),
  ev({ type: "user.level_up", userId: OWNER, data: { userId: OWNER, level: "Saver", previousLevel: "Newcomer", xp: 120, timestamp: AT } }),
  ev({ type: "user.badge_earned", userId: OWNER, data: { userId: OWNER, badgeId: "first_loan", name: "First Loan", earnedAt: AT } }),
  ev({
    type: "webhook.failing",
    userId: OWNER,
    data: { userId: OWNER, webhookId: "hook-1", url: "https://example.com/hooks", lastError: "HTTP 500", failedAt: AT },
  }),
  // The merchant's event: the payer (the guardian here) gets the receipt, naming the merchant.
  ev({
    type: "payment.success",
    userId: OWNER,
    data: {
      type: "payment.success",
      paymentId: "pay-1",
      amount: 25.5,
      fee: 0.255,
      net: 25.245,
      currency: "USDC",
      method: "direct",
      description: "Two espressos",
      payerId: GUARDIAN,
      metadata: { orderId: "A-17" },
      txHash: `0x${"ab".repeat(32)}`,
      paidAt: AT,
    },
  }),
  // The merchant's refund: the payer (the guardian here) is told.
  ev({
    type: "payment.refunded",
    userId: OWNER,
    data: {
      type: "payment.refunded",
      paymentId: "pay-1",
      refundId: "ref-1",
      amount: 5,
      refundedAmount: 5,
      fullyRefunded: false,
      reason: "returned",
      payerId: GUARDIAN,
      currency: "USDC",
      metadata: { orderId: "A-17" },
      txHash: `0x${"cd".repeat(32)}`,
      refundedAt: AT,
    },
  }),
  ev({
    type: "loan.refused",
    userId: OWNER,
    data: {
      loanId: "loan-2",
      userId: OWNER,
      amount: 500,
      duration: 90,
      reason: "OVERDUE_LOAN",
      why: "not eligible now (OVERDUE_LOAN)",
      cancelledAt: AT,
    },
  }),
];

const only = (items: NotificationItem[]) => items.map(({ userId, type }) => `${type}->${userId}`);

describe("notifications from domain events", () => {
  it("gives a paid payment's payer a receipt naming the merchant, and the merchant nothing in the feed", () => {
    const paid = EVENTS.find((event) => event.type === "payment.success")!;
    const items = notificationsFor(paid, context);
    expect(only(items)).to.deep.equal([`payment_receipt->${GUARDIAN}`]);
    expect(items[0]!.data).to.deep.equal({ paymentId: "pay-1", txHash: `0x${"ab".repeat(32)}` });
    const text = render("payment_receipt", items[0]!.values, { language: "en" });
    expect(text.body).to.include("25.50 USDC").and.include("Olivia").and.include("Two espressos");
    const noPayer = ev({ type: "payment.success", userId: OWNER, data: { ...(paid.data as object), payerId: null } });
    expect(notificationsFor(noPayer, context)).to.deep.equal([]);
  });

  it("tells the payer of a refund, naming the merchant, and a borrower of a request refused at funding", () => {
    const refunded = notificationsFor(EVENTS.find((event) => event.type === "payment.refunded")!, context);
    expect(only(refunded)).to.deep.equal([`payment_refunded->${GUARDIAN}`]);
    expect(render("payment_refunded", refunded[0]!.values, { language: "en" }).body)
      .to.include("5.00 USDC")
      .and.include("Olivia");
    const refused = notificationsFor(EVENTS.find((event) => event.type === "loan.refused")!, context);
    expect(only(refused)).to.deep.equal([`loan_refused->${OWNER}`]);
    expect(render("loan_refused", refused[0]!.values, { language: "en" }).body)
      .to.include("500.00 USDC")
      .and.include("OVERDUE_LOAN");
  });

  it("makes every notification type from some event, and each item renders in both languages", () => {
    const items = EVENTS.flatMap((event) => notificationsFor(event, context));
    // A correction comes from a revert of what another item announced (service.ts, `retract`; test/api/reorg-derived.test.ts).
    const fromEvents = NOTIFICATION_TYPES.filter((type) => type !== "transaction_reverted");
    expect([...new Set(items.map((item) => item.type))].sort()).to.deep.equal([...fromEvents].sort());
    for (const item of items) {
      for (const language of LANGUAGES) {
        const text = render(item.type, item.values, { language });
        expect(`${text.title} ${text.body}`, item.type).to.not.match(/[{}]/);
      }
    }
  });

  it("maps loan events to the borrower with the loan id", () => {
    const [created, funded, reminder, overdue, repaid] = EVENTS.slice(0, 5).map((event) => notificationsFor(event, context));
    expect(created).to.deep.equal([
      {
        userId: OWNER,
        type: "loan_created",
        data: { loanId: "loan-1" },
        values: { amount: "20000000", duration: 30 },
        group: null,
        silent: false,
        urgent: false,
        sourceId: "evt-1",
      },
    ]);
    expect(render("loan_funded", funded![0]!.values, { language: "en" }).body).to.match(/^18\.00 USDC is in your wallet/);
    expect(reminder![0]).to.deep.include({ type: "loan_due_reminder", group: "loan_reminders", urgent: false });
    expect(reminder![0]!.values.remainingBalance).to.equal("20500000");
    expect(overdue![0]).to.deep.include({
      type: "loan_overdue",
      group: "loan_reminders",
      urgent: true,
      data: { loanId: "loan-1", daysOverdue: 2 },
    });
    expect(repaid![0]).to.deep.include({ userId: OWNER, type: "loan_repaid", group: null });
    // A chain fact whose wallet is no user's tells nobody.
    expect(notificationsFor({ ...EVENTS[1]!, userId: null } as NotifiableEvent, context)).to.deep.equal([]);
  });

  it("asks the guardian and schedules the owner's guardian_accepted at activeAt", () => {
    const items = notificationsFor(EVENTS[5]!, context);
    expect(only(items)).to.deep.equal([`guardian_request->${GUARDIAN}`, `guardian_accepted->${OWNER}`]);
    expect(items[0]!.values).to.deep.equal({ owner: "Olivia" });
    expect(items[0]!.notBefore).to.equal(undefined);
    expect(items[1]).to.deep.include({ notBefore: "2026-11-25T10:00:00.000Z", values: { guardian: "Gus" } });
    expect(items[1]!.data).to.deep.equal({ vaultAddress: VAULT, guardianAddress: GUARDIAN_WALLET });
    // The indexer did not know the guardian's user: the context finds it by wallet.
    const late = ev({ type: "user.guardian_added", userId: OWNER, data: { ...(EVENTS[5]!.data as object), guardianUserId: null } });
    expect(only(notificationsFor(late, context))).to.deep.equal([`guardian_request->${GUARDIAN}`, `guardian_accepted->${OWNER}`]);
    // A guardian who is no user: only the owner hears, with the guardian's short address.
    const stranger = ev({
      type: "user.guardian_added",
      userId: OWNER,
      data: { ...(EVENTS[5]!.data as object), guardianAddress: STRANGER_WALLET, guardianUserId: null },
    });
    const [accepted] = notificationsFor(stranger, context);
    expect(accepted).to.deep.include({ type: "guardian_accepted", userId: OWNER, values: { guardian: "0x4444…4444" } });
  });

  it("tells the owner of a withdrawal request and asks each active guardian who is a user, once, never the owner", () => {
    const items = notificationsFor(EVENTS[6]!, context);
    expect(only(items)).to.deep.equal([
      `withdrawal_requested->${OWNER}`,
      `withdrawal_approval_needed->${GUARDIAN}`,
      `withdrawal_approval_needed->${OTHER_GUARDIAN}`,
    ]);
    for (const item of items) {
      expect(item.data).to.deep.equal({ withdrawalId: `${VAULT}-1`, vaultAddress: VAULT });
      expect(item).to.deep.include({ group: "guardian_alerts", urgent: true, silent: false });
    }
    expect(items[1]!.values).to.deep.equal({ amount: "500000000", owner: "Olivia" });
    // No approval needed: no guardian is asked.
    const free = ev({
      type: "social_vault.withdrawal_requested",
      userId: OWNER,
      data: { ...(EVENTS[6]!.data as object), requiredApprovals: 0 },
    });
    expect(only(notificationsFor(free, context))).to.deep.equal([`withdrawal_requested->${OWNER}`]);
  });

  it("alerts the guardian of a lock, silently and urgently, and never the owner", () => {
    const items = notificationsFor(EVENTS[7]!, context);
    expect(items).to.have.length(1);
    expect(items[0]).to.deep.include({ userId: GUARDIAN, type: "vault_locked", silent: true, urgent: true, group: "guardian_alerts" });
    expect(items[0]!.data).to.deep.equal({ vaultAddress: VAULT, lockedAt: AT });
    const toOwner = ev({ type: "social_vault.guardian_alert", userId: OWNER, data: EVENTS[7]!.data });
    expect(notificationsFor(toOwner, context)).to.deep.equal([]);
  });

  it("makes one trust_score_updated of a change recorded under both names", () => {
    const [first] = notificationsFor(EVENTS[8]!, context);
    const [twin] = notificationsFor(ev({ type: "user.trust_score_updated", userId: OWNER, data: EVENTS[8]!.data }, "evt-2"), context);
    expect(first!.type).to.equal("trust_score_updated");
    expect(twin).to.deep.equal(first);
    expect(first!.sourceId).to.not.equal("evt-1");
    expect(render("trust_score_updated", first!.values, { language: "en" }).body).to.equal("Your Trust Score went from 40 to 45 (+5).");
  });

  it("makes nothing of the events no user is told about", () => {
    const quiet = ev({ type: "vault.yield_distributed", userId: null, data: {} });
    expect(notificationsFor(quiet, context)).to.deep.equal([]);
  });
});

describe("notification preferences and channels", () => {
  const user = { settingsNotifications: true, settingsEmailAlerts: true };
  const now = new Date("2026-11-24T23:30:00.000Z");

  it("defaults: push and e-mail on with their groups, marketing and the weekly summary off, SMS off", () => {
    expect(preferencesOf(readStored(null), user)).to.deep.equal({
      push: { enabled: true, loan_reminders: true, guardian_alerts: true, marketing: false },
      email: { enabled: true, loan_reminders: true, guardian_alerts: true, weekly_summary: false, marketing: false },
      sms: { enabled: false },
      quietHours: null,
    });
    // A stored row with odd or missing fields reads as defaults there.
    expect(readStored({ push: { marketing: "yes" }, sms: 3 })).to.deep.equal(DEFAULT_STORED);
  });

  it("applies a partial change without the switches the User row holds", () => {
    const next = applyPatch(readStored(null), { push: { enabled: false, marketing: true }, sms: { enabled: true } });
    expect(next.push).to.deep.equal({ loan_reminders: true, guardian_alerts: true, marketing: true });
    expect(next.sms).to.deep.equal({ enabled: true });
  });

  it("sends to the enabled channels whose group switch is on; SMS for urgent ones only", () => {
    const prefs = preferencesOf(applyPatch(readStored(null), { email: { loan_reminders: false }, sms: { enabled: true } }), user);
    expect(deliveryFor(prefs, { group: "loan_reminders", urgent: false }, now).channels).to.deep.equal(["push"]);
    expect(deliveryFor(prefs, { group: "loan_reminders", urgent: true }, now).channels).to.deep.equal(["push", "sms"]);
    expect(deliveryFor(prefs, { group: null, urgent: false }, now).channels).to.deep.equal(["push", "email"]);
    const off = preferencesOf(readStored(null), { settingsNotifications: false, settingsEmailAlerts: false });
    expect(deliveryFor(off, { group: null, urgent: false }, now).channels).to.deep.equal([]);
  });

  it("holds what is not urgent until the quiet hours end, in the user's zone, across midnight", () => {
    const quietHours = { start: "22:00", end: "07:00", timeZone: "Europe/Madrid" }; // 23:30 UTC is 00:30 in Madrid (UTC+1)
    expect(quietUntil(quietHours, now)?.toISOString()).to.equal("2026-11-25T06:00:00.000Z");
    expect(quietUntil({ ...quietHours, start: "01:00" }, now)).to.equal(null);
    const prefs = preferencesOf(applyPatch(readStored(null), { quietHours }), user);
    expect(deliveryFor(prefs, { group: null, urgent: false }, now).holdUntil?.toISOString()).to.equal("2026-11-25T06:00:00.000Z");
    expect(deliveryFor(prefs, { group: "guardian_alerts", urgent: true }, now).holdUntil).to.equal(null);
  });

  it("takes IANA zone names only", () => {
    expect(canonicalTimeZone("europe/madrid")).to.equal("Europe/Madrid");
    expect(canonicalTimeZone("UTC")).to.equal("UTC");
    expect(canonicalTimeZone("America/Argentina/Buenos_Aires")).to.equal("America/Argentina/Buenos_Aires");
    for (const bad of ["+01:00", "Mars/Olympus", "", "Europe/Madrid "]) expect(canonicalTimeZone(bad), bad).to.equal(null);
  });
});
