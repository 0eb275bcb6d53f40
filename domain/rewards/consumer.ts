// The rewards consumers: XP ("rewards") and Trust Score inputs ("trust-score") for the chain
// facts the indexer recorded, whoever sent the transaction (the API or a wallet calling the
// contracts directly). Two consumers, so an API write waits for its XP only (D-62).
import type { Logger } from "../../core/logger.js";
import type { Db, Tx } from "../db.js";
import { type ConsumedEvent, consumeEvents } from "../events/consumer.js";
import type { TrustScoreService } from "../trust-score/service.js";
import { XP_FOR } from "../xp/rules.js";
import type { XpService } from "../xp/service.js";

/** Facts that earn XP (the "rewards" consumer: what a write waits for, D-62). */
const XP_TYPES = ["vault.deposit", "vault.withdraw", "loan.repaid", "user.guardian_added"] as const;
/** Facts that move Trust Score inputs (the "trust-score" consumer, applied by the worker). */
const TRUST_TYPES = ["vault.deposit", "loan.repaid", "loan.overdue", "loan.defaulted", "user.guardian_added"] as const;
type XpEvent = ConsumedEvent<(typeof XP_TYPES)[number]>;
type TrustEvent = ConsumedEvent<(typeof TRUST_TYPES)[number]>;

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

  /** Awards the event's XP; returns what it earned (0 when it was awarded before). */
  async function applyXp(tx: Tx, event: XpEvent, userId: string, now: Date): Promise<number> {
    const reward = {
      "vault.deposit": XP_FOR.vaultDeposit,
      "vault.withdraw": XP_FOR.vaultWithdraw,
      "loan.repaid": XP_FOR.loanRepaid,
      "user.guardian_added": XP_FOR.guardianAdded,
    }[event.type];
    const result = await xp.awardXp(tx, userId, { ...reward, sourceId: event.id }, now);
    return result.awarded ? reward.xp : 0;
  }

  async function applyTrust(tx: Tx, event: TrustEvent, userId: string, now: Date) {
    switch (event.type) {
      case "vault.deposit":
        // The exact micro-USDC amount, never the two-decimal presentation string.
        await trust.addInputs(tx, userId, { volumeMicro: event.data.raw.assets }, "vault deposit", now);
        return;
      case "user.guardian_added":
        // Counted from the mirror: a guardian added with a timelock is pending, and only counts once
        // active (the trust-score.guardians job catches that moment).
        await trust.syncActiveGuardiansOf(tx, userId, now);
        return;
      case "loan.repaid":
      case "loan.overdue":
      case "loan.defaulted": {
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

  /** One consumer's pass: facts of wallets that are not platform users, or of deleted accounts, are taken and skipped. */
  function consume<T extends XpEvent["type"] | TrustEvent["type"]>(
    consumer: "rewards" | "trust-score",
    types: readonly T[],
    apply: (tx: Tx, event: ConsumedEvent<T>, userId: string, now: Date) => Promise<unknown>,
    now: Date,
    onlyIds?: readonly string[],
  ) {
    return consumeEvents(deps.db, {
      consumer,
      types,
      now,
      onlyIds,
      async apply(tx, event) {
        if (event.userId && event.userActive) await apply(tx, event, event.userId, now);
      },
      afterCommit: (event) => {
        if (event.userId) deps.invalidateUser(event.userId);
      },
      onInvalid: (event, error) =>
        deps.logger?.warn(
          { consumer, eventId: event.id, type: event.type, error: error.message },
          "event data does not match the catalogue; skipped",
        ),
    });
  }

  const runXp = (now: Date, onlyIds?: readonly string[]) => consume<(typeof XP_TYPES)[number]>("rewards", XP_TYPES, applyXp, now, onlyIds);
  /** Applies one event's XP now; the XP it earned, or undefined where it was taken before (by the worker, say). */
  async function xpOf(now: Date, eventId: string): Promise<number | undefined> {
    let earned: number | undefined;
    const capture = async (tx: Tx, event: XpEvent, userId: string, at: Date) => {
      earned = await applyXp(tx, event, userId, at);
    };
    await consume<(typeof XP_TYPES)[number]>("rewards", XP_TYPES, capture, now, [eventId]);
    return earned;
  }
  const runTrust = (now: Date, onlyIds?: readonly string[]) =>
    consume<(typeof TRUST_TYPES)[number]>("trust-score", TRUST_TYPES, applyTrust, now, onlyIds);

  return {
    /**
     * XP for pending chain facts, each once (a ConsumedEvent "rewards" row in its transaction), in
     * order. With `onlyIds`, only those: an API write applies its own transaction's XP at once,
     * so its answer carries it and the next activity read shows it. Returns how many it took.
     */
    runXp,
    /** One event's XP applied at once: an API write answers with it, and the next activity read shows it. */
    xpOf,
    /**
     * Trust Score inputs for pending chain facts, each once (consumer "trust-score"), in time order;
     * with `onlyIds`, only those (a repayment's answer carries its Trust Score change).
     */
    runTrust,
    /** Both, XP first: what the worker's job runs. Returns how many events they took. */
    async run(now: Date): Promise<number> {
      return (await runXp(now)) + (await runTrust(now));
    },
  };
}

export type RewardsConsumer = ReturnType<typeof createRewardsConsumer>;
