// The channel deliveries of a written notification, one queue job per notification and channel
// (domain/jobs/): `notification.push` through Expo to every device of the recipient, and
// `notification.email` over SMTP. They run outside any transaction and read the recipient as
// they are when the job runs, so an account scheduled for deletion, or a channel switched off
// while a push waited out quiet hours, gets nothing. SMS is a stored preference only: no SMS
// provider is wired, so nothing is sent (docs/decisions.md D-75).
import type { Logger } from "../../core/logger.js";
import { PermanentJobError, RetryableJobError } from "../jobs/queue.js";
import type { EnqueueInput } from "../jobs/types.js";
import type { EmailSender } from "./channels/email.js";
import { EmailSendError } from "./channels/email.js";
import { EXPO_MAX_MESSAGES, type ExpoPush, PushRequestError } from "./channels/push.js";
import { EMAIL_JOB, PUSH_JOB } from "./module.js";
import type { NotificationsRepo } from "./repo.js";
import type { Written } from "./service.js";
import { languageOf, render } from "./templates.js";

/** Tries of one channel delivery before it is dead (about a day with the queue's backoff). */
export const DELIVERY_ATTEMPTS = 8;

/**
 * The jobs of written notifications' channels, held to the end of the recipient's quiet hours: one
 * per notification and channel, keyed so a repeated write queues nothing twice. SMS is a stored
 * preference only: no provider is wired (D-75).
 */
export function deliveryJobsOf(written: readonly Written[]): EnqueueInput[] {
  const kinds = { push: PUSH_JOB, email: EMAIL_JOB } as const;
  return written.flatMap(({ notification, delivery }) =>
    delivery.channels.flatMap((channel) =>
      channel === "sms"
        ? []
        : [
            {
              kind: kinds[channel],
              payload: { notificationId: notification.id },
              dedupeKey: `notification:${notification.id}:${channel}`,
              runAt: delivery.holdUntil ?? undefined,
              maxAttempts: DELIVERY_ATTEMPTS,
            },
          ],
    ),
  );
}

export interface DeliveryPayload {
  notificationId: string;
}

export interface WeeklySummaryPayload {
  userId: string;
  /** The week summed up, from `since` to `until` (ISO 8601, service clock). */
  since: string;
  until: string;
}

export function createNotificationDeliveries(deps: {
  repo: Pick<NotificationsRepo, "forDelivery" | "dropTokens" | "weekOf">;
  push: ExpoPush;
  email: EmailSender;
  logger?: Pick<Logger, "info" | "warn">;
}) {
  /** One e-mail; the SMTP server's lasting refusal (5xx) ends the job, anything else is retried. */
  async function sendEmail(message: { to: string; subject: string; text: string }) {
    try {
      await deps.email.send(message);
    } catch (error) {
      if (error instanceof EmailSendError && !error.retryable) throw new PermanentJobError(error.message, { cause: error });
      throw new RetryableJobError((error as Error).message, { cause: error });
    }
  }

  return {
    async push({ notificationId }: DeliveryPayload): Promise<void> {
      const found = await deps.repo.forDelivery(notificationId);
      if (!found?.user || found.user.deletedAt || !found.user.settingsNotifications) return;
      const { notification, tokens } = found;
      const gone: string[] = [];
      for (let i = 0; i < tokens.length; i += EXPO_MAX_MESSAGES) {
        const batch = tokens.slice(i, i + EXPO_MAX_MESSAGES);
        let tickets: Awaited<ReturnType<ExpoPush["send"]>>;
        try {
          tickets = await deps.push.send(
            batch.map((to) => ({
              to,
              title: notification.title,
              body: notification.body,
              data: { notificationId: notification.id, type: notification.type, ...notification.data },
              sound: "default" as const,
            })),
          );
        } catch (error) {
          if (error instanceof PushRequestError && !error.retryable) throw new PermanentJobError(error.message, { cause: error });
          const retryAfter = error instanceof PushRequestError ? error.retryAfterSeconds : undefined;
          throw new RetryableJobError((error as Error).message, {
            cause: error,
            ...(retryAfter === undefined ? {} : { retryAfterMs: retryAfter * 1_000 }),
          });
        }
        tickets.forEach((ticket, index) => {
          if (ticket.ok) return;
          if (ticket.deviceGone) gone.push(batch[index]!);
          else deps.logger?.warn({ notificationId, error: ticket.error }, "push refused for one device");
        });
      }
      // The provider's word that the app was uninstalled: the token is dropped, not retried.
      if (gone.length > 0) {
        const dropped = await deps.repo.dropTokens(gone);
        deps.logger?.info({ dropped }, "dropped push tokens of unregistered devices");
      }
    },

    /** The weekly summary e-mail of one user who asked for it: their week's notifications in their language. */
    async weeklySummary({ userId, since, until }: WeeklySummaryPayload): Promise<void> {
      const week = await deps.repo.weekOf(userId, new Date(since), new Date(until));
      const user = week.user;
      if (!user || user.deletedAt || !user.settingsEmailAlerts || !user.email) return;
      const language = languageOf(user.settingsLanguage);
      const highlights = week.titles.map((title) => `- ${title}`).join("\n");
      const text = render("weekly_summary", { count: week.count, unread: week.unread, highlights }, { language });
      await sendEmail({ to: user.email, subject: text.title, text: text.body });
    },

    async email({ notificationId }: DeliveryPayload): Promise<void> {
      const found = await deps.repo.forDelivery(notificationId);
      const user = found?.user;
      if (!found || !user || user.deletedAt || !user.settingsEmailAlerts || !user.email) return;
      await sendEmail({ to: user.email, subject: found.notification.title, text: found.notification.body });
    },
  };
}

export type NotificationDeliveries = ReturnType<typeof createNotificationDeliveries>;
