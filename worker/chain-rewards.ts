import type { DomainServices } from "../api/app.js";
import type { Database } from "../core/db.js";
import { MICRO_PER_USDC } from "../core/money.js";

export const REWARDS_CONSUMER = "xp-rewards";

/** XP per chain fact (docs/decisions.md, "XP, levels and badges"). */
const REWARDS = {
  "vault.deposit": { type: "vault_deposit", xp: 20, description: "Deposited into the vault" },
  "vault.withdraw": { type: "vault_withdraw", xp: 5, description: "Withdrew from the vault" },
  "loan.repaid": { type: "loan_repaid", xp: 50, description: "Repaid a loan" },
  "user.guardian_added": { type: "guardian_added", xp: 30, description: "Added a guardian" },
} as const;

type RewardedType = keyof typeof REWARDS;

/** "1234.56" (a vault event's amount) as micro-USDC, without a float. */
export function microFromAmount(amount: string): bigint {
  const match = /^(\d+)(?:\.(\d{1,6}))?$/.exec(amount);
  if (!match) throw new Error(`not a USDC amount: ${amount}`);
  return BigInt(match[1]!) * MICRO_PER_USDC + BigInt((match[2] ?? "").padEnd(6, "0"));
}

/**
 * Applies the chain facts the indexer put in the outbox to the users' XP (and the vault volume
 * input of the Trust Score), whoever sent the transaction: the API or a wallet calling the
 * contracts. Each event is applied in one transaction with its `ConsumedEvent` row, so a
 * repeated or concurrent run applies it once. Returns how many events it applied.
 */
export async function rewardChainEvents(
  db: Pick<Database, "prisma">,
  services: Pick<DomainServices, "xp" | "trust" | "invalidateUser">,
  now: Date,
  batchSize = 200,
): Promise<number> {
  let applied = 0;
  for (;;) {
    const events = await db.prisma.$queryRawUnsafe<{ id: string; type: RewardedType; userId: string; data: Record<string, unknown> }[]>(
      `SELECT d."id"::text AS "id", d."type", d."userId", d."data" FROM "DomainEvent" d
        WHERE d."chainId" IS NOT NULL AND d."userId" IS NOT NULL AND d."type" = ANY($1::text[])
          AND NOT EXISTS (SELECT 1 FROM "ConsumedEvent" c WHERE c."consumer" = $2 AND c."eventId" = d."id")
        ORDER BY d."blockNumber", d."dedupeKey" LIMIT $3`,
      Object.keys(REWARDS),
      REWARDS_CONSUMER,
      batchSize,
    );
    if (events.length === 0) return applied;
    for (const event of events) {
      const reward = REWARDS[event.type];
      const done = await db.prisma.$transaction(async (tx) => {
        const { count } = await tx.consumedEvent.createMany({
          data: [{ consumer: REWARDS_CONSUMER, eventId: event.id, consumedAt: now }],
          skipDuplicates: true,
        });
        if (count === 0) return false;
        const user = await tx.user.findUnique({ where: { id: event.userId }, select: { deletedAt: true } });
        if (!user || user.deletedAt) return true;
        await services.xp.awardXp(tx, event.userId, { ...reward, sourceId: event.id }, now);
        if (event.type === "vault.deposit" && typeof event.data.usdcAmount === "string") {
          await services.trust.addInputs(tx, event.userId, { volumeMicro: microFromAmount(event.data.usdcAmount) }, "vault deposit", now);
        }
        return true;
      });
      if (done) {
        services.invalidateUser(event.userId);
        applied += 1;
      }
    }
    if (events.length < batchSize) return applied;
  }
}
