import type { XpActivityType } from "./activity.js";

/** XP per fact (docs/decisions.md, "XP, levels and badges"): the amounts every writer of XP uses. */
export const XP_FOR = {
  vaultDeposit: { type: "vault_deposit", xp: 20, description: "Deposited into the vault" },
  vaultWithdraw: { type: "vault_withdraw", xp: 5, description: "Withdrew from the vault" },
  loanRepaid: { type: "loan_repaid", xp: 50, description: "Repaid a loan" },
  guardianAdded: { type: "guardian_added", xp: 30, description: "Added a guardian" },
} as const satisfies Record<string, { type: XpActivityType; xp: number; description: string }>;
