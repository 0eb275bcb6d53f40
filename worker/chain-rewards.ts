import type { DomainServices } from "../api/app.js";
import type { Tx } from "../api/events/outbox.js";
import type { Database } from "../core/db.js";
import { MICRO_PER_USDC } from "../core/money.js";
import { refFromLoanId } from "../indexer/ids.js";

/** The consumer name of the ConsumedEvent markers (kept from when it only awarded XP). */
export const REWARDS_CONSUMER = "xp-rewards";

/** XP per chain fact (docs/decisions.md, "XP, levels and badges"). */
const XP_REWARDS = {
  "vault.deposit": { type: "vault_deposit", xp: 20, description: "Deposited into the vault" },
  "vault.withdraw": { type: "vault_withdraw", xp: 5, description: "Withdrew from the vault" },
  "loan.repaid": { type: "loan_repaid", xp: 50, description: "Repaid a loan" },
  "user.guardian_added": { type: "guardian_added", xp: 30, description: "Added a guardian" },
} as const;

/** Every chain fact this consumer applies: the XP ones, plus the loan outcomes that move the Trust Score. */
const CONSUMED_TYPES = [...Object.keys(XP_REWARDS), "loan.overdue", "loan.defaulted"] as const;
type ConsumedType = keyof typeof XP_REWARDS | "loan.overdue" | "loan.defaulted";

interface ChainFact {
  id: string;
  type: ConsumedType;
  userId: string;
  chainId: number;
  data: Record<string, unknown>;
  /** The block time of the fact. */
  createdAt: Date;
}

type Services = Pick<DomainServices, "xp" | "trust" | "invalidateUser">;

/** "1234.56" (a vault event's amount) as micro-USDC, without a float. */
export function microFromAmount(amount: string): bigint {
  const match = /^(\d+)(?:\.(\d{1,6}))?$/.exec(amount);
  if (!match) throw new Error(`not a USDC amount: ${amount}`);
  return BigInt(match[1]!) * MICRO_PER_USDC + BigInt((match[2] ?? "").padEnd(6, "0"));
}

/** The mirrored loan behind a loan event (its data's loanId is the API id, or the on-chain ref's hex). */
async function loanOf(tx: Tx, fact: ChainFact) {
  const loanId = fact.data.loanId;
  if (typeof loanId !== "string") return null;
  const ref = loanId.startsWith("0x") ? loanId : refFromLoanId(loanId);
  return tx.loanChainState.findUnique({ where: { chainId_ref: { chainId: fact.chainId, ref } } });
}

/**
 * The Trust Score side of a loan's outcome (docs/decisions.md, "Trust Score inputs from the
 * chain"): a repayment at or before the due date in force is on time (+1 repayment, an
 * on_time_bonus, its total paid added to the volume); the first sign of lateness (marked
 * overdue, or repaid after the due date) costs one late_payment; a default costs a default.
 * Modifiers are keyed by the loan, so each applies once per loan whatever order the facts come in.
 */
async function applyLoanOutcome(tx: Tx, services: Services, fact: ChainFact, now: Date) {
  const loan = await loanOf(tx, fact);
  if (!loan) return;
  const sourceId = `loan:${loan.chainId}:${loan.loanId}`;
  const late = (reason: string) =>
    services.trust.addModifier(tx, fact.userId, { type: "late_payment", reason, sourceId, appliedAt: fact.createdAt }, now);
  if (fact.type === "loan.overdue") {
    await late("loan overdue");
  } else if (fact.type === "loan.defaulted") {
    await services.trust.addModifier(
      tx,
      fact.userId,
      { type: "default", reason: "loan defaulted", sourceId, appliedAt: fact.createdAt },
      now,
    );
  } else if (fact.type === "loan.repaid") {
    const wasLate = await tx.trustScoreModifier.findUnique({
      where: { userId_type_sourceId: { userId: fact.userId, type: "late_payment", sourceId } },
    });
    if (wasLate || fact.createdAt > loan.dueDate) {
      await services.trust.addInputs(tx, fact.userId, { volumeMicro: loan.totalPaid }, "late repayment", now);
      if (!wasLate) await late("late repayment");
      return;
    }
    await services.trust.addInputs(tx, fact.userId, { onTimeRepayments: 1, volumeMicro: loan.totalPaid }, "on-time repayment", now);
    await services.trust.addModifier(
      tx,
      fact.userId,
      { type: "on_time_bonus", reason: "on-time repayment", sourceId, appliedAt: fact.createdAt },
      now,
    );
  }
}

async function applyFact(tx: Tx, services: Services, fact: ChainFact, now: Date) {
  const reward = XP_REWARDS[fact.type as keyof typeof XP_REWARDS];
  if (reward) await services.xp.awardXp(tx, fact.userId, { ...reward, sourceId: fact.id }, now);
  switch (fact.type) {
    case "vault.deposit":
      if (typeof fact.data.usdcAmount === "string") {
        await services.trust.addInputs(tx, fact.userId, { volumeMicro: microFromAmount(fact.data.usdcAmount) }, "vault deposit", now);
      }
      return;
    case "loan.repaid":
    case "loan.overdue":
    case "loan.defaulted":
      return applyLoanOutcome(tx, services, fact, now);
    case "user.guardian_added":
      // Counted from the mirror: a guardian added with a timelock is pending, and only counts once
      // active (the trust-score.guardians job catches that moment).
      await services.trust.syncActiveGuardiansOf(tx, fact.userId, now);
      return;
  }
}

/**
 * Applies the chain facts the indexer put in the outbox to the users' XP and Trust Score inputs
 * (vault volume, repayments, late payments, defaults, guardians), whoever sent the transaction:
 * the API or a wallet calling the contracts. Each event is applied in one transaction with its
 * `ConsumedEvent` row, so a repeated or concurrent run applies it once. Events are taken in
 * chain order. Returns how many events it applied.
 */
export async function rewardChainEvents(db: Pick<Database, "prisma">, services: Services, now: Date, batchSize = 200): Promise<number> {
  let applied = 0;
  for (;;) {
    const facts = await db.prisma.$queryRawUnsafe<ChainFact[]>(
      `SELECT d."id"::text AS "id", d."type", d."userId", d."chainId", d."data", d."createdAt" FROM "DomainEvent" d
        WHERE d."chainId" IS NOT NULL AND d."userId" IS NOT NULL AND d."type" = ANY($1::text[])
          AND NOT EXISTS (SELECT 1 FROM "ConsumedEvent" c WHERE c."consumer" = $2 AND c."eventId" = d."id")
        ORDER BY d."blockNumber", d."dedupeKey" LIMIT $3`,
      CONSUMED_TYPES,
      REWARDS_CONSUMER,
      batchSize,
    );
    if (facts.length === 0) return applied;
    for (const fact of facts) {
      const done = await db.prisma.$transaction(async (tx) => {
        const { count } = await tx.consumedEvent.createMany({
          data: [{ consumer: REWARDS_CONSUMER, eventId: fact.id, consumedAt: now }],
          skipDuplicates: true,
        });
        if (count === 0) return false;
        const user = await tx.user.findUnique({ where: { id: fact.userId }, select: { deletedAt: true } });
        if (user && !user.deletedAt) await applyFact(tx, services, { ...fact, chainId: Number(fact.chainId) }, now);
        return true;
      });
      if (done) {
        services.invalidateUser(fact.userId);
        applied += 1;
      }
    }
    if (facts.length < batchSize) return applied;
  }
}
