import type { XpActivityType } from "./activity.js";

/**
 * XP per fact (docs/decisions.md, "XP, levels and badges"): the amounts every writer of XP uses.
 * `daily`: earned once per UTC day of its type, so a deposit and withdrawal repeated in a circle, or
 * guardians added and removed, earn no more than the day's first (D-88). A repayment earns its XP
 * only when it counts for the Trust Score (the trust-score consumer awards it).
 */
export const XP_FOR = {
  vaultDeposit: { type: "vault_deposit", xp: 20, description: "Deposited into the vault", daily: true },
  vaultWithdraw: { type: "vault_withdraw", xp: 5, description: "Withdrew from the vault", daily: true },
  loanRepaid: { type: "loan_repaid", xp: 50, description: "Repaid a loan", daily: false },
  guardianAdded: { type: "guardian_added", xp: 30, description: "Added a guardian", daily: true },
} as const satisfies Record<string, { type: XpActivityType; xp: number; description: string; daily: boolean }>;
