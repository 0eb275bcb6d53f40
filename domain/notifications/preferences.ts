// Notification preferences: the defaults, how a partial change applies, and which channels a
// notification takes under them (quiet hours included). Pure functions; the service stores them.
//
// `push.enabled` and `email.enabled` are the user's `settings.notifications` and
// `settings.emailAlerts` (service-spec part 2), read from and written to the User row: one truth,
// so PATCH /v1/users/me and PATCH /v1/notifications/preferences never disagree. Everything else is
// the NotificationPreference row's JSON, absent fields taking their defaults.
import { z } from "zod";
import type { Channel, NotificationItem } from "./types.js";

export interface QuietHours {
  /** "HH:MM", 24-hour, in `timeZone`. */
  start: string;
  end: string;
  /** An IANA time zone name. */
  timeZone: string;
}

export interface Preferences {
  push: { enabled: boolean; loan_reminders: boolean; guardian_alerts: boolean; marketing: boolean };
  email: { enabled: boolean; loan_reminders: boolean; guardian_alerts: boolean; weekly_summary: boolean; marketing: boolean };
  sms: { enabled: boolean };
  quietHours: QuietHours | null;
}

/** A change: any group and field; `quietHours` whole, or null to clear it. */
export interface PreferencesPatch {
  push?: Partial<Preferences["push"]>;
  email?: Partial<Preferences["email"]>;
  sms?: Partial<Preferences["sms"]>;
  quietHours?: QuietHours | null;
}

/** What the User row holds (the two `enabled` switches). */
export interface UserSwitches {
  settingsNotifications: boolean;
  settingsEmailAlerts: boolean;
}

/** Everything but the two switches on the User row: the NotificationPreference row's JSON. */
export type StoredPreferences = Omit<Preferences, "push" | "email"> & {
  push: Omit<Preferences["push"], "enabled">;
  email: Omit<Preferences["email"], "enabled">;
};

export const DEFAULT_STORED: StoredPreferences = {
  push: { loan_reminders: true, guardian_alerts: true, marketing: false },
  email: { loan_reminders: true, guardian_alerts: true, weekly_summary: false, marketing: false },
  sms: { enabled: false },
  quietHours: null,
};

export const TIME_OF_DAY = /^([01]\d|2[0-3]):[0-5]\d$/;
/** An IANA name: letters first (Intl also takes offsets such as "+01:00", which are no zone). */
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/;

/**
 * The zone's name when it is an IANA time zone the runtime knows, else null. Spelled as Intl
 * spells it when only the case differs (`europe/madrid` -> `Europe/Madrid`); a link name
 * (`Asia/Calcutta`) is kept as given rather than replaced by another name.
 */
export function canonicalTimeZone(name: string): string | null {
  if (!ZONE_NAME.test(name)) return null;
  try {
    const resolved = new Intl.DateTimeFormat("en", { timeZone: name }).resolvedOptions().timeZone;
    return resolved.toLowerCase() === name.toLowerCase() ? resolved : name;
  } catch {
    return null;
  }
}

const flag = (fallback: boolean) => z.boolean().catch(fallback).default(fallback);
const quietHoursStored = z
  .object({ start: z.string().regex(TIME_OF_DAY), end: z.string().regex(TIME_OF_DAY), timeZone: z.string() })
  .refine((value) => value.start !== value.end && canonicalTimeZone(value.timeZone) !== null)
  .nullable();
/** The stored JSON, read leniently: a missing or unreadable field takes its default, so an older row never breaks a read. */
const storedSchema = z.object({
  push: z
    .object({
      loan_reminders: flag(DEFAULT_STORED.push.loan_reminders),
      guardian_alerts: flag(DEFAULT_STORED.push.guardian_alerts),
      marketing: flag(DEFAULT_STORED.push.marketing),
    })
    .catch({ ...DEFAULT_STORED.push })
    .default({ ...DEFAULT_STORED.push }),
  email: z
    .object({
      loan_reminders: flag(DEFAULT_STORED.email.loan_reminders),
      guardian_alerts: flag(DEFAULT_STORED.email.guardian_alerts),
      weekly_summary: flag(DEFAULT_STORED.email.weekly_summary),
      marketing: flag(DEFAULT_STORED.email.marketing),
    })
    .catch({ ...DEFAULT_STORED.email })
    .default({ ...DEFAULT_STORED.email }),
  sms: z
    .object({ enabled: flag(DEFAULT_STORED.sms.enabled) })
    .catch({ ...DEFAULT_STORED.sms })
    .default({ ...DEFAULT_STORED.sms }),
  quietHours: quietHoursStored.catch(null).default(null),
});

/** The stored JSON (or none) as preferences without the switches. */
export function readStored(json: unknown): StoredPreferences {
  const parsed = storedSchema.safeParse(json ?? {});
  return parsed.success ? parsed.data : structuredClone(DEFAULT_STORED);
}

/** The full preferences: the stored part with the User row's switches. */
export function preferencesOf(stored: StoredPreferences, user: UserSwitches): Preferences {
  return {
    push: { enabled: user.settingsNotifications, ...stored.push },
    email: { enabled: user.settingsEmailAlerts, ...stored.email },
    sms: { ...stored.sms },
    quietHours: stored.quietHours,
  };
}

/** Applies a change to the stored part (the switches go to the User row: `switchesOf`). */
export function applyPatch(stored: StoredPreferences, patch: PreferencesPatch): StoredPreferences {
  const { enabled: _push, ...push } = patch.push ?? {};
  const { enabled: _email, ...email } = patch.email ?? {};
  return {
    push: { ...stored.push, ...push },
    email: { ...stored.email, ...email },
    sms: { ...stored.sms, ...patch.sms },
    quietHours: patch.quietHours === undefined ? stored.quietHours : patch.quietHours,
  };
}

/** The User row's part of a change (undefined where it changes nothing). */
export function switchesOf(patch: PreferencesPatch): Partial<UserSwitches> {
  return {
    ...(patch.push?.enabled === undefined ? {} : { settingsNotifications: patch.push.enabled }),
    ...(patch.email?.enabled === undefined ? {} : { settingsEmailAlerts: patch.email.enabled }),
  };
}

/** Whether a change touches the stored part. */
export function touchesStored(patch: PreferencesPatch): boolean {
  const fields = (group: object | undefined) => Object.keys(group ?? {}).filter((key) => key !== "enabled").length;
  return fields(patch.push) + fields(patch.email) + Object.keys(patch.sms ?? {}).length > 0 || patch.quietHours !== undefined;
}

// A unit: quiet hours are minutes of the day, and may wrap around midnight.
const MINUTES_PER_DAY = 1_440;
const minutesOf = (time: string) => Number(time.slice(0, 2)) * 60 + Number(time.slice(3, 5));

/**
 * When the quiet hours around `now` end, or null when `now` is outside them. A window may span
 * midnight (22:00 to 07:00). The end is counted in minutes from `now`'s local time, so on a night
 * the clocks change it can be an hour off; a held push then goes an hour early or late.
 */
export function quietUntil(quietHours: QuietHours | null, now: Date): Date | null {
  if (!quietHours) return null;
  const parts = new Intl.DateTimeFormat("en-GB", {
    timeZone: quietHours.timeZone,
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  }).formatToParts(now);
  const part = (type: string) => Number(parts.find((p) => p.type === type)?.value ?? 0);
  const local = part("hour") * 60 + part("minute");
  const start = minutesOf(quietHours.start);
  const end = minutesOf(quietHours.end);
  const inside = start < end ? local >= start && local < end : local >= start || local < end;
  if (!inside) return null;
  const minutes = (end - local + MINUTES_PER_DAY) % MINUTES_PER_DAY;
  const startOfMinute = now.getTime() - (now.getTime() % 60_000);
  return new Date(startOfMinute + minutes * 60_000);
}

/** Where a notification goes besides the in-app feed. */
export interface Delivery {
  channels: Channel[];
  /**
   * Push and e-mail wait until then (the recipient's quiet hours); null: at once. An urgent
   * notification (guardian alerts, an overdue loan) is never held.
   */
  holdUntil: Date | null;
}

/**
 * The channels of a notification under the recipient's preferences: push and e-mail when the
 * channel is enabled and, for a grouped type, its group's switch is on; SMS (one switch, and a
 * cost per message) only for urgent notifications.
 */
export function deliveryFor(preferences: Preferences, item: Pick<NotificationItem, "group" | "urgent">, now: Date): Delivery {
  const channels: Channel[] = [];
  if (preferences.push.enabled && (item.group === null || preferences.push[item.group])) channels.push("push");
  if (preferences.email.enabled && (item.group === null || preferences.email[item.group])) channels.push("email");
  if (preferences.sms.enabled && item.urgent) channels.push("sms");
  return { channels, holdUntil: item.urgent ? null : quietUntil(preferences.quietHours, now) };
}
