// The query keys of every read, under one root so an app can clear them all at sign-out
// (queryClient.removeQueries({ queryKey: trustMintKeys.all })). Writes invalidate by prefix.
export const trustMintKeys = {
  all: ["trustmint"] as const,
  profile: () => ["trustmint", "profile"] as const,
  /** Every user's XP (`xp(userId)` for one). */
  xpAll: ["trustmint", "xp"] as const,
  xp: (userId: string | undefined) => ["trustmint", "xp", userId] as const,
  trustScoreAll: ["trustmint", "trust-score"] as const,
  trustScore: (userId: string | undefined) => ["trustmint", "trust-score", userId] as const,
  loansAll: ["trustmint", "loans"] as const,
  eligibility: () => ["trustmint", "loans", "eligibility"] as const,
  loans: (query: object) => ["trustmint", "loans", "list", query] as const,
  loan: (loanId: string) => ["trustmint", "loans", "detail", loanId] as const,
  vaultAll: ["trustmint", "vault"] as const,
  vaultPosition: () => ["trustmint", "vault", "position"] as const,
  vaultStatus: () => ["trustmint", "vault", "status"] as const,
  socialVaultAll: ["trustmint", "social-vault"] as const,
  socialVaultConfig: () => ["trustmint", "social-vault", "config"] as const,
  pendingWithdrawals: () => ["trustmint", "social-vault", "withdrawals", "pending"] as const,
  notificationsAll: ["trustmint", "notifications"] as const,
  notificationLists: ["trustmint", "notifications", "list"] as const,
  notifications: (query: object) => ["trustmint", "notifications", "list", query] as const,
  unreadCount: () => ["trustmint", "notifications", "unread"] as const,
};
