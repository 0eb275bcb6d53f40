import { randomUUID } from "node:crypto";
import type { Db } from "../db.js";

/** The only place API key rows are read and written. */
export function createApiKeysRepo({ db }: { db: Db }) {
  const { prisma } = db;
  return {
    /**
     * Creates a key unless the user already has `maxActive` active ones, in one step: the
     * user's row is locked for the transaction, so concurrent creations are counted one after
     * another (never count-then-insert). Returns null at the cap.
     */
    createWithinCap: (input: { userId: string; name: string; prefix: string; hash: string; now: Date }, maxActive: number) =>
      prisma.$transaction(async (tx) => {
        await tx.$queryRaw`SELECT 1 FROM "User" WHERE "id" = ${input.userId} FOR UPDATE`;
        if ((await tx.apiKey.count({ where: { userId: input.userId, revokedAt: null } })) >= maxActive) return null;
        return tx.apiKey.create({
          data: {
            id: `key_${randomUUID().replaceAll("-", "")}`,
            userId: input.userId,
            name: input.name,
            prefix: input.prefix,
            hash: input.hash,
            createdAt: input.now,
          },
        });
      }),
    listActive: (userId: string) =>
      prisma.apiKey.findMany({ where: { userId, revokedAt: null }, orderBy: [{ createdAt: "desc" }, { id: "desc" }] }),
    listAllForUser: (userId: string) => prisma.apiKey.findMany({ where: { userId }, orderBy: [{ createdAt: "desc" }, { id: "desc" }] }),
    /** Revokes one of the user's own active keys; false when there is no such key. */
    async revoke(userId: string, keyId: string, now: Date): Promise<boolean> {
      const { count } = await prisma.apiKey.updateMany({ where: { id: keyId, userId, revokedAt: null }, data: { revokedAt: now } });
      return count === 1;
    },
    findActiveByHash: (hash: string) => prisma.apiKey.findFirst({ where: { hash, revokedAt: null } }),
    touch: (id: string, now: Date) => prisma.apiKey.update({ where: { id }, data: { lastUsedAt: now } }),
  };
}

export type ApiKeysRepo = ReturnType<typeof createApiKeysRepo>;
