// The webhooks' manifest (domain/module.ts).
import { z } from "zod";
import { defineEvent, isoTime } from "../events/define.js";
import { defineModule } from "../module.js";

/** A delivery job's kind: the attempts of up to MAX_ITEMS_PER_JOB events to one webhook. */
export const WEBHOOK_DELIVERY_JOB = "webhook.delivery";

export const webhooksModule = defineModule({
  name: "webhooks",
  errors: { INVALID_URL: 400, INVALID_EVENTS: 400, WEBHOOK_NOT_FOUND: 404, URL_EXISTS: 409, WEBHOOK_LIMIT_REACHED: 409 },
  tables: { Webhook: "own", WebhookDelivery: "own" },
  consumers: ["webhooks"],
  queueKinds: [WEBHOOK_DELIVERY_JOB],
  jobs: ["webhooks.prune-log"],
  routeTag: "Webhooks",
  events: {
    "webhook.failing": defineEvent({
      source: "service",
      description:
        "One of the user's webhooks turned failing (the sixth attempt of a delivery failed): told to its owner, never delivered to webhooks.",
      data: z.object({ userId: z.string(), webhookId: z.string(), url: z.string(), lastError: z.string(), failedAt: isoTime }),
    }),
  },
});
