"use client";

// The reads an app needs first, as TanStack Query hooks on the provider's client: each answers
// part 2's shape (the SDK's types) under a key of trustMintKeys.

import { type QueryKey, type UseQueryOptions, useQuery } from "@tanstack/react-query";
import type { LoanEligibility, Notification, Pagination, User, UserXp, VaultPosition } from "@trustmint/sdk";
import { useEffect, useSyncExternalStore } from "react";
import type { TrustMintHookError } from "./errors.js";
import { trustMintKeys } from "./keys.js";
import type { LiveStatus } from "./live.js";
import { useLiveFeed, useTrustMint } from "./provider.js";

type Client = ReturnType<typeof useTrustMint>;

/**
 * TanStack's useQuery with the SDK's retries only (TanStack's own, 3 by default, would stack on
 * them: a failing read asked up to 16 times) and the SDK's error type.
 */
function useRead<T>(options: UseQueryOptions<T, TrustMintHookError, T, QueryKey>) {
  return useQuery<T, TrustMintHookError>({ retry: false, ...options });
}
type LoansQuery = NonNullable<Parameters<Client["loans"]["list"]>[0]>;
type NotificationsQuery = NonNullable<Parameters<Client["notifications"]["list"]>[0]>;

/** The signed-in user's profile (GET /v1/users/me). */
export function useProfile() {
  const client = useTrustMint();
  return useRead<User>({ queryKey: trustMintKeys.profile(), queryFn: () => client.users.me() });
}

/** The id of `userId`, else of the signed-in user (once the profile is in). */
function useUserId(userId: string | undefined): string | undefined {
  const profile = useProfile();
  return userId ?? profile.data?.id;
}

/** A user's XP, level and badges; the signed-in user's without `userId`. */
export function useXp(userId?: string) {
  const client = useTrustMint();
  const id = useUserId(userId);
  return useRead<UserXp>({ queryKey: trustMintKeys.xp(id), queryFn: () => client.users.xp(id!), enabled: id !== undefined });
}

/** A user's Trust Score; the signed-in user's without `userId`. */
export function useTrustScore(userId?: string) {
  const client = useTrustMint();
  const id = useUserId(userId);
  return useRead({ queryKey: trustMintKeys.trustScore(id), queryFn: () => client.trustScore.get(id!), enabled: id !== undefined });
}

/** Whether the signed-in user may borrow now, and how much. */
export function useLoanEligibility() {
  const client = useTrustMint();
  return useRead<LoanEligibility>({ queryKey: trustMintKeys.eligibility(), queryFn: () => client.loans.eligibility() });
}

/** A page of the signed-in user's loans (`status`, `limit`, `offset` as GET /v1/loans takes them). */
export function useLoans(query: LoansQuery = {}) {
  const client = useTrustMint();
  return useRead({
    queryKey: trustMintKeys.loans(query),
    queryFn: async () => {
      const page = await client.loans.list(query);
      return { data: page.data, pagination: page.pagination };
    },
  });
}

export function useLoan(loanId: string) {
  const client = useTrustMint();
  return useRead({ queryKey: trustMintKeys.loan(loanId), queryFn: () => client.loans.get(loanId) });
}

/** The signed-in user's staking vault position. */
export function useVaultPosition() {
  const client = useTrustMint();
  return useRead<VaultPosition>({ queryKey: trustMintKeys.vaultPosition(), queryFn: () => client.vault.position() });
}

export function useVaultStatus() {
  const client = useTrustMint();
  return useRead({ queryKey: trustMintKeys.vaultStatus(), queryFn: () => client.vault.status() });
}

/** The signed-in user's social vault configuration (isConfigured false before it is created). */
export function useSocialVaultConfig() {
  const client = useTrustMint();
  return useRead({ queryKey: trustMintKeys.socialVaultConfig(), queryFn: () => client.socialVault.config() });
}

/**
 * The social vault's open withdrawal requests. It waits for the configuration and asks only once
 * the vault exists (the API answers 404 SOCIAL_VAULT_NOT_FOUND before): until then it is idle,
 * with no data.
 */
export function usePendingWithdrawals() {
  const client = useTrustMint();
  const config = useSocialVaultConfig();
  return useRead({
    queryKey: trustMintKeys.pendingWithdrawals(),
    queryFn: () => client.socialVault.pendingWithdrawals(),
    enabled: config.data?.isConfigured === true,
  });
}

/** A page of notifications, with the unread count beside it; refreshed when the live feed brings a new one. */
export function useNotifications(query: NotificationsQuery = {}) {
  const client = useTrustMint();
  return useRead<{ data: Notification[]; pagination: Pagination; unreadCount: number }>({
    queryKey: trustMintKeys.notifications(query),
    queryFn: async () => {
      const page = await client.notifications.list(query);
      return { data: page.data, pagination: page.pagination, unreadCount: page.unreadCount };
    },
  });
}

/**
 * The unread notification count, kept live: while a component uses it, the provider's one
 * notification stream writes each new count into the cache. If the stream ends (another stream
 * of the account took its place), the count is polled every `pollMs` (default 30 s) instead.
 * `live: false` reads it once.
 */
export function useUnreadCount({ live = true, pollMs = 30_000 }: { live?: boolean; pollMs?: number } = {}) {
  const client = useTrustMint();
  const feed = useLiveFeed();
  useEffect(() => (live ? feed.subscribe() : undefined), [feed, live]);
  const status = useNotificationStream();
  return useRead<number>({
    queryKey: trustMintKeys.unreadCount(),
    queryFn: () => client.notifications.unreadCount(),
    refetchInterval: live && status.state === "ended" ? pollMs : false,
  });
}

/** The state of the provider's notification stream: idle, connecting, live, reconnecting (and why), or ended (and why). */
export function useNotificationStream(): LiveStatus {
  const feed = useLiveFeed();
  return useSyncExternalStore(feed.watch, feed.status, feed.status);
}
