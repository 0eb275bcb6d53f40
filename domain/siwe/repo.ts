// The nonces handed out for Sign-In with Ethereum: each taken once, before it expires.
import type { Db } from "../db.js";

export function createSiweRepo({ db }: { db: Db }) {
  return {
    /** Stores a new nonce, and drops the expired ones (one indexed delete; nonces live minutes). */
    async addNonce(nonce: string, expiresAt: Date, now: Date): Promise<void> {
      await db.prisma.$transaction([
        db.prisma.siweNonce.deleteMany({ where: { expiresAt: { lte: now } } }),
        db.prisma.siweNonce.create({ data: { nonce, expiresAt } }),
      ]);
    },

    /** Takes the nonce if it is live: true once, whatever the concurrency (one conditional delete). */
    async takeNonce(nonce: string, now: Date): Promise<boolean> {
      const { count } = await db.prisma.siweNonce.deleteMany({ where: { nonce, expiresAt: { gt: now } } });
      return count === 1;
    },
  };
}

export type SiweRepo = ReturnType<typeof createSiweRepo>;
