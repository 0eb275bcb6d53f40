// The guardians' silent alert of a lock: for each `social_vault.locked` the indexer recorded
// (a duress lock through the API, or any lock sent to the vault by a wallet), one
// `social_vault.guardian_alert` event per guardian who is a platform user, addressed to that
// guardian. The owner's own feed gets nothing that a coercer holding the owner's phone could
// read as "help is coming"; the notifications issue delivers these events to the guardians.
import type { Logger } from "../../core/logger.js";
import type { Outbox, OutboxConsumer } from "../events/consumer.js";
import { domainEvent, recordEvents } from "../events/outbox.js";
import { liveUsersByWallet } from "../users/repo.js";
import { activeGuardiansOf } from "./repo.js";

export function createGuardianAlerts({
  outbox,
  logger,
}: {
  outbox: Pick<Outbox, "take" | "drain">;
  logger?: Pick<Logger, "info"> | undefined;
}) {
  const consumer: OutboxConsumer<"social_vault.locked"> = {
    name: "guardian-alerts",
    types: ["social_vault.locked"],
    async apply(tx, events) {
      for (const event of events) {
        const lockedAt = new Date(event.data.lockedAt);
        // Guardians active when it was locked (a lock drops the pending ones, and none is removed while locked).
        const guardians = await activeGuardiansOf(tx, event.data.vaultAddress, lockedAt);
        if (guardians.length === 0) continue;
        const users = await liveUsersByWallet(tx, guardians);
        const recorded = await recordEvents(
          tx,
          users.map((user) =>
            domainEvent({
              type: "social_vault.guardian_alert",
              userId: user.id,
              data: {
                vaultAddress: event.data.vaultAddress,
                vaultOwner: event.data.vaultOwner,
                guardianAddress: user.walletAddress,
                reason: "locked",
                lockedAt: event.data.lockedAt,
              },
              dedupeKey: `guardian-alert:${event.id}:${user.id}`,
              now: event.createdAt,
            }),
          ),
        );
        logger?.info(
          { vault: event.data.vaultAddress, guardians: guardians.length, alerted: recorded },
          "social vault locked: guardians alerted",
        );
      }
    },
  };
  return {
    /** The outbox consumer (the worker's producer and runners take its pages). */
    consumer,
    /** Records the alerts of these lock events at once (a lock's answer); returns how many locks it took. */
    async take(now: Date, eventIds: readonly string[]): Promise<number> {
      return (await outbox.take(consumer, eventIds, now)).applied;
    },
    /** What is pending, taken now rather than by the worker's page jobs (a process without workers: tests). */
    drain: (now: Date): Promise<number> => outbox.drain(consumer, now),
  };
}

export type GuardianAlerts = ReturnType<typeof createGuardianAlerts>;
