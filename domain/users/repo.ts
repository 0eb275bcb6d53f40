import { randomUUID } from "node:crypto";
import { getAddress } from "ethers";
import type { Clock } from "../../core/clock.js";
import { createTtlCache } from "../../core/ttl-cache.js";
import type { Plan, User } from "../../generated/prisma/client.js";
import type { Db, Tx } from "../db.js";
import { AppError } from "../errors.js";

/**
 * A user as the services see them: provisioned, so with the managed wallet `create` gives every
 * user in the transaction that creates them (the column is nullable only because the wallet's
 * index comes from the insert).
 */
export type UserRecord = User & { walletAddress: string };

/** A user row (or part of one) with its wallet; a row without one is not a user the service created. */
export function withWallet<U extends Pick<User, "id" | "walletAddress">>(user: U): U & { walletAddress: string } {
  if (!user.walletAddress) throw new Error(`user ${user.id} has no managed wallet`);
  return user as U & { walletAddress: string };
}
export type { Plan };

/** The users of these wallets who have not asked for their account's deletion, in the caller's transaction (or the client). */
export async function liveUsersByWallet(db: Tx, wallets: readonly string[]) {
  const users = await db.user.findMany({
    where: { walletAddress: { in: wallets.map((wallet) => getAddress(wallet)) }, deletedAt: null },
    select: { id: true, displayName: true, walletAddress: true },
  });
  return users.map(withWallet);
}

/** The HD index of the managed wallet at `address` (stored checksummed), deleted users' too; null when no user has it, or its user holds it. */
export async function walletIndexAt(db: Tx, address: string): Promise<number | null> {
  const user = await db.user.findUnique({ where: { walletAddress: getAddress(address) }, select: { walletIndex: true, custody: true } });
  // A wallet its user holds has an index of no key.
  return user?.custody === "managed" ? user.walletIndex : null;
}

/** A user's row, fresh (never the cache's), in the caller's transaction or the client's. */
export async function freshUser(db: Tx, userId: string): Promise<UserRecord> {
  return withWallet(await db.user.findUniqueOrThrow({ where: { id: userId } }));
}

export interface NewUser {
  subject: string;
  email: string | undefined;
  displayName: string;
  now: Date;
  /** The wallet: the managed one at the index the database assigns, or the user's own (self-custody, signed in with it). */
  wallet: { managed(index: number): string } | { own: string };
}

export interface SettingsPatch {
  displayName?: string;
  settingsNotifications?: boolean;
  settingsEmailAlerts?: boolean;
  settingsLanguage?: string;
  trustScorePublic?: boolean;
}

/**
 * How long this process serves a user row from memory. Every write path of this process
 * drops the row at once; writes made by another process (a second API process, the worker)
 * are seen within this time. See docs/decisions.md, "Authenticated reads are served from memory".
 */
export const USER_CACHE_TTL_MS = 2_000;
/** Users kept in the cache at most: a bound on the process's memory, far above the users active within USER_CACHE_TTL_MS. */
const USER_CACHE_MAX = 50_000;

export interface UsersRepoDeps {
  db: Db;
  /** With a clock, rows are cached per process (service-clock TTL); without, every read queries. */
  clock?: Pick<Clock, "now">;
}

function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string })?.code === "P2002";
}

/** The only place user rows are read and written. */
export function createUsersRepo({ db, clock }: UsersRepoDeps) {
  const { prisma } = db;
  const nowMs = () => (clock ? clock.now().getTime() : 0);
  const ttlMs = clock ? USER_CACHE_TTL_MS : 0;
  const byId = createTtlCache<string, UserRecord>({ max: USER_CACHE_MAX, ttlMs, nowMs });
  // A subject's user id never changes once created, so this map only needs LRU bounds.
  const idBySubject = createTtlCache<string, string>({ max: USER_CACHE_MAX, ttlMs: clock ? Number.MAX_SAFE_INTEGER : 0, nowMs });

  const findById = (id: string): Promise<UserRecord | null> =>
    byId
      .load(id, async () => {
        const user = await prisma.user.findUnique({ where: { id } });
        return user ? withWallet(user) : undefined;
      })
      .then((user) => user ?? null);

  /** Drops the cached row; every write to a user's row calls it (after its transaction). */
  const invalidate = (id: string) => {
    byId.delete(id);
  };

  return {
    findById,
    invalidate,
    async findBySubject(subject: string): Promise<UserRecord | null> {
      const id = idBySubject.get(subject);
      if (id) return findById(id);
      const row = await prisma.user.findUnique({ where: { subject } });
      if (!row) return null;
      const user = withWallet(row);
      idBySubject.set(subject, user.id);
      byId.set(user.id, user);
      return user;
    },

    /**
     * Creates the user and its managed wallet address in one transaction. Two first
     * requests racing for one subject: the loser's insert violates the unique subject and
     * it reads the winner's row.
     */
    async create(input: NewUser): Promise<UserRecord> {
      try {
        return await prisma.$transaction(async (tx) => {
          const own = "own" in input.wallet ? getAddress(input.wallet.own) : undefined;
          const created = await tx.user.create({
            data: {
              id: `usr_${randomUUID().replaceAll("-", "")}`,
              subject: input.subject,
              email: input.email ?? null,
              displayName: input.displayName,
              createdAt: input.now,
              updatedAt: input.now,
              ...(own ? { walletAddress: own, custody: "self" } : {}),
            },
          });
          if ("own" in input.wallet) return withWallet(created);
          return withWallet(
            await tx.user.update({ where: { id: created.id }, data: { walletAddress: input.wallet.managed(created.walletIndex) } }),
          );
        });
      } catch (error) {
        if (isUniqueViolation(error)) {
          const existing = await prisma.user.findUnique({ where: { subject: input.subject } });
          if (existing) return withWallet(existing);
          // Another account's wallet (a managed one, or an earlier account of this address).
          if ("own" in input.wallet) throw new AppError("CONFLICT", "This address is the wallet of another account");
        }
        throw error;
      }
    },

    /**
     * Links `address`, which the account proved it holds (D-119), to the account: once (linking it
     * again answers the same link); CONFLICT where it is another account's wallet or link.
     */
    async linkWallet(userId: string, address: string, now: Date) {
      const checksummed = getAddress(address);
      const taken = () =>
        new AppError("CONFLICT", "This wallet is another account's", { field: "message", reason: "another account's wallet" });
      try {
        return await prisma.$transaction(async (tx) => {
          const owner = await tx.user.findFirst({
            where: { OR: [{ walletAddress: checksummed }, { subject: `siwe:${checksummed.toLowerCase()}` }] },
            select: { id: true },
          });
          if (owner && owner.id !== userId) throw taken();
          const linked = await tx.linkedWallet.findUnique({ where: { address: checksummed } });
          if (linked && linked.userId !== userId) throw taken();
          return linked ?? (await tx.linkedWallet.create({ data: { address: checksummed, userId, linkedAt: now } }));
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw taken();
        throw error;
      }
    },

    linkedWallets: (userId: string) => prisma.linkedWallet.findMany({ where: { userId }, orderBy: { linkedAt: "asc" } }),
    linkOf: (address: string) => prisma.linkedWallet.findUnique({ where: { address: getAddress(address) } }),

    /** Makes `walletAddress` (the managed one, or a linked one the user holds) the account's wallet. */
    async chooseWallet(id: string, wallet: { walletAddress: string; custody: "managed" | "self" }, now: Date) {
      try {
        return withWallet(await prisma.user.update({ where: { id }, data: { ...wallet, updatedAt: now } }));
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError("CONFLICT", "This wallet is another account's");
        throw error;
      } finally {
        invalidate(id);
      }
    },

    async update(id: string, patch: SettingsPatch, now: Date) {
      try {
        return withWallet(await prisma.user.update({ where: { id }, data: { ...patch, updatedAt: now } }));
      } finally {
        invalidate(id);
      }
    },

    async setPlan(id: string, plan: Plan, now: Date) {
      try {
        return withWallet(await prisma.user.update({ where: { id }, data: { plan, updatedAt: now } }));
      } finally {
        invalidate(id);
      }
    },

    /** Marks the account deleted at once and revokes its API keys in the same transaction. */
    async markDeleted(id: string, now: Date, erasureAt: Date) {
      try {
        return await prisma.$transaction([
          prisma.user.update({ where: { id }, data: { deletedAt: now, deletionScheduledFor: erasureAt, updatedAt: now } }),
          prisma.apiKey.updateMany({ where: { userId: id, revokedAt: null }, data: { revokedAt: now } }),
        ]);
      } finally {
        invalidate(id);
      }
    },
  };
}

export type UsersRepo = ReturnType<typeof createUsersRepo>;

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
