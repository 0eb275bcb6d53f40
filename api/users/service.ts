import type { JWTPayload } from "jose";
import type { Clock } from "../../core/clock.js";
import type { ManagedWallets } from "../../core/wallets.js";
import type { ApiKeysRepo } from "../api-keys/repo.js";
import { AppError } from "../http/errors.js";
import type { chainLoansOf } from "../loans/records.js";
import type { GuardianView } from "../social-vault/guardians.js";
import type { vaultHistoryOf } from "../vault/records.js";
import { BADGE_BY_ID } from "../xp/badges.js";
import { levelFor } from "../xp/levels.js";
import type { ActivityRecord, Plan, UserRecord, UsersRepo } from "./repo.js";
import type { ACTIVITY_TYPES } from "./schemas.js";

/** Personal data is erased this long after DELETE /users/me (spec part 8: within 30 days). */
export const DELETION_GRACE_DAYS = 30;
const DAY_MS = 86_400_000;

export interface UsersServiceDeps {
  repo: UsersRepo;
  apiKeys: Pick<ApiKeysRepo, "listAllForUser">;
  wallets: Pick<ManagedWallets, "addressOf">;
  clock: Pick<Clock, "now">;
  /** The user's records on chain, read from the indexer's mirror. */
  chainRecords: {
    guardiansOf(ownerWallet: string, now: Date): Promise<GuardianView[]>;
    loansOf(borrowerWallet: string): ReturnType<typeof chainLoansOf>;
    vaultHistoryOf(ownerWallet: string): ReturnType<typeof vaultHistoryOf>;
  };
}

function displayNameFrom(claims: JWTPayload): string {
  const name = typeof claims.name === "string" ? claims.name.trim() : "";
  if (name) return name.slice(0, 50);
  const email = typeof claims.email === "string" ? claims.email : "";
  const local = email.split("@")[0]?.trim();
  return local ? local.slice(0, 50) : "New user";
}

function privateView(user: UserRecord) {
  return {
    id: user.id,
    email: user.email ?? "",
    displayName: user.displayName,
    walletAddress: user.walletAddress ?? "",
    trustScore: user.trustScore,
    level: levelFor(user.xp).level,
    xp: user.xp,
    plan: user.plan,
    createdAt: user.createdAt.toISOString(),
    settings: {
      notifications: user.settingsNotifications,
      emailAlerts: user.settingsEmailAlerts,
      language: user.settingsLanguage,
      publicTrustScore: user.trustScorePublic,
    },
  };
}

function publicView(user: UserRecord, badges: string[]) {
  return {
    id: user.id,
    displayName: user.displayName,
    walletAddress: user.walletAddress ?? "",
    trustScore: user.trustScore,
    level: levelFor(user.xp).level,
    badges,
    createdAt: user.createdAt.toISOString(),
  };
}

function activityView(entry: ActivityRecord) {
  return {
    id: entry.id,
    type: entry.type as (typeof ACTIVITY_TYPES)[number],
    description: entry.description,
    xpEarned: entry.xpEarned,
    timestamp: entry.createdAt.toISOString(),
  };
}

export function createUsersService({ repo, apiKeys, wallets, clock, chainRecords }: UsersServiceDeps) {
  /** A user that exists and is not deleted, or USER_NOT_FOUND. */
  async function existing(userId: string): Promise<UserRecord> {
    const user = await repo.findById(userId);
    if (!user || user.deletedAt) throw new AppError("USER_NOT_FOUND", "User not found");
    return user;
  }

  return {
    privateView,
    publicView,

    /** Just-in-time provisioning: the first verified token of a subject creates its user. */
    async userForToken(claims: JWTPayload & { sub: string }): Promise<UserRecord> {
      const found = await repo.findBySubject(claims.sub);
      if (found) return found;
      const email = typeof claims.email === "string" && claims.email.length <= 254 ? claims.email : undefined;
      return repo.create({
        subject: claims.sub,
        email,
        displayName: displayNameFrom(claims),
        now: clock.now(),
        walletAddressOf: (index) => wallets.addressOf(index),
      });
    },

    async getPublic(userId: string) {
      const user = await existing(userId);
      return publicView(
        user,
        (await repo.badgesOf(user.id)).map((badge) => badge.badgeId),
      );
    },

    async updateMe(
      user: UserRecord,
      body: {
        displayName?: string;
        settings?: { notifications?: boolean; emailAlerts?: boolean; language?: string; publicTrustScore?: boolean };
      },
    ) {
      const updated = await repo.update(
        user.id,
        {
          displayName: body.displayName,
          settingsNotifications: body.settings?.notifications,
          settingsEmailAlerts: body.settings?.emailAlerts,
          settingsLanguage: body.settings?.language,
          trustScorePublic: body.settings?.publicTrustScore,
        },
        clock.now(),
      );
      return {
        id: updated.id,
        displayName: updated.displayName,
        settings: privateView(updated).settings,
        updatedAt: updated.updatedAt.toISOString(),
      };
    },

    async xp(userId: string) {
      const user = await existing(userId);
      const badges = (await repo.badgesOf(user.id)).map((badge) => ({
        id: badge.badgeId,
        name: BADGE_BY_ID.get(badge.badgeId)?.name ?? badge.badgeId,
        earnedAt: badge.earnedAt.toISOString(),
      }));
      return { userId: user.id, xp: user.xp, ...levelFor(user.xp), badges };
    },

    async activity(user: UserRecord, page: { limit: number; offset: number; type?: string }) {
      const { rows, total } = await repo.listActivity(user.id, page);
      return {
        data: rows.map(activityView),
        pagination: { total, limit: page.limit, offset: page.offset, hasMore: page.offset + rows.length < total },
      };
    },

    /** The guardians of the user's social vault, from the chain mirror (empty without a vault). */
    async guardians(user: UserRecord): Promise<GuardianView[]> {
      return user.walletAddress ? chainRecords.guardiansOf(user.walletAddress, clock.now()) : [];
    },

    async exportAll(user: UserRecord) {
      const wallet = user.walletAddress;
      const [activity, keys, badges, loans, vaultHistory, guardians] = await Promise.all([
        repo.allActivity(user.id),
        apiKeys.listAllForUser(user.id),
        repo.badgesOf(user.id),
        wallet ? chainRecords.loansOf(wallet) : [],
        wallet ? chainRecords.vaultHistoryOf(wallet) : [],
        wallet ? chainRecords.guardiansOf(wallet, clock.now()) : [],
      ]);
      return {
        profile: { ...privateView(user), updatedAt: user.updatedAt.toISOString(), badges: badges.map((badge) => badge.badgeId) },
        activity: activity.map(activityView),
        loans,
        vaultHistory,
        guardians,
        apiKeys: keys.map((key) => ({
          id: key.id,
          name: key.name,
          prefix: key.prefix,
          createdAt: key.createdAt.toISOString(),
          lastUsedAt: key.lastUsedAt?.toISOString() ?? null,
          revokedAt: key.revokedAt?.toISOString() ?? null,
        })),
        exportedAt: clock.now().toISOString(),
      };
    },

    /** The account is unusable from now on; personal data is erased at deletionDate. */
    async deleteMe(user: UserRecord): Promise<Date> {
      const now = clock.now();
      const deletionDate = new Date(now.getTime() + DELETION_GRACE_DAYS * DAY_MS);
      await repo.markDeleted(user.id, now, deletionDate);
      return deletionDate;
    },

    async setPlan(userId: string, plan: Plan) {
      const user = await existing(userId);
      const updated = await repo.setPlan(user.id, plan, clock.now());
      return { userId: updated.id, plan: updated.plan };
    },
  };
}

export type UsersService = ReturnType<typeof createUsersService>;
