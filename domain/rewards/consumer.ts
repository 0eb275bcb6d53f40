// The rewards consumer: XP and Trust Score inputs for the chain facts the indexer recorded,
// whoever sent the transaction (the API or a wallet calling the contracts directly).
import type { Logger } from "../../core/logger.js";
import type { Db, Tx } from "../db.js";
import { type ConsumedEvent, consumeEvents } from "../events/consumer.js";
import type { TrustScoreService } from "../trust-score/service.js";
import { XP_FOR } from "../xp/rules.js";
import type { XpService } from "../xp/service.js";

const REWARDED_TYPES = ["vault.deposit", "vault.withdraw", "loan.repaid", "loan.overdue", "loan.defaulted", "user.guardian_added"] as const;
type RewardedEvent = ConsumedEvent<(typeof REWARDED_TYPES)[number]>;

export interface RewardsDeps {
  db: Db;
  xp: Pick<XpService, "awardXp">;
  trust: Pick<TrustScoreService, "addInputs" | "applyLoanOutcome" | "syncActiveGuardiansOf">;
  invalidateUser(userId: string): void;
  logger?: Pick<Logger, "warn">;
}

async function loanOf(tx: Tx, chainId: number, chainLoanId: bigint) {
  return tx.loanChainState.findUnique({ where: { chainId_loanId: { chainId, loanId: chainLoanId } } });
}

export function createRewardsConsumer(deps: RewardsDeps) {
  const { xp, trust } = deps;

  async function apply(tx: Tx, event: RewardedEvent, userId: string, now: Date) {
    const award = (reward: (typeof XP_FOR)[keyof typeof XP_FOR]) => xp.awardXp(tx, userId, { ...reward, sourceId: event.id }, now);
    switch (event.type) {
      case "vault.deposit":
        await award(XP_FOR.vaultDeposit);
        // The exact micro-USDC amount, never the two-decimal presentation string.
        await trust.addInputs(tx, userId, { volumeMicro: event.data.raw.assets }, "vault deposit", now);
        return;
      case "vault.withdraw":
        await award(XP_FOR.vaultWithdraw);
        return;
      case "user.guardian_added":
        await award(XP_FOR.guardianAdded);
        // Counted from the mirror: a guardian added with a timelock is pending, and only counts once
        // active (the trust-score.guardians job catches that moment).
        await trust.syncActiveGuardiansOf(tx, userId, now);
        return;
      case "loan.repaid":
      case "loan.overdue":
      case "loan.defaulted": {
        if (event.type === "loan.repaid") await award(XP_FOR.loanRepaid);
        const loan = event.chainId === null ? null : await loanOf(tx, event.chainId, event.data.raw.chainLoanId);
        if (!loan) return;
        const kind = event.type === "loan.repaid" ? "repaid" : event.type === "loan.overdue" ? "overdue" : "defaulted";
        await trust.applyLoanOutcome(
          tx,
          userId,
          {
            kind,
            loan: { chainId: loan.chainId, loanId: loan.loanId, dueDate: loan.dueDate, totalPaid: loan.totalPaid },
            at: event.createdAt,
          },
          now,
        );
        return;
      }
    }
  }

  return {
    /**
     * Applies every pending rewarded chain fact once (a ConsumedEvent row in the same
     * transaction), in order. Facts of wallets that are not platform users, or of deleted
     * accounts, are taken and skipped. Returns how many events it took. With `onlyIds`, only
     * those (an API write applies its own transaction's facts at once, for read-your-writes).
     */
    run: (now: Date, onlyIds?: readonly string[]) =>
      consumeEvents(deps.db, {
        consumer: "rewards",
        types: REWARDED_TYPES,
        now,
        onlyIds,
        async apply(tx, event) {
          if (!event.userId) return;
          const user = await tx.user.findUnique({ where: { id: event.userId }, select: { deletedAt: true } });
          if (user && !user.deletedAt) await apply(tx, event, event.userId, now);
        },
        afterCommit: (event) => {
          if (event.userId) deps.invalidateUser(event.userId);
        },
        onInvalid: (event, error) =>
          deps.logger?.warn(
            { eventId: event.id, type: event.type, error: error.message },
            "rewards: event data does not match the catalogue; skipped",
          ),
      }),
  };
}

export type RewardsConsumer = ReturnType<typeof createRewardsConsumer>;
