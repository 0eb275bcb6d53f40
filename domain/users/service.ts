import { getAddress } from "ethers";
import type { JWTPayload } from "jose";
import { type Clock, DAY_MS } from "../../core/clock.js";
import { plainText, shortAddress } from "../../core/text.js";
import type { ManagedWallets } from "../../core/wallets.js";
import type { ApiKeysRepo } from "../api-keys/repo.js";
import { AppError } from "../errors.js";
import { exportView, type LoansRepo } from "../loans/repo.js";
import type { GuardianView } from "../social-vault/repo.js";
import type { SocialVaultExport } from "../social-vault/views.js";
import type { VaultRepo } from "../vault/repo.js";
import { levelFor } from "../xp/levels.js";
import type { XpService } from "../xp/service.js";
import type { Plan, UserRecord, UsersRepo } from "./repo.js";

/** Personal data is erased this long after DELETE /users/me (spec part 8: within 30 days). */
export const DELETION_GRACE_DAYS = 30;

export interface UsersServiceDeps {
  repo: UsersRepo;
  apiKeys: Pick<ApiKeysRepo, "listAllForUser">;
  wallets: Pick<ManagedWallets, "addressOf">;
  clock: Pick<Clock, "now">;
  xp: Pick<XpService, "badgeIdsOf" | "allActivity">;
  /** The user's records on chain, read from the indexer's mirror. */
  loans: Pick<LoansRepo, "loansOf">;
  vault: Pick<VaultRepo, "historyOf">;
  guardiansOf(ownerWallet: string, now: Date): Promise<GuardianView[]>;
  /** The export's social vault part (domain/social-vault/views.ts). */
  socialVaultOf(wallet: string, now: Date): Promise<SocialVaultExport>;
}

/**
 * A claim's text as stored: well-formed Unicode without control characters (U+0000 cannot be
 * stored at all), so a provider's odd claim never locks its user out.
 */
function claimText(value: unknown): string {
  return typeof value === "string" ? plainText(value) : "";
}

function displayNameFrom(claims: JWTPayload): string {
  const name = claimText(claims.name);
  if (name) return name.slice(0, 50);
  const local = claimText(claims.email).split("@")[0]?.trim();
  return local ? local.slice(0, 50) : "New user";
}

/**
 * The subject of an account whose wallet is its user's own (signed in with it, SIWE): the address,
 * lower-case, under a prefix no identity provider's token may carry (api/http/auth.ts refuses it).
 */
export const OWN_WALLET_SUBJECT = "siwe:";
export const ownWalletSubject = (address: string) => `${OWN_WALLET_SUBJECT}${address.toLowerCase()}`;

function privateView(user: UserRecord) {
  return {
    id: user.id,
    email: user.email ?? "",
    displayName: user.displayName,
    walletAddress: user.walletAddress ?? "",
    custody: user.custody,
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

/** Accounts and profiles: provisioning, views, settings, export and deletion. */
export function createUsersService({ repo, apiKeys, wallets, clock, xp, loans, vault, guardiansOf, socialVaultOf }: UsersServiceDeps) {
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
      const text = claimText(claims.email);
      const email = text && text.length <= 254 ? text : undefined;
      return repo.create({
        subject: claims.sub,
        email,
        displayName: displayNameFrom(claims),
        now: clock.now(),
        wallet: { managed: (index) => wallets.addressOf(index) },
      });
    },

    /** The account of a wallet its user signed in with: found by the address, made self-custody at its first sign-in. */
    async ownWalletAccount(address: string): Promise<UserRecord> {
      const subject = ownWalletSubject(address);
      const found = await repo.findBySubject(subject);
      if (found) return found;
      if (await repo.linkOf(address)) {
        throw new AppError("CONFLICT", "This wallet is linked to an account that signs in with its identity provider: sign in there", {
          field: "message",
          reason: "a linked wallet",
        });
      }
      const now = clock.now();
      return repo.create({ subject, email: undefined, displayName: shortAddress(address), now, wallet: { own: address } });
    },

    /**
     * The account's wallets (D-119): its managed one and those it linked, with the one chosen. An
     * account of a wallet (signed in with it) has that wallet alone.
     */
    async wallets(user: UserRecord) {
      const linked = await repo.linkedWallets(user.id);
      const first = ownWalletSubjectOf(user)
        ? { address: user.walletAddress, custody: "self" as const, linkedAt: null }
        : { address: wallets.addressOf(user.walletIndex), custody: "managed" as const, linkedAt: null };
      return [
        first,
        ...linked.map((link) => ({ address: link.address, custody: "self" as const, linkedAt: link.linkedAt.toISOString() })),
      ].map((wallet) => ({ ...wallet, chosen: wallet.address === user.walletAddress }));
    },

    /** Links a wallet the account proved it holds (a Sign-In with Ethereum message it signed). */
    async linkWallet(user: UserRecord, address: string) {
      if (ownWalletSubjectOf(user)) throw walletAccount();
      const link = await repo.linkWallet(user.id, address, clock.now());
      return {
        address: link.address,
        custody: "self" as const,
        linkedAt: link.linkedAt.toISOString(),
        chosen: link.address === user.walletAddress,
      };
    },

    /** The wallet `address` of the account as it would be chosen: its managed one, or one it linked; else 400. */
    async walletToChoose(user: UserRecord, address: string): Promise<{ walletAddress: string; custody: "managed" | "self" }> {
      if (ownWalletSubjectOf(user)) throw walletAccount();
      const target = getAddress(address);
      if (target === wallets.addressOf(user.walletIndex)) return { walletAddress: target, custody: "managed" };
      const link = await repo.linkOf(target);
      if (link?.userId !== user.id) {
        throw new AppError("VALIDATION_ERROR", "Not one of your wallets: link it first (POST /v1/users/me/wallets)", {
          field: "address",
          reason: "not one of your wallets",
        });
      }
      return { walletAddress: target, custody: "self" };
    },

    chooseWallet: (user: UserRecord, wallet: { walletAddress: string; custody: "managed" | "self" }) =>
      repo.chooseWallet(user.id, wallet, clock.now()),

    async getPublic(userId: string) {
      const user = await existing(userId);
      return publicView(user, await xp.badgeIdsOf(user.id));
    },

    async updateMe(
      user: UserRecord,
      body: {
        displayName?: string;
        settings?: { notifications?: boolean; emailAlerts?: boolean; language?: string; publicTrustScore?: boolean };
      },
    ) {
      const changes = [
        body.displayName,
        body.settings?.notifications,
        body.settings?.emailAlerts,
        body.settings?.language,
        body.settings?.publicTrustScore,
      ];
      // Nothing to change: the current values, with no write (and no new updatedAt).
      const updated = changes.every((value) => value === undefined)
        ? user
        : await repo.update(
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

    /** The guardians of the user's social vault, from the chain mirror (empty without a vault). */
    async guardians(user: UserRecord): Promise<GuardianView[]> {
      return user.walletAddress ? guardiansOf(user.walletAddress, clock.now()) : [];
    },

    async exportAll(user: UserRecord) {
      const wallet = user.walletAddress;
      const [activity, keys, badges, loanRecords, vaultHistory, guardians, socialVault] = await Promise.all([
        xp.allActivity(user.id),
        apiKeys.listAllForUser(user.id),
        xp.badgeIdsOf(user.id),
        wallet ? loans.loansOf(user.id, wallet) : [],
        wallet ? vault.historyOf(wallet) : [],
        wallet ? guardiansOf(wallet, clock.now()) : [],
        wallet ? socialVaultOf(wallet, clock.now()) : null,
      ]);
      return {
        profile: { ...privateView(user), updatedAt: user.updatedAt.toISOString(), badges },
        activity,
        loans: loanRecords.map((row) => exportView(row, clock.now())),
        vaultHistory,
        guardians,
        socialVault,
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

/** Whether the account is a wallet's own (signed in with it): its wallet is its identity. */
const ownWalletSubjectOf = (user: Pick<UserRecord, "subject">) => user.subject.startsWith("siwe:");

const walletAccount = () =>
  new AppError("CONFLICT", "This account is its wallet's own (signed in with it): it has no other wallet", {
    field: "address",
    reason: "a wallet's account",
  });
