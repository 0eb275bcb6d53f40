// The notifications' manifest (domain/module.ts).
import { defineModule } from "../module.js";

/** A notification's push, through Expo. */
export const PUSH_JOB = "notification.push";
/** A notification's e-mail, over SMTP. */
export const EMAIL_JOB = "notification.email";
/** One user's weekly summary e-mail. */
export const WEEKLY_SUMMARY_JOB = "notification.weekly-summary";
/** A notification held to a later time (the end of quiet hours), written then. */
export const SCHEDULED_JOB = "notification.scheduled";

export const notificationsModule = defineModule({
  name: "notifications",
  errors: { NOTIFICATION_NOT_FOUND: 404, INVALID_TOKEN: 400 },
  tables: { Notification: "own", NotificationPreference: "own", PushDevice: "own" },
  consumers: ["notifications"],
  queueKinds: [PUSH_JOB, EMAIL_JOB, WEEKLY_SUMMARY_JOB, SCHEDULED_JOB],
  jobs: ["notifications.weekly-summary"],
  routeTag: "Notifications",
});
