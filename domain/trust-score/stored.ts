// A user's Trust Score as the database holds it: the input counters (TrustScoreInput), the
// modifiers in the order they apply, the components on the user row, the day of a history row,
// shaped from what repo.ts reads. The recompute (service.ts) and the reads (reads.ts) both start
// from here.
import type { Tx } from "../db.js";
import type { UserRecord } from "../users/repo.js";
import { levelIndexFor } from "../xp/levels.js";
import { modifierRowsInApplyOrder, trustInputsRowOf } from "./repo.js";
import type { Breakdown, ModifierType, TrustInputs } from "./rules.js";

/** The day of a history row (UTC). */
export const dayOf = (date: Date) => date.toISOString().slice(0, 10);

/** The components stored on the user row. */
export function breakdownOf(user: UserRecord): Breakdown {
  return {
    seniority: user.trustSeniority,
    repaymentHistory: user.trustRepayment,
    transactionVolume: user.trustVolume,
    socialNetwork: user.trustSocial,
    levelBonus: user.trustLevelBonus,
  };
}

/** What the rules compute a score from: the user's counters, account age and XP level. */
export async function loadInputs(tx: Tx, user: Pick<UserRecord, "id" | "createdAt" | "xp">): Promise<TrustInputs> {
  const row = await trustInputsRowOf(tx, user.id);
  return {
    createdAt: user.createdAt,
    levelIndex: levelIndexFor(user.xp),
    onTimeRepayments: row?.onTimeRepayments ?? 0,
    // Held money (D-88): the most held in the vault at once, plus the volume counted before D-88.
    totalVolumeMicro: (row?.totalVolumeMicro ?? 0n) + (row?.peakHeldMicro ?? 0n),
    activeGuardians: row?.activeGuardians ?? 0,
  };
}

/** A user's modifiers in the order they apply (appliedAt, then id). */
export const activeModifiers = async (tx: Tx, userId: string) =>
  (await modifierRowsInApplyOrder(tx, userId)).map((row) => ({
    ...row,
    type: row.type as ModifierType,
  }));
