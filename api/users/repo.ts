import { randomUUID } from "node:crypto";
import type { Database } from "../../core/db.js";
import type { Activity, Plan, User } from "../../generated/prisma/client.js";

export type UserRecord = User;
export type ActivityRecord = Activity;
export type { Plan };

type Db = Pick<Database, "prisma">;

export interface NewUser {
  subject: string;
  email: string | undefined;
  displayName: string;
  now: Date;
  /** Address of the managed wallet at the index the database assigns. */
  walletAddressOf(index: number): string;
}

export interface SettingsPatch {
  displayName?: string;
  settingsNotifications?: boolean;
  settingsEmailAlerts?: boolean;
  settingsLanguage?: string;
}

function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string })?.code === "P2002";
}

/** The only place user rows are read and written. */
export function createUsersRepo({ db }: { db: Db }) {
  const { prisma } = db;
  return {
    findById: (id: string) => prisma.user.findUnique({ where: { id } }),
    findBySubject: (subject: string) => prisma.user.findUnique({ where: { subject } }),

    /**
     * Creates the user and its managed wallet address in one transaction. Two first
     * requests racing for one subject: the loser's insert violates the unique subject and
     * it reads the winner's row.
     */
    async create(input: NewUser): Promise<UserRecord> {
      try {
        return await prisma.$transaction(async (tx) => {
          const created = await tx.user.create({
            data: {
              id: `usr_${randomUUID().replaceAll("-", "")}`,
              subject: input.subject,
              email: input.email ?? null,
              displayName: input.displayName,
              createdAt: input.now,
              updatedAt: input.now,
            },
          });
          return tx.user.update({ where: { id: created.id }, data: { walletAddress: input.walletAddressOf(created.walletIndex) } });
        });
      } catch (error) {
        if (isUniqueViolation(error)) {
          const existing = await prisma.user.findUnique({ where: { subject: input.subject } });
          if (existing) return existing;
        }
        throw error;
      }
    },

    update: (id: string, patch: SettingsPatch, now: Date) => prisma.user.update({ where: { id }, data: { ...patch, updatedAt: now } }),

    setPlan: (id: string, plan: Plan, now: Date) => prisma.user.update({ where: { id }, data: { plan, updatedAt: now } }),

    /** Marks the account deleted at once and revokes its API keys in the same transaction. */
    markDeleted: (id: string, now: Date, erasureAt: Date) =>
      prisma.$transaction([
        prisma.user.update({ where: { id }, data: { deletedAt: now, deletionScheduledFor: erasureAt, updatedAt: now } }),
        prisma.apiKey.updateMany({ where: { userId: id, revokedAt: null }, data: { revokedAt: now } }),
      ]),

    async listActivity(userId: string, page: { limit: number; offset: number; type?: string }) {
      const where = { userId, ...(page.type ? { type: page.type } : {}) };
      const [rows, total] = await prisma.$transaction([
        prisma.activity.findMany({ where, orderBy: [{ createdAt: "desc" }, { id: "desc" }], take: page.limit, skip: page.offset }),
        prisma.activity.count({ where }),
      ]);
      return { rows, total };
    },

    allActivity: (userId: string) => prisma.activity.findMany({ where: { userId }, orderBy: [{ createdAt: "desc" }, { id: "desc" }] }),

    addActivity: (entry: { userId: string; type: string; description: string; xpEarned: number; now: Date }) =>
      prisma.$transaction([
        prisma.activity.create({
          data: {
            id: `act_${randomUUID().replaceAll("-", "")}`,
            userId: entry.userId,
            type: entry.type,
            description: entry.description,
            xpEarned: entry.xpEarned,
            createdAt: entry.now,
          },
        }),
        prisma.user.update({ where: { id: entry.userId }, data: { xp: { increment: entry.xpEarned } } }),
      ]),
  };
}

export type UsersRepo = ReturnType<typeof createUsersRepo>;
