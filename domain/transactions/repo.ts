// The only code that reads and writes the service's sent transactions (ChainTransaction), users'
// relayed requests (RelayedRequest), the requests prepared for users' own wallets to sign
// (PreparedRequest) and the paying account's nonces (SenderNonce); and what the
// service reads of the indexer's own state (its cursor, for the writes' wait on the mirror).
import { type ChainTransaction, type PreparedRequest, Prisma, type RelayedRequest } from "../../generated/prisma/client.js";
import type { Db } from "../db.js";
import { forgetAnswersOf } from "../idempotency/repo.js";

/** A transaction signed for the paying account, as recorded before its broadcast. */
export interface NewTransaction {
  id: string;
  purpose: string;
  userId?: string | undefined;
  idempotencyKey?: string | undefined;
  requestHash?: string | undefined;
  nonce: number;
  to: string;
  data: string;
  rawTx: string;
  txHash: string;
}

/** A user's request in a batch, as recorded with its transaction. */
export interface NewRequest {
  id: string;
  transactionId: string;
  position: number;
  purpose: string;
  userId: string;
  idempotencyKey: string;
  requestHash?: string | undefined;
  from: string;
  to: string;
  data: string;
  forwarderNonce: bigint;
}

/** What a request came to in its batch. */
export type RequestStatus = "executed" | "reverted" | "skipped" | "failed";

/** A request's key: a retry finds the request (or the transaction) recorded under it. */
export type RequestKey = { userId: string; idempotencyKey: string; purpose: string };

const sameKey = (a: RequestKey) => (b: { userId: string | null; idempotencyKey: string | null; purpose: string }) =>
  a.userId === b.userId && a.idempotencyKey === b.idempotencyKey && a.purpose === b.purpose;

/** Either of a transaction's hashes: the one it has now, or one it was replaced from. */
const byHash = (txHash: string) => ({ OR: [{ txHash }, { previousTxHashes: { has: txHash } }] });

export function createTransactionsRepo({ db, chainId, sender }: { db: Pick<Db, "prisma">; chainId: number; sender: string }) {
  const { prisma } = db;
  return {
    /**
     * In one database transaction: takes `count` nonces of the paying account (a row lock, never
     * behind the chain's own count: the key may send elsewhere too), reads the last forwarder nonce
     * of each wallet's recorded requests that used theirs (pending, executed or reverted), lets
     * `sign` make the transactions and requests with them, and records them all in one statement.
     * Under the lock every process sees the others' requests: one wallet's nonces never repeat.
     */
    async recordBatch<T extends { transactions: NewTransaction[]; requests: NewRequest[] }>(
      input: { onChain: number; count: number; wallets: string[] },
      sign: (first: number, lastNonces: Map<string, bigint>) => T,
    ): Promise<T> {
      const { onChain, count, wallets } = input;
      return prisma.$transaction(async (tx) => {
        const [{ first }] = await tx.$queryRaw<{ first: number }[]>`
          INSERT INTO "SenderNonce" ("chainId", "address", "nextNonce", "updatedAt")
          VALUES (${chainId}, ${sender}, ${onChain + count}, now())
          ON CONFLICT ("chainId", "address") DO UPDATE
            SET "nextNonce" = GREATEST("SenderNonce"."nextNonce", ${onChain}) + ${count}, "updatedAt" = now()
          RETURNING "nextNonce" - ${count} AS "first"`;
        const last =
          wallets.length === 0
            ? []
            : await tx.$queryRaw<{ from: string; nonce: bigint }[]>`
                SELECT "from", max("forwarderNonce") AS "nonce" FROM "RelayedRequest"
                 WHERE "from" IN (${Prisma.join(wallets)}) AND "status" IN ('pending', 'executed', 'reverted')
                 GROUP BY "from"`;
        const signed = sign(Number(first), new Map(last.map((row) => [row.from, row.nonce])));
        const now = new Date();
        const transactions = Prisma.join(
          signed.transactions.map(
            (t) =>
              Prisma.sql`(${t.id}, ${chainId}, ${t.purpose}, ${t.userId ?? null}, ${t.idempotencyKey ?? null}, ${t.requestHash ?? null},
                ${sender}, ${t.nonce}, ${t.to.toLowerCase()}, ${t.data}, ${t.rawTx}, ${t.txHash}, 'signed', ${now})`,
          ),
        );
        const insertTransactions = Prisma.sql`
          INSERT INTO "ChainTransaction" ("id", "chainId", "purpose", "userId", "idempotencyKey", "requestHash",
            "sender", "nonce", "to", "data", "rawTx", "txHash", "status", "createdAt")
          VALUES ${transactions}`;
        if (signed.requests.length === 0) {
          await tx.$executeRaw(insertTransactions);
        } else {
          const requests = Prisma.join(
            signed.requests.map(
              (r) =>
                Prisma.sql`(${r.id}, ${r.transactionId}, ${r.position}, ${r.purpose}, ${r.userId}, ${r.idempotencyKey},
                  ${r.requestHash ?? null}, ${r.from}, ${r.to.toLowerCase()}, ${r.data}, ${r.forwarderNonce}, 'pending', ${now})`,
            ),
          );
          // The batch's transaction and its requests: one statement.
          await tx.$executeRaw`
            WITH "batch" AS (${insertTransactions} RETURNING 1)
            INSERT INTO "RelayedRequest" ("id", "transactionId", "position", "purpose", "userId", "idempotencyKey",
              "requestHash", "from", "to", "data", "forwarderNonce", "status", "createdAt")
            VALUES ${requests}`;
        }
        return signed;
      });
    },

    /**
     * Transactions recorded with a nonce at or above `from` (below `to`) that the chain does not
     * hold, `from` being the account's count on chain: another process's not broadcast yet
     * (`signed`), or ones a reorganisation removed (recorded `mined` or `reverted`, their nonce
     * free again). Refused bytes (`failed`) had their nonce filled and are never sent again.
     */
    notHeldBetween: (from: number, to?: number) =>
      prisma.chainTransaction.findMany({
        where: {
          chainId,
          sender,
          status: { in: ["signed", "sent", "mined", "reverted"] },
          nonce: { gte: from, ...(to !== undefined && { lt: to }) },
        },
        orderBy: { nonce: "asc" },
        select: { id: true, nonce: true, rawTx: true, txHash: true, status: true },
      }),

    /**
     * Transactions a reorganisation removed, open again (D-90): `signed` (to be settled when mined
     * again), and their batches' requests `pending`, so that every settling path takes them up;
     * the answers kept for their keys forgotten (D-92). One database transaction; rows that are
     * not settled any more are left as they are.
     */
    async reopen(ids: readonly string[]): Promise<void> {
      if (ids.length === 0) return;
      await prisma.$transaction([
        forgetAnswersOf(prisma, ids),
        prisma.chainTransaction.updateMany({
          where: { id: { in: [...ids] }, status: { in: ["mined", "reverted"] } },
          data: { status: "signed", blockNumber: null, settledAt: null, error: null },
        }),
        prisma.relayedRequest.updateMany({
          where: { transactionId: { in: [...ids] }, status: { in: ["executed", "reverted", "skipped"] } },
          data: { status: "pending", error: null, settledAt: null },
        }),
      ]);
    },

    transaction: (id: string) => prisma.chainTransaction.findUniqueOrThrow({ where: { id } }),
    transactionByHash: (txHash: string) => prisma.chainTransaction.findFirst({ where: byHash(txHash) }),

    /** A stuck transaction re-signed: the new bytes and hash, the old hash kept. */
    replaced: (row: ChainTransaction, rawTx: string, txHash: string) =>
      prisma.chainTransaction.update({ where: { id: row.id }, data: { rawTx, txHash, previousTxHashes: { push: row.txHash } } }),

    /** Settles a transaction mined (or reverted) under any of its hashes. */
    mined: (txHash: string, receipt: { hash: string; blockNumber: number; status: number | null }) =>
      prisma.chainTransaction.updateMany({
        where: { OR: [...byHash(txHash).OR, { txHash: receipt.hash }] },
        data: {
          status: receipt.status === 1 ? "mined" : "reverted",
          txHash: receipt.hash,
          blockNumber: receipt.blockNumber,
          settledAt: new Date(),
        },
      }),
    revertedWith: (txHash: string, error: string) => prisma.chainTransaction.updateMany({ where: { txHash }, data: { error } }),
    /** Bytes the node refused: they can never be mined. */
    failed: (id: string, error: string) =>
      prisma.chainTransaction.updateMany({ where: { id }, data: { status: "failed", error: error.slice(0, 500), settledAt: new Date() } }),

    /** The transaction recorded for a request's key, if any. */
    transactionFor: (key: RequestKey) => prisma.chainTransaction.findUnique({ where: { userId_idempotencyKey_purpose: key } }),
    /** Transactions a stopped process left in flight, in nonce order. */
    openTransactions: () =>
      prisma.chainTransaction.findMany({ where: { chainId, sender, status: { in: ["signed", "sent"] } }, orderBy: { nonce: "asc" } }),

    /**
     * The requests recorded under these keys, and the transactions of the single-request relay
     * before D-86 (one transaction per request, recorded under the request's key).
     */
    async recordedFor(keys: readonly RequestKey[]): Promise<{ request?: RelayedRequest; single?: ChainTransaction }[]> {
      const where = { OR: keys.map(({ userId, idempotencyKey, purpose }) => ({ userId, idempotencyKey, purpose })) };
      const [requests, single] = await Promise.all([
        prisma.relayedRequest.findMany({ where }),
        prisma.chainTransaction.findMany({ where }),
      ]);
      return keys.map((key) => ({ request: requests.find(sameKey(key)), single: single.find(sameKey(key)) }));
    },

    /**
     * Gives up the key of a request that did nothing on chain (skipped, or its batch refused), so a
     * retry under the key records a new request (D-92). The key is kept readable, with a space no
     * client key has.
     */
    releaseKey: (requestId: string) =>
      prisma.$executeRaw`
        UPDATE "RelayedRequest" SET "idempotencyKey" = "idempotencyKey" || ' superseded ' || "id"
         WHERE "id" = ${requestId} AND "status" IN ('skipped', 'failed')`,

    /**
     * Gives up the key of a transaction of the service's own that did nothing (reverted, or
     * refused by the node), so that the operation can be sent anew under it (D-94: a loan's funding
     * that a reorganisation removed and that reverted when broadcast again).
     */
    releaseTransactionKey: (id: string) =>
      prisma.$executeRaw`
        UPDATE "ChainTransaction" SET "idempotencyKey" = "idempotencyKey" || ' superseded ' || "id"
         WHERE "id" = ${id} AND "status" IN ('reverted', 'failed')`,

    /** A batch's transaction and its requests in their order. */
    batch: (transactionId: string) =>
      Promise.all([
        prisma.chainTransaction.findUniqueOrThrow({ where: { id: transactionId } }),
        prisma.relayedRequest.findMany({ where: { transactionId }, orderBy: { position: "asc" } }),
      ]),

    /** Settles a batch's pending requests, each with its outcome, in one statement. */
    async settleRequests(outcomes: { id: string; status: RequestStatus; error: string | null }[]) {
      if (outcomes.length === 0) return;
      const rows = outcomes.map((outcome) => Prisma.sql`(${outcome.id}, ${outcome.status}, ${outcome.error})`);
      await prisma.$executeRaw`
        UPDATE "RelayedRequest" AS r SET "status" = v."status", "error" = v."error", "settledAt" = now()
          FROM (VALUES ${Prisma.join(rows)}) AS v("id", "status", "error")
         WHERE r."id" = v."id" AND r."status" = 'pending'`;
    },

    /** Batches with requests still pending whose transaction's nonce is below `nonce` (mined, or gone for good). */
    async openBatchesBelow(nonce: number): Promise<string[]> {
      const rows = await prisma.$queryRaw<{ transactionId: string }[]>`
        SELECT DISTINCT r."transactionId" FROM "RelayedRequest" r JOIN "ChainTransaction" t ON t."id" = r."transactionId"
         WHERE r."status" = 'pending' AND t."chainId" = ${chainId} AND t."sender" = ${sender} AND t."nonce" < ${nonce}`;
      return rows.map((row) => row.transactionId);
    },

    /** The batches with requests still pending (what a stopped process left in flight). */
    async openBatches(): Promise<string[]> {
      const rows = await prisma.relayedRequest.findMany({
        where: { status: "pending" },
        distinct: ["transactionId"],
        select: { transactionId: true },
      });
      return rows.map((row) => row.transactionId);
    },

    /** The last forwarder nonce `from`'s recorded requests used (pending, executed or reverted); null when none did. */
    async lastRecordedNonce(from: string): Promise<bigint | null> {
      const [row] = await prisma.$queryRaw<{ nonce: bigint | null }[]>`
        SELECT max("forwarderNonce") AS "nonce" FROM "RelayedRequest"
         WHERE "from" = ${from} AND "status" IN ('pending', 'executed', 'reverted')`;
      return row?.nonce ?? null;
    },

    /** Records a write prepared for its wallet's signature; drops those prepared over a day ago (D-119). */
    async addPrepared(
      row: Omit<PreparedRequest, "usedAt" | "permit" | "authorization"> & {
        permit: PreparedPermit | null;
        authorization: PreparedAuthorization | null;
      },
    ): Promise<void> {
      const dayAgo = new Date(row.createdAt.getTime() - 86_400_000);
      await prisma.$transaction([
        prisma.preparedRequest.deleteMany({ where: { createdAt: { lt: dayAgo } } }),
        prisma.preparedRequest.create({
          data: { ...row, permit: row.permit ?? Prisma.DbNull, authorization: row.authorization ?? Prisma.DbNull },
        }),
      ]);
    },

    /** The user's prepared requests of this very call, the newest first. */
    preparedFor: (userId: string, to: string, data: string) =>
      prisma.preparedRequest.findMany({ where: { userId, to: to.toLowerCase(), data }, orderBy: { createdAt: "desc" }, take: 20 }),

    /** Takes a prepared request for its write: true once, whatever the concurrency (one conditional update). */
    async takePrepared(id: string, now: Date): Promise<boolean> {
      const { count } = await prisma.preparedRequest.updateMany({ where: { id, usedAt: null }, data: { usedAt: now } });
      return count === 1;
    },

    /** Gives a prepared request back when its write was refused before anything was recorded. */
    releasePrepared: (id: string) => prisma.preparedRequest.updateMany({ where: { id }, data: { usedAt: null } }),
  };
}

/** The EIP-2612 permit a prepared request asks for (its values as decimal strings). */
export type PreparedPermit = { spender: string; value: string; nonce: string; deadline: string };

/** The EIP-3009 authorization a prepared request asks for instead of a forwarded request (D-120). */
export type PreparedAuthorization = { value: string; nonce: string };

export type TransactionsRepo = ReturnType<typeof createTransactionsRepo>;

/** The indexer's cursor on the chain, or null before its first batch. */
export const indexerCursorOf = (db: Pick<Db, "prisma">, chainId: number) => db.prisma.indexerCursor.findUnique({ where: { chainId } });
