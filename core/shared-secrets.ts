import type { Database } from "./db.js";

/**
 * A development secret every process on the database shares (`ServiceSecret`): the stored one,
 * else `candidate()`, stored by the first writer (a race between processes is won by one insert,
 * and every process reads the winner). Production secrets come from configuration instead.
 */
export async function sharedSecret(db: Pick<Database, "prisma">, name: string, candidate: () => string | Promise<string>): Promise<string> {
  const stored = await db.prisma.serviceSecret.findUnique({ where: { name } });
  if (stored) return stored.value;
  await db.prisma.serviceSecret.createMany({ data: [{ name, value: await candidate(), createdAt: new Date() }], skipDuplicates: true });
  return (await db.prisma.serviceSecret.findUniqueOrThrow({ where: { name } })).value;
}
