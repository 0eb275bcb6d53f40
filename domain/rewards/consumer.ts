// The rewards consumers: XP ("rewards") and Trust Score inputs ("trust-score") for the chain
// facts the indexer recorded, whoever sent the transaction (the API or a wallet calling the
// contracts directly). Two consumers, so an API write waits for its XP only (D-62).
import { coalesce } from "../../core/coalesce.js";
import type { Tx } from "../db.js";
import type { ConsumedEvent, Outbox, OutboxConsumer } from "../events/consumer.js";
import { chainLoanOf } from "../loans/repo.js";
import type { TrustScoreService } from "../trust-score/service.js";
import { heldInVault } from "../vault/repo.js";
import { XP_FOR } from "../xp/rules.js";
import type { XpService } from "../xp/service.js";

/**
 * Facts that earn XP (the "rewards" consumer: what a write waits for, D-62). A repayment's XP is the
 * trust-score consumer's: it is earned only when the repayment counts for the score (D-88).
 */
const XP_TYPES = ["vault.deposit", "vault.withdraw", "user.guardian_added"] as const;
/** Facts that move Trust Score inputs (the "trust-score" consumer, applied by the worker). */
const TRUST_TYPES = ["vault.deposit", "loan.repaid", "loan.refunded", "loan.overdue", "loan.defaulted", "user.guardian_added"] as const;
type XpEvent = ConsumedEvent<(typeof XP_TYPES)[number]>;
type TrustEvent = ConsumedEvent<(typeof TRUST_TYPES)[number]>;

export interface RewardsDeps {
  xp: Pick<XpService, "awardXp" | "revokeXp" | "earnedBy">;
  trust: Pick<
    TrustScoreService,
    "notePeakHeld" | "lowerPeakHeld" | "applyLoanOutcome" | "revertLoanOutcome" | "revokeRepayment" | "syncActiveGuardiansOf"
  >;
  invalidateUser(userId: string): void;
  outbox: Pick<Outbox, "take" | "drain" | "adopt">;
}

export function createRewardsConsumer(deps: RewardsDeps) {
  const { xp, trust } = deps;

  /** Awards the event's XP; returns what it earned (0 when it was awarded before). */
  async function applyXp(tx: Tx, event: XpEvent, userId: string, now: Date): Promise<number> {
    const reward = {
      "vault.deposit": XP_FOR.vaultDeposit,
      "vault.withdraw": XP_FOR.vaultWithdraw,
      "user.guardian_added": XP_FOR.guardianAdded,
    }[event.type];
    return (await xp.awardXp(tx, userId, { ...reward, sourceId: event.id }, now)).earned;
  }

  /** Applies the event's Trust Score inputs; answers the XP a repayment earned (0 for the other facts). */
  async function applyTrust(tx: Tx, event: TrustEvent, userId: string, now: Date): Promise<number> {
    switch (event.type) {
      case "vault.deposit": {
        // Held money, not money moved (D-88): the most of their own USDC the wallet ever held in the
        // vault at once, from the mirror (at or past this deposit's block: the peak only rises).
        const { peak } = await heldInVault(tx, event.data.walletAddress, event.chainId ?? undefined);
        await trust.notePeakHeld(tx, userId, peak, "vault deposit", now);
        return 0;
      }
      case "user.guardian_added":
        // Counted from the mirror: a guardian added with a timelock is pending, and only counts once
        // active (the trust-score.guardians job catches that moment).
        await trust.syncActiveGuardiansOf(tx, userId, now);
        return 0;
      case "loan.refunded":
        // A refund after the borrower's own repayment: money that came back is not their repayment (D-88).
        if (event.chainId !== null)
          await trust.revokeRepayment(tx, userId, { chainId: event.chainId, loanId: event.data.raw.chainLoanId }, now);
        return 0;
      case "loan.repaid":
      case "loan.overdue":
      case "loan.defaulted": {
        const loan = event.chainId === null ? null : await chainLoanOf(tx, event.chainId, event.data.raw.chainLoanId);
        if (!loan) return 0;
        const kind = event.type === "loan.repaid" ? "repaid" : event.type === "loan.overdue" ? "overdue" : "defaulted";
        const verdict = await trust.applyLoanOutcome(
          tx,
          userId,
          {
            kind,
            loan: { chainId: loan.chainId, loanId: loan.loanId, dueDate: loan.dueDate, paidByOthers: loan.paidByOthers },
            at: event.createdAt,
          },
          now,
        );
        // The repayment shows in the activity feed either way; it earns XP only when it counted.
        if (kind !== "repaid") return 0;
        const reward = { ...XP_FOR.loanRepaid, xp: verdict.counted ? XP_FOR.loanRepaid.xp : 0, sourceId: event.id };
        return (await xp.awardXp(tx, userId, reward, now)).earned;
      }
    }
  }

  /**
   * Takes back the Trust Score inputs (and a repayment's XP) of a fact a reorganisation removed
   * (D-94), from the mirror as the rollback left it. A refund's revocation is not given back.
   */
  async function revertTrust(tx: Tx, event: TrustEvent, userId: string, now: Date): Promise<void> {
    switch (event.type) {
      case "vault.deposit": {
        const { peak } = await heldInVault(tx, event.data.walletAddress, event.chainId ?? undefined);
        await trust.lowerPeakHeld(tx, userId, peak, now);
        return;
      }
      case "user.guardian_added":
        await trust.syncActiveGuardiansOf(tx, userId, now);
        return;
      case "loan.refunded":
        return;
      case "loan.repaid":
      case "loan.overdue":
      case "loan.defaulted": {
        if (event.chainId === null) return;
        const kind = event.type === "loan.repaid" ? "repaid" : event.type === "loan.overdue" ? "overdue" : "defaulted";
        await trust.revertLoanOutcome(tx, userId, { kind, loan: { chainId: event.chainId, loanId: event.data.raw.chainLoanId } }, now);
        if (kind === "repaid") await xp.revokeXp(tx, userId, [event.id]);
      }
    }
  }

  const active = <E extends XpEvent | TrustEvent>(events: E[]) => events.filter((event) => event.userId && event.userActive);
  const common = {
    concurrency: 1,
    afterCommit: (events: (XpEvent | TrustEvent)[]) => {
      for (const event of events) if (event.userId) deps.invalidateUser(event.userId);
    },
  };
  /** XP, in the outbox's order (one page at a time): facts of wallets that are not platform users, or of deleted accounts, are taken and skipped. */
  const xpConsumer: OutboxConsumer<XpEvent["type"]> = {
    name: "rewards",
    types: XP_TYPES,
    ...common,
    async apply(tx, events, now) {
      for (const event of active(events)) await applyXp(tx, event, event.userId!, now);
    },
    async revert(tx, facts) {
      for (const fact of active(facts)) await xp.revokeXp(tx, fact.userId!, [fact.id]);
    },
  };
  const trustConsumer: OutboxConsumer<TrustEvent["type"]> = {
    name: "trust-score",
    types: TRUST_TYPES,
    ...common,
    async apply(tx, events, now) {
      for (const event of active(events)) await applyTrust(tx, event, event.userId!, now);
    },
    async revert(tx, facts, now) {
      for (const fact of active(facts)) await revertTrust(tx, fact, fact.userId!, now);
    },
  };

  /**
   * Concurrent writes' events taken together: one transaction of the outbox for all of them (each
   * event's XP is still one statement), at the latest of their times.
   */
  const takeXp = coalesce(async (wanted: readonly { now: Date; eventId: string }[]) => {
    // What an attempt applied counts once it commits (take retries a failed batch event by event).
    const applied = new Map<string, number>();
    const earned = new Map<string, number>();
    const now = new Date(Math.max(...wanted.map((one) => one.now.getTime())));
    await deps.outbox.take(
      {
        ...xpConsumer,
        async apply(tx, events, at) {
          for (const event of active(events)) applied.set(event.id, await applyXp(tx, event, event.userId!, at));
        },
        afterCommit(events) {
          common.afterCommit(events);
          for (const event of events) if (applied.has(event.id)) earned.set(event.id, applied.get(event.id)!);
        },
      },
      wanted.map((one) => one.eventId),
      now,
    );
    return wanted.map((one) => earned.get(one.eventId));
  });

  return {
    /** The two consumers, for the worker's producer and runners: XP ("rewards") and Trust Score inputs ("trust-score"). */
    consumers: [xpConsumer, trustConsumer] as const,
    /**
     * A wallet's own facts from before its account (it used the platform's contracts, then signed
     * in: D-119) applied to the account, once, by the same rules as any: XP by its daily limits,
     * Trust Score inputs from the mirror. Answers how many facts it adopted.
     */
    async adopt(now: Date, userId: string, wallet: string): Promise<number> {
      const ids = await deps.outbox.adopt({ userId, wallet, consumers: [xpConsumer, trustConsumer] });
      if (ids.length === 0) return 0;
      await deps.outbox.take(xpConsumer, ids, now);
      await deps.outbox.take(trustConsumer, ids, now);
      return ids.length;
    },
    /**
     * One event's XP applied at once: an API write answers with it, and the next activity read
     * shows it. The XP it earned, or undefined where it was taken before (by the worker, say).
     */
    xpOf: (now: Date, eventId: string): Promise<number | undefined> => takeXp({ now, eventId }),
    /**
     * Trust Score inputs of these events applied at once (a repayment's answer carries its Trust
     * Score change): answers the XP their repayments earned (whoever applied them).
     */
    async takeTrust(now: Date, eventIds: readonly string[]): Promise<number> {
      let earned = 0;
      let attempt = 0;
      const result = await deps.outbox.take(
        {
          ...trustConsumer,
          async apply(tx, events, at) {
            // What an attempt earned counts once it commits (take retries a failed batch event by event).
            attempt = 0;
            for (const event of active(events)) attempt += await applyTrust(tx, event, event.userId!, at);
          },
          afterCommit(events) {
            common.afterCommit(events);
            earned += attempt;
          },
        },
        eventIds,
        now,
      );
      // Taken before (by the worker): what the events' repayments earned then.
      if (result.applied < eventIds.length) earned = await deps.xp.earnedBy(eventIds);
      return earned;
    },
    /** What both have pending, taken now rather than by the worker's page jobs (a process without workers: tests). */
    async drain(now: Date): Promise<number> {
      return (await deps.outbox.drain(xpConsumer, now)) + (await deps.outbox.drain(trustConsumer, now));
    },
  };
}

export type RewardsConsumer = ReturnType<typeof createRewardsConsumer>;
