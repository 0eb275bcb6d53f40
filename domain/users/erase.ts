import type { Db } from "../db.js";

/** Accounts erased per transaction: keeps each transaction short. */
const ERASE_BATCH = 100;

/**
 * The erase job: blanks the personal data of every account whose `deletionScheduledFor` has
 * passed on the service clock (`now`), and deletes the rows that describe the person
 * (activity, badges, API keys, Trust Score inputs, modifiers and history, notifications, their
 * preferences and push devices). The row stays,
 * with its wallet index (never reassigned), its subject (so the identity can never be
 * provisioned again) and `erasedAt`; on-chain data cannot be erased. Idempotent: a worker
 * runs it hourly. Returns the ids erased; the caller drops them from user caches.
 */
export async function eraseDueAccounts(db: Db, now: Date): Promise<string[]> {
  const { prisma } = db;
  const erased: string[] = [];
  for (;;) {
    const due = await prisma.user.findMany({
      where: { deletionScheduledFor: { lte: now }, erasedAt: null },
      select: { id: true },
      orderBy: { id: "asc" },
      take: ERASE_BATCH,
    });
    if (due.length === 0) return erased;
    const ids = due.map((user) => user.id);
    await prisma.$transaction([
      prisma.activity.deleteMany({ where: { userId: { in: ids } } }),
      prisma.userBadge.deleteMany({ where: { userId: { in: ids } } }),
      prisma.apiKey.deleteMany({ where: { userId: { in: ids } } }),
      prisma.trustScoreInput.deleteMany({ where: { userId: { in: ids } } }),
      prisma.trustScoreModifier.deleteMany({ where: { userId: { in: ids } } }),
      prisma.trustScoreHistory.deleteMany({ where: { userId: { in: ids } } }),
      prisma.notification.deleteMany({ where: { userId: { in: ids } } }),
      prisma.notificationPreference.deleteMany({ where: { userId: { in: ids } } }),
      prisma.pushDevice.deleteMany({ where: { userId: { in: ids } } }),
      prisma.user.updateMany({
        where: { id: { in: ids } },
        data: {
          email: null,
          displayName: "Deleted user",
          settingsNotifications: false,
          settingsEmailAlerts: false,
          settingsLanguage: "en",
          trustScorePublic: false,
          erasedAt: now,
          updatedAt: now,
        },
      }),
    ]);
    erased.push(...ids);
  }
}
