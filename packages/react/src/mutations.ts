"use client";

// The writes an app needs first, as TanStack Query mutations on the provider's client. Each
// refreshes the reads it changes when it succeeds; each call gets its own Idempotency-Key from
// the SDK (kept across the SDK's retries), or the caller's (`idempotencyKey`).

import { type QueryKey, useMutation, useQueryClient } from "@tanstack/react-query";
import type { TrustMintClient, WalletSigner, WriteOptions } from "@trustmint/sdk";
import type { TrustMintHookError } from "./errors.js";
import { trustMintKeys as keys } from "./keys.js";
import { useTrustMint } from "./provider.js";

/** A mutation of `write`, invalidating `changes` (key prefixes) once it succeeded. */
function useWrite<Variables, Result>(
  write: (client: TrustMintClient, variables: Variables) => Promise<Result>,
  changes: readonly QueryKey[],
) {
  const client = useTrustMint();
  const queryClient = useQueryClient();
  return useMutation<Result, TrustMintHookError, Variables>({
    mutationFn: (variables) => write(client, variables),
    onSuccess: () => Promise.all(changes.map((queryKey) => queryClient.invalidateQueries({ queryKey }))).then(() => undefined),
  });
}

type Body<F extends (...args: never[]) => unknown> = Parameters<F>[0];
type C = TrustMintClient;
const key = (variables: WriteOptions) => (variables.idempotencyKey ? { idempotencyKey: variables.idempotencyKey } : undefined);
/** Splits the caller's idempotencyKey from a request's body. */
const split = <V extends WriteOptions>({ idempotencyKey, ...body }: V) => [body, key({ idempotencyKey })] as const;

/** What a change of money touches beyond its own area: the profile's XP and level, and the XP view. */
const REWARDS = [keys.profile(), keys.xpAll];
/** What the staking vault's balance moves: the Trust Score's volume, and so what the user may borrow. */
const CREDIT = [keys.trustScoreAll, keys.eligibility()];

export const useUpdateProfile = () =>
  useWrite((client, variables: Body<C["users"]["update"]> & WriteOptions) => client.users.update(...split(variables)), [keys.profile()]);

export const useVaultDeposit = () =>
  useWrite(
    (client, variables: Body<C["vault"]["deposit"]> & WriteOptions) => client.vault.deposit(...split(variables)),
    [keys.vaultAll, ...CREDIT, ...REWARDS],
  );

export const useVaultWithdraw = () =>
  useWrite(
    (client, variables: Body<C["vault"]["withdraw"]> & WriteOptions) => client.vault.withdraw(...split(variables)),
    [keys.vaultAll, ...CREDIT, ...REWARDS],
  );

export const useRequestLoan = () =>
  useWrite((client, variables: Body<C["loans"]["create"]> & WriteOptions) => client.loans.create(...split(variables)), [keys.loansAll]);

export const useRepayLoan = () =>
  useWrite(
    (client, { loanId, ...variables }: { loanId: string } & Parameters<C["loans"]["repay"]>[1] & WriteOptions) =>
      client.loans.repay(loanId, ...split(variables)),
    [keys.loansAll, keys.trustScoreAll, keys.vaultAll, ...REWARDS],
  );

export const useCancelLoan = () =>
  useWrite(
    (client, { loanId, ...variables }: { loanId: string } & WriteOptions) => client.loans.cancel(loanId, key(variables)),
    [keys.loansAll],
  );

export const useSocialVaultDeposit = () =>
  useWrite(
    (client, variables: Body<C["socialVault"]["deposit"]> & WriteOptions) => client.socialVault.deposit(...split(variables)),
    [keys.socialVaultAll],
  );

export const useSocialVaultInstantWithdrawal = () =>
  useWrite(
    (client, variables: Body<C["socialVault"]["withdrawInstant"]> & WriteOptions) =>
      client.socialVault.withdrawInstant(...split(variables)),
    [keys.socialVaultAll],
  );

export const useRequestSocialVaultWithdrawal = () =>
  useWrite(
    (client, variables: Body<C["socialVault"]["requestWithdrawal"]> & WriteOptions) =>
      client.socialVault.requestWithdrawal(...split(variables)),
    [keys.socialVaultAll],
  );

export const useCancelSocialVaultWithdrawal = () =>
  useWrite(
    (client, { withdrawalId, ...variables }: { withdrawalId: string } & WriteOptions) =>
      client.socialVault.cancelWithdrawal(withdrawalId, key(variables)),
    [keys.socialVaultAll],
  );

export const useExecuteSocialVaultWithdrawal = () =>
  useWrite(
    (client, { withdrawalId, ...variables }: { withdrawalId: string } & WriteOptions) =>
      client.socialVault.execute(withdrawalId, key(variables)),
    [keys.socialVaultAll],
  );

export const useMarkNotificationRead = () =>
  useWrite(
    (client, { notificationId, ...variables }: { notificationId: string } & WriteOptions) =>
      client.notifications.markRead(notificationId, key(variables)),
    [keys.notificationsAll],
  );

export const useMarkAllNotificationsRead = () =>
  useWrite((client, variables: WriteOptions = {}) => client.notifications.markAllRead(key(variables)), [keys.notificationsAll]);

/**
 * Signs the wallet's user in with Ethereum (one signature): answers the service's access token
 * and the account. `signer` is wagmi's wallet client (`useWalletClient().data`), any viem wallet
 * client, an EIP-1193 provider or an ethers signer. Give the app's client that token, and the same
 * signer as its `wallet`: the write hooks then have the wallet sign each write.
 */
export const useSignIn = () => {
  const client = useTrustMint();
  return useMutation<
    Awaited<ReturnType<C["auth"]["signIn"]>>,
    TrustMintHookError,
    { signer: WalletSigner } & NonNullable<Parameters<C["auth"]["signIn"]>[1]>
  >({
    mutationFn: ({ signer, ...app }) => client.auth.signIn(signer, app),
  });
};
