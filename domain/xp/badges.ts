import type { ActivityType } from "./activity.js";
import { LEVELS } from "./levels.js";

/** What a badge criterion sees: activity counts by type, and the current XP level index. */
export interface BadgeFacts {
  counts: Partial<Record<string, number>>;
  levelIndex: number;
}

export interface Badge {
  id: string;
  name: string;
  criterion: string;
  earned(facts: BadgeFacts): boolean;
}

const count = (facts: BadgeFacts, type: ActivityType) => facts.counts[type] ?? 0;
const levelIndex = (name: (typeof LEVELS)[number]["name"]) => LEVELS.findIndex((level) => level.name === name);

/** The badge catalogue (docs/decisions.md, "XP, levels and badges"). Ids are stable API values. */
export const BADGES: readonly Badge[] = [
  { id: "first_loan", name: "First Loan", criterion: "1 loan created", earned: (f) => count(f, "loan_created") >= 1 },
  { id: "reliable_borrower", name: "Reliable Borrower", criterion: "5 loans repaid", earned: (f) => count(f, "loan_repaid") >= 5 },
  { id: "debt_free_veteran", name: "Debt-Free Veteran", criterion: "25 loans repaid", earned: (f) => count(f, "loan_repaid") >= 25 },
  { id: "first_deposit", name: "First Deposit", criterion: "1 vault deposit", earned: (f) => count(f, "vault_deposit") >= 1 },
  { id: "steady_saver", name: "Steady Saver", criterion: "10 vault deposits", earned: (f) => count(f, "vault_deposit") >= 10 },
  { id: "guardian_circle", name: "Guardian Circle", criterion: "3 guardians added", earned: (f) => count(f, "guardian_added") >= 3 },
  { id: "rising_star", name: "Rising Star", criterion: "reach level Achiever", earned: (f) => f.levelIndex >= levelIndex("Achiever") },
  { id: "legend", name: "Legend", criterion: "reach level Legend", earned: (f) => f.levelIndex >= levelIndex("Legend") },
];

export const BADGE_BY_ID = new Map(BADGES.map((badge) => [badge.id, badge]));
