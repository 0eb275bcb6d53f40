"use client";

// @trustmint/react: a provider holding the TrustMint client, and TanStack Query hooks for the
// reads and writes an app needs first; writes refresh the reads they change, and the unread
// count stays live from the notification stream.
export type { TrustMintHookError } from "./errors.js";
export { trustMintKeys } from "./keys.js";
export type { LiveStatus } from "./live.js";
export {
  useCancelLoan,
  useCancelSocialVaultWithdrawal,
  useExecuteSocialVaultWithdrawal,
  useMarkAllNotificationsRead,
  useMarkNotificationRead,
  useRepayLoan,
  useRequestLoan,
  useRequestSocialVaultWithdrawal,
  useSignIn,
  useSocialVaultDeposit,
  useSocialVaultInstantWithdrawal,
  useUpdateProfile,
  useVaultDeposit,
  useVaultWithdraw,
} from "./mutations.js";
export { TrustMintProvider, useTrustMint } from "./provider.js";
export {
  useLoan,
  useLoanEligibility,
  useLoans,
  useNotificationStream,
  useNotifications,
  usePendingWithdrawals,
  useProfile,
  useSocialVaultConfig,
  useTrustScore,
  useUnreadCount,
  useVaultPosition,
  useVaultStatus,
  useXp,
} from "./queries.js";
