import { z } from "zod";
import { canonicalTimeZone, TIME_OF_DAY } from "../../domain/notifications/preferences.js";
import { NOTIFICATION_TYPES } from "../../domain/notifications/types.js";
import { listQuery } from "../http/pagination.js";

// One schema per route part (service-spec part 4, Notifications): they validate, type the
// handlers and generate the OpenAPI document. Bodies are strict: an unknown group or field is
// 400 VALIDATION_ERROR naming it.

const isoDate = z.string().describe("ISO 8601 UTC timestamp");

export const notificationIdParams = z.object({
  notifId: z
    .string()
    .max(100)
    .describe("the notification's id (a UUID); any other value, like another user's id, is 404 NOTIFICATION_NOT_FOUND"),
});

export const notificationsQuery = listQuery({
  unread: z
    .enum(["true", "false"])
    .transform((value) => value === "true")
    .optional()
    .describe("true: only unread notifications; false: only read ones; absent: all"),
  type: z.enum(NOTIFICATION_TYPES).optional().describe("only notifications of this type"),
});

export const notification = z
  .object({
    id: z.string(),
    type: z
      .enum(NOTIFICATION_TYPES)
      .describe(
        "part 2's 13 types, and the extensions webhook_failing (one of your webhooks stopped receiving), payment_receipt (you paid a merchant), loan_refused (the pool refused your request at funding), payment_refunded (a merchant refunded your purchase) and transaction_reverted (a chain reorganisation removed what an earlier notification announced: data.notificationId names it, data.revertedType is its type)",
      ),
    title: z.string().describe("in the user's language (settings.language; English where no translation exists)"),
    body: z.string(),
    read: z.boolean(),
    data: z
      .record(z.string(), z.unknown())
      .describe("what the app needs to open the right screen; depends on the type (loanId, withdrawalId, vaultAddress, badgeId, ...)"),
    createdAt: isoDate,
  })
  .meta({ id: "Notification" });

export const listExtra = z.object({
  unreadCount: z.number().int().describe("your unread notifications, whatever the filter"),
});

export const unreadCountResponse = z.object({ unreadCount: z.number().int() });
export const readResponse = z.object({ id: z.string(), read: z.literal(true) });
export const readAllResponse = z.object({ markedRead: z.number().int().describe("how many were unread") });

/** The envelope of an answer that is a message only. */
export const messageOnly = z.object({});

const quietHours = z
  .strictObject({
    start: z.string().regex(TIME_OF_DAY, "must be a time HH:MM from 00:00 to 23:59").describe("HH:MM, 24-hour"),
    end: z.string().regex(TIME_OF_DAY, "must be a time HH:MM from 00:00 to 23:59").describe("HH:MM, 24-hour; may be past midnight"),
    timeZone: z
      .string()
      .max(64)
      .transform((name, context) => {
        const zone = canonicalTimeZone(name);
        if (zone === null) {
          context.addIssue({ code: "custom", message: "must be an IANA time zone name such as Europe/Madrid" });
          return z.NEVER;
        }
        return zone;
      })
      .describe("an IANA time zone name (Europe/Madrid, America/Mexico_City, UTC)"),
  })
  .refine((value) => value.start !== value.end, { message: "must differ from start", path: ["end"] })
  .describe(
    "Extension: push and SMS of notifications that are not urgent wait until the end of this window (e-mail does not; guardian alerts and overdue loans never wait). Times in notifications are shown in this zone.",
  );

const pushGroup = {
  enabled: z.boolean().describe("push notifications at all: the same switch as settings.notifications of PATCH /v1/users/me"),
  loan_reminders: z.boolean().describe("loans due soon and overdue"),
  guardian_alerts: z.boolean().describe("guardian requests, withdrawal approvals, locks of vaults you guard"),
  marketing: z.boolean(),
};
const emailGroup = {
  enabled: z.boolean().describe("e-mail notifications at all: the same switch as settings.emailAlerts of PATCH /v1/users/me"),
  loan_reminders: z.boolean(),
  guardian_alerts: z.boolean(),
  weekly_summary: z.boolean(),
  marketing: z.boolean(),
};
const smsGroup = { enabled: z.boolean().describe("SMS, for urgent notifications only") };

export const preferences = z
  .object({
    push: z.object(pushGroup),
    email: z.object(emailGroup),
    sms: z.object(smsGroup),
    quietHours: z
      .object({ start: z.string(), end: z.string(), timeZone: z.string() })
      .nullable()
      .describe("extension: the window in which notifications that are not urgent do not buzz; null when none"),
  })
  .meta({ id: "NotificationPreferences" });

export const preferencesPatch = z.strictObject({
  push: z.strictObject(pushGroup).partial().optional(),
  email: z.strictObject(emailGroup).partial().optional(),
  sms: z.strictObject(smsGroup).partial().optional(),
  quietHours: quietHours.nullable().optional().describe("the whole window, or null to remove it"),
});

export const registerBody = z.strictObject({
  token: z
    .string()
    .describe("the device's Expo push token, ExponentPushToken[...] or ExpoPushToken[...]; another format is 400 INVALID_TOKEN"),
  platform: z.enum(["ios", "android", "web"]),
  deviceId: z
    .string()
    .trim()
    .min(1)
    .max(200)
    .describe("your app's id of this device: one device id holds one token, a new registration replaces it"),
});
export const registerResponse = z.object({ registered: z.literal(true), deviceId: z.string() });

export const unregisterBody = z.strictObject({
  deviceId: z.string().trim().min(1).max(200).describe("as registered"),
});

export const testBody = z.strictObject({
  type: z.enum(["push", "email", "in_app"]).describe("the channel to test; every test also writes an in-app notification"),
});
