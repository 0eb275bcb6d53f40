import { Prisma } from "../generated/prisma/client.js";
import type { Database } from "./db.js";
import type { Deployment } from "./deployments.js";
import type { Logger } from "./logger.js";

export class ChainMismatchError extends Error {
  override name = "ChainMismatchError";
}

/** The id of the chain this database mirrors (one per database), in a statement reading the mirror tables. */
export const MIRRORED_CHAIN_ID = Prisma.raw(`(SELECT "chainId" FROM "ChainIdentity" WHERE "id" = 1)`);

/**
 * Key by key (JSONB does not keep the order in which an object's keys were written). A deployment
 * may add contracts a later version brings (the payment router): every stored one must be the same.
 */
function sameAddresses(stored: Record<string, string>, expected: Record<string, string>): boolean {
  return Object.keys(stored).every((key) => stored[key] === expected[key]);
}

/**
 * The mirror database remembers which chain it mirrors. A different chain is
 * refused with a clear message; for the embedded chain, which starts empty each
 * time, the chain-derived rows are reset instead, and the log says so.
 */
export async function ensureChainIdentity(
  db: Database,
  deployment: Deployment,
  options: {
    embedded: boolean;
    logger: Logger;
    /**
     * The tables whose rows come from the chain, cleared when the embedded chain (new at every
     * start) replaces the one the database mirrored: the domains' (domain/modules.ts, CHAIN_DERIVED_TABLES).
     */
    chainTables?: readonly string[];
  },
): Promise<void> {
  const contracts = Object.fromEntries(Object.entries(deployment.contracts).map(([key, value]) => [key, value.address.toLowerCase()]));
  const current = await db.prisma.chainIdentity.findUnique({ where: { id: 1 } });
  const same =
    current !== null &&
    current.chainId === deployment.chainId &&
    current.genesisHash === deployment.genesisHash &&
    sameAddresses(current.contracts as Record<string, string>, contracts);

  if (current && (!same || options.embedded)) {
    if (!options.embedded) {
      throw new ChainMismatchError(
        `database: DATABASE_URL mirrors chain ${current.chainId} (genesis ${current.genesisHash.slice(0, 10)}…) but CHAIN_RPC_URL serves chain ${deployment.chainId} (genesis ${deployment.genesisHash.slice(0, 10)}…) or other contracts; refusing to mix data: use another database or clear this one`,
      );
    }
    if (!options.chainTables) throw new Error("ensureChainIdentity: an embedded chain's reset needs the chain-derived tables");
    options.logger.warn("embedded chain starts empty at every start: resetting the chain-derived data of the local database");
    await db.prisma.$transaction([
      ...options.chainTables.map((table) => db.prisma.$executeRaw(Prisma.sql`DELETE FROM ${Prisma.raw(`"${table}"`)}`)),
      // Events of the old chain's facts; the domains' own events (XP, Trust Score) stay.
      db.prisma.$executeRaw`DELETE FROM "DomainEvent" WHERE "chainId" IS NOT NULL`,
      // Chain event ids are derived from tx hashes, which a new development chain can repeat.
      db.prisma.$executeRaw`DELETE FROM "ConsumedEvent" c WHERE NOT EXISTS (SELECT 1 FROM "DomainEvent" d WHERE d."id" = c."eventId")`,
    ]);
  }
  const identity = { chainId: deployment.chainId, genesisHash: deployment.genesisHash, contracts };
  await db.prisma.chainIdentity.upsert({ where: { id: 1 }, create: { id: 1, ...identity }, update: identity });
}
