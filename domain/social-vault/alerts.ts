// The guardians' silent alert of a lock: for each `social_vault.locked` the indexer recorded
// (a duress lock through the API, or any lock sent to the vault by a wallet), one
// `social_vault.guardian_alert` event per guardian who is a platform user, addressed to that
// guardian. The owner's own feed gets nothing that a coercer holding the owner's phone could
// read as "help is coming"; the notifications issue delivers these events to the guardians.
import { getAddress } from "ethers";
import type { Logger } from "../../core/logger.js";
import type { Db } from "../db.js";
import { consumeEvents } from "../events/consumer.js";
import { domainEvent, recordEvents } from "../events/outbox.js";
import { withWallet } from "../users/repo.js";
import { activeGuardiansOf } from "./repo.js";

export function createGuardianAlerts({ db, logger }: { db: Db; logger?: Pick<Logger, "info"> | undefined }) {
  return {
    /** Records the alerts of the locks not yet taken; returns how many locks it took. */
    run(now: Date, onlyIds?: readonly string[]): Promise<number> {
      return consumeEvents(db, {
        consumer: "guardian-alerts",
        types: ["social_vault.locked"],
        now,
        onlyIds,
        async apply(tx, event) {
          const lockedAt = new Date(event.data.lockedAt);
          // Guardians active when it was locked (a lock drops the pending ones, and none is removed while locked).
          const guardians = await activeGuardiansOf(tx, event.data.vaultAddress, lockedAt);
          if (guardians.length === 0) return;
          const users = (
            await tx.user.findMany({
              where: { walletAddress: { in: guardians.map((address) => getAddress(address)) }, deletedAt: null },
              select: { id: true, walletAddress: true },
            })
          ).map(withWallet);
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
        },
      });
    },
  };
}

export type GuardianAlerts = ReturnType<typeof createGuardianAlerts>;
