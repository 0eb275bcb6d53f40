import type { CopyRows, Database, SqlQuery } from "../core/db.js";
import { encodeEventData } from "../domain/events/catalogue.js";
import { chainEventId } from "../domain/events/ids.js";
import { tablesOfKind } from "../domain/modules.js";
import { usersByWallet } from "../domain/users/wallet-directory.js";
import type { ContractCatalogue, Source } from "./contracts.js";
import { applyLogs, type BatchOutput, emptyOutput, type IndexedLog } from "./handlers.js";
import { CHAIN_LOG_COLUMNS, type Cursor, chainLogRow, type History, USDC_TRANSFER_COLUMNS, writeHistory } from "./history.js";
import type { RpcBlock } from "./rpc.js";
import { col, insertRows, timestampLiteral } from "./sql.js";
import { type StateChanges, StateStore } from "./state.js";

export type { Cursor };

/** Another writer moved the cursor: this process is no longer the indexer of record. */
export class CursorMovedError extends Error {
  override name = "CursorMovedError";
}

/** The tables keyed by block that a reorganisation trims: the mirror logs of every domain (domain/modules.ts). */
export const LOG_TABLES = tablesOfKind("log");

const CHAIN = (chainId: number) => ({ chainId: { type: "int4" as const, value: chainId } });

export async function readCursor(query: SqlQuery, chainId: number): Promise<Cursor | null> {
  const { rows } = await query<{ blockNumber: number; blockHash: string }>(
    `SELECT "blockNumber", "blockHash" FROM "IndexerCursor" WHERE "chainId" = $1`,
    [chainId],
  );
  return rows[0] ? { blockNumber: Number(rows[0].blockNumber), blockHash: rows[0].blockHash } : null;
}

/** Moves the cursor from `expected` to `next`, or throws if another writer moved it first. */
async function moveCursor(query: SqlQuery, chainId: number, expected: Cursor | null, next: Cursor, walletIndex?: number): Promise<void> {
  const now = new Date().toISOString();
  // A rollback keeps the wallet index: what is known of a wallet's history below the fork stays true.
  const result = expected
    ? await query(
        `UPDATE "IndexerCursor" SET "blockNumber" = $2, "blockHash" = $3, "updatedAt" = $4::timestamp(3), "heartbeatAt" = $4::timestamp(3),
           "walletIndex" = COALESCE($7::int4, "walletIndex")
         WHERE "chainId" = $1 AND "blockNumber" = $5 AND "blockHash" = $6`,
        [chainId, next.blockNumber, next.blockHash, now, expected.blockNumber, expected.blockHash, walletIndex ?? null],
      )
    : await query(
        `INSERT INTO "IndexerCursor" ("chainId", "blockNumber", "blockHash", "updatedAt", "heartbeatAt", "walletIndex")
         VALUES ($1, $2, $3, $4::timestamp(3), $4::timestamp(3), $5) ON CONFLICT DO NOTHING`,
        [chainId, next.blockNumber, next.blockHash, now, walletIndex ?? null],
      );
  if (result.rowCount !== 1) throw new CursorMovedError(`indexer cursor of chain ${chainId} was moved by another writer`);
}

export interface Batch {
  chainId: number;
  from: Cursor | null;
  to: Cursor;
  blocks: RpcBlock[];
  logs: IndexedLog[];
  /** USDC transfers at or below `from` of the addresses this batch learned (D-93). */
  history: History;
  /** The highest managed wallet index known to this batch: their history is mirrored with it. */
  walletIndex: number;
  state: StateChanges;
  out: BatchOutput;
}

/**
 * Writes one batch in one transaction: raw logs, blocks, decoded rows, folded state, outbox
 * events with their users resolved, and the cursor (compare-and-set, so two writers can never
 * both commit the same range).
 */
export async function commitBatch(db: Database, batch: Batch): Promise<{ events: number }> {
  const { chainId } = batch;
  return db.sql.transaction(async (query, copy) => {
    // The cursor move comes first: past it, no row of this range can exist (a rollback removed
    // everything above the fork, and only the cursor's holder writes), so COPY needs no conflict check.
    await moveCursor(query, chainId, batch.from, batch.to, batch.walletIndex);
    const fresh = { constants: CHAIN(chainId), copy };
    await insertRows(
      query,
      "ChainBlock",
      [col("blockNumber", "int4"), col("blockHash", "text"), col("parentHash", "text"), col("timestamp", "timestamp(3)")],
      batch.blocks.map((b) => [b.number, b.hash, b.parentHash, timestampLiteral(b.timestamp)]),
      {
        constants: CHAIN(chainId),
        onConflict: `ON CONFLICT ("chainId", "blockNumber") DO UPDATE SET "blockHash" = EXCLUDED."blockHash", "parentHash" = EXCLUDED."parentHash", "timestamp" = EXCLUDED."timestamp"`,
      },
    );
    await insertRows(query, "ChainLog", CHAIN_LOG_COLUMNS, batch.logs.map(chainLogRow), fresh);
    const logRef = [col("blockNumber", "int4"), col("logIndex", "int4"), col("txHash", "text")];
    await insertRows(
      query,
      "VaultTransaction",
      [
        ...logRef,
        col("ordinal", "int4"),
        col("type", "text"),
        col("owner", "text"),
        col("sender", "text"),
        col("receiver", "text"),
        col("assets", "int8"),
        col("shares", "numeric"),
        col("timestamp", "timestamp(3)"),
      ],
      batch.out.vaultTransactions,
      fresh,
    );
    await insertRows(
      query,
      "YieldDistribution",
      [
        ...logRef,
        col("distributor", "text"),
        col("amount", "int8"),
        col("totalYield", "int8"),
        col("exchangeRate", "numeric"),
        col("timestamp", "timestamp(3)"),
      ],
      batch.out.yieldDistributions,
      fresh,
    );
    await insertRows(query, "UsdcTransfer", USDC_TRANSFER_COLUMNS, batch.out.usdcTransfers, fresh);
    await writeHistory(query, chainId, batch.history);
    await insertRows(
      query,
      "PaymentChainEvent",
      [
        ...logRef,
        col("kind", "text"),
        col("ref", "text"),
        col("refundRef", "text"),
        col("payer", "text"),
        col("merchant", "text"),
        col("amount", "int8"),
        col("paymentAmount", "int8"),
        col("fee", "int8"),
        col("totalRefunded", "int8"),
        col("timestamp", "timestamp(3)"),
      ],
      batch.out.paymentEvents,
      fresh,
    );
    await StateStore.write(query, chainId, batch.state);
    const events = await insertEvents(query, chainId, batch.out, copy);
    return { events };
  });
}

/** Resolves the wallets the events name to user ids (once, here), then writes the outbox rows (idempotent by dedupe key). */
async function insertEvents(query: SqlQuery, chainId: number, out: BatchOutput, copy?: CopyRows): Promise<number> {
  if (out.events.length === 0) return 0;
  const wallets = new Set<string>();
  for (const e of out.events) {
    if (e.wallet) wallets.add(e.wallet);
    for (const w of e.wallets) wallets.add(w);
  }
  const users = await usersByWallet(query, wallets);
  const userOf = (wallet: string) => users.get(wallet.toLowerCase()) ?? null;
  // An event exists already only if a consumer took it before a rollback and it came back: then upsert, else bulk-load.
  const keys = out.events.map((e) => e.dedupeKey);
  const { rows: existing } = copy
    ? await query(`SELECT 1 FROM "DomainEvent" WHERE "dedupeKey" = ANY($1::text[]) LIMIT 1`, [keys])
    : { rows: [] };
  if (existing.length > 0 || !copy) {
    // Reverted facts that come back (the same transaction and log in the new branch) are said by
    // a chain.fact_restored naming the revert it undoes; the upsert below clears their revertedAt.
    await query(
      `INSERT INTO "DomainEvent" ("id", "type", "userId", "data", "dedupeKey", "createdAt", "chainId")
       SELECT gen_random_uuid(), 'chain.fact_restored', d."userId",
           jsonb_build_object('eventId', d."id"::text, 'type', d."type", 'revertEventId', md5(${REVERT_KEY("d")})::uuid::text),
           'chain:' || d."chainId"::text || ':restored:' || d."id"::text || ':' || d."seq"::text, $2::timestamp(3), d."chainId"
         FROM "DomainEvent" d WHERE d."dedupeKey" = ANY($1::text[]) AND d."revertedAt" IS NOT NULL
       ON CONFLICT ("dedupeKey") DO NOTHING`,
      [keys, new Date().toISOString()],
    );
  }
  return insertRows(
    query,
    "DomainEvent",
    [
      col("id", "uuid"),
      col("type", "text"),
      col("userId", "text"),
      col("data", "jsonb"),
      col("dedupeKey", "text"),
      col("createdAt", "timestamp(3)"),
      col("blockNumber", "int4"),
    ],
    out.events.map((e) => [
      chainEventId(e.dedupeKey),
      e.type,
      e.wallet ? userOf(e.wallet) : null,
      JSON.stringify(encodeEventData(e.type, e.data(userOf))),
      e.dedupeKey,
      timestampLiteral(e.timestamp),
      e.blockNumber,
    ]),
    existing.length === 0 && copy
      ? { constants: CHAIN(chainId), copy }
      : // A fact back after a rollback is no longer reverted, and pending again for the consumers that had not
        // taken it: a new seq and xid put it above their cursors (domain/events/consumer.ts).
        {
          constants: CHAIN(chainId),
          onConflict: `ON CONFLICT ("dedupeKey") DO UPDATE SET "revertedAt" = NULL,
            "seq" = nextval(pg_get_serial_sequence('"DomainEvent"', 'seq')), "insertedAt" = clock_timestamp(),
            "xid" = pg_current_xact_id()::text::bigint`,
        },
  );
}

/** The dedupe key of a chain.fact_reverted, in SQL, of the DomainEvent row aliased `alias`: chain, fact and generation. */
const REVERT_KEY = (alias: string) =>
  `'chain:' || ${alias}."chainId"::text || ':reverted:' || ${alias}."id"::text || ':' || ${alias}."seq"::text`;

/**
 * Removes everything above `forkBlock` (raw logs, blocks, decoded rows, events no consumer
 * took), rebuilds the state rows those logs had changed from the logs that remain, and
 * sets the cursor to the fork block. One transaction: a crash leaves the old or the new state.
 */
export async function rollbackTo(
  db: Database,
  catalogue: ContractCatalogue,
  chainId: number,
  expected: Cursor,
  fork: Cursor,
): Promise<{ removedLogs: number; rebuilt: number; removedEvents: number }> {
  return db.sql.transaction(async (query) => {
    await moveCursor(query, chainId, expected, fork);
    const { rows: affected } = await query<{ entities: string }>(
      `SELECT "entities" FROM "ChainLog" WHERE "chainId" = $1 AND "blockNumber" > $2 AND "entities" <> ''`,
      [chainId, fork.blockNumber],
    );
    const keys = new Set(affected.flatMap((row) => row.entities.split(" ")));
    let removedLogs = 0;
    for (const table of LOG_TABLES) {
      const result = await query(`DELETE FROM "${table}" WHERE "chainId" = $1 AND "blockNumber" > $2`, [chainId, fork.blockNumber]);
      if (table === "ChainLog") removedLogs = result.rowCount;
    }
    // Events no consumer took yet go with their blocks; those already taken stay, marked reverted.
    const events = await query(
      `DELETE FROM "DomainEvent" d WHERE d."chainId" = $1 AND d."blockNumber" > $2
          AND NOT EXISTS (SELECT 1 FROM "ConsumedEvent" c WHERE c."eventId" = d."id")`,
      [chainId, fork.blockNumber],
    );
    // ...and each is said by a chain.fact_reverted event, for the consumers that told someone
    // (webhooks send `<event>.reverted`). Its key names the fact's generation (seq): a fact that
    // comes back and is reverted again is said again. Its id is derived from the key, so the
    // chain.fact_restored of a fact that comes back can name the revert it undoes.
    await query(
      `WITH reverted AS (
         UPDATE "DomainEvent" SET "revertedAt" = $3::timestamp(3)
           WHERE "chainId" = $1 AND "blockNumber" > $2 AND "revertedAt" IS NULL
           RETURNING "id", "type", "userId", "seq", "chainId")
       INSERT INTO "DomainEvent" ("id", "type", "userId", "data", "dedupeKey", "createdAt", "chainId")
       SELECT md5(${REVERT_KEY("r")})::uuid, 'chain.fact_reverted', r."userId", jsonb_build_object('eventId', r."id"::text, 'type', r."type"),
           ${REVERT_KEY("r")}, $3::timestamp(3), $1
         FROM reverted r
       ON CONFLICT ("dedupeKey") DO NOTHING`,
      [chainId, fork.blockNumber, new Date().toISOString()],
    );
    await StateStore.delete(query, chainId, keys);
    if (keys.size > 0) await rebuildState(query, catalogue, chainId, keys);
    return { removedLogs, rebuilt: keys.size, removedEvents: events.rowCount };
  });
}

/** Folds the kept logs that touch `keys` again, in chain order, into fresh state rows. */
async function rebuildState(query: SqlQuery, catalogue: ContractCatalogue, chainId: number, keys: Set<string>): Promise<void> {
  const { rows } = await query<{
    blockNumber: number;
    logIndex: number;
    ordinal: number;
    blockHash: string;
    txHash: string;
    address: string;
    topic0: string | null;
    topic1: string | null;
    topic2: string | null;
    topic3: string | null;
    data: string;
    source: Source;
    entities: string;
    timestamp: Date;
  }>(
    `SELECT l."blockNumber", l."logIndex", l."ordinal", l."blockHash", l."txHash", l."address", l."topic0", l."topic1", l."topic2", l."topic3",
            l."data", l."source", l."entities", b."timestamp"
       FROM "ChainLog" l JOIN "ChainBlock" b ON b."chainId" = l."chainId" AND b."blockNumber" = l."blockNumber"
      WHERE l."chainId" = $1 AND l."status" = 'decoded' AND string_to_array(l."entities", ' ') && $2::text[]
      ORDER BY l."blockNumber", l."logIndex"`,
    [chainId, [...keys]],
  );
  const state = new StateStore(keys);
  const logs: IndexedLog[] = rows.map((row) => {
    const topics = [row.topic0, row.topic1, row.topic2, row.topic3].filter((t): t is string => t !== null);
    return {
      blockNumber: Number(row.blockNumber),
      logIndex: Number(row.logIndex),
      ordinal: Number(row.ordinal),
      blockHash: row.blockHash,
      txHash: row.txHash,
      address: row.address,
      topics,
      data: row.data,
      source: row.source,
      status: "decoded",
      error: null,
      decoded: catalogue.decode(row.source, { topics, data: row.data }),
      entities: row.entities.split(" "),
      timestamp: Math.round(row.timestamp.getTime() / 1000),
    };
  });
  applyLogs(logs, { chainId, state, out: emptyOutput(), emit: false }, () => {});
  await StateStore.write(query, chainId, state.takeChanges());
}

/** Stored block hashes at or below `blockNumber`, newest first (the fork search walks these). */
export async function storedBlocks(query: SqlQuery, chainId: number, belowOrAt: number, limit: number): Promise<Cursor[]> {
  const { rows } = await query<{ blockNumber: number; blockHash: string }>(
    `SELECT "blockNumber", "blockHash" FROM "ChainBlock" WHERE "chainId" = $1 AND "blockNumber" <= $2 ORDER BY "blockNumber" DESC LIMIT $3`,
    [chainId, belowOrAt, limit],
  );
  return rows.map((row) => ({ blockNumber: Number(row.blockNumber), blockHash: row.blockHash }));
}

/** How often the writer beats, backing off included: /health tells a slow indexer from a dead one. */
export const HEARTBEAT_MS = 2_000;

export async function heartbeat(query: SqlQuery, chainId: number, headBlock: number): Promise<void> {
  await query(`UPDATE "IndexerCursor" SET "heartbeatAt" = $2::timestamp(3), "headBlock" = $3 WHERE "chainId" = $1`, [
    chainId,
    new Date().toISOString(),
    headBlock,
  ]);
}

/** What the indexer stores while its rollbacks loop (see `IndexerCursor.reorgLoop`; /health reports it). */
export interface ReorgLoop {
  /** The fork point the rollbacks keep finding. */
  forkBlock: number;
  /** The highest block indexed before the loop; indexing past it ends the loop. */
  fromBlock: number;
  /** Rollbacks in a row to `forkBlock`, including those that found nothing to roll back. */
  count: number;
  /** When the first of them happened (ISO 8601). */
  since: string;
  /** What triggered the latest one. */
  reason: string;
  /** The latest one found every indexed block still on the chain, so nothing was rolled back. */
  chainUnchanged: boolean;
  /** The wait before the next attempt. */
  backoffMs: number;
}

/** Stores (or clears, with null) the reorg loop of the chain's cursor row, with a heartbeat. */
export async function writeReorgLoop(query: SqlQuery, chainId: number, loop: ReorgLoop | null): Promise<void> {
  await query(`UPDATE "IndexerCursor" SET "reorgLoop" = $2::jsonb, "heartbeatAt" = $3::timestamp(3) WHERE "chainId" = $1`, [
    chainId,
    loop === null ? null : JSON.stringify(loop),
    new Date().toISOString(),
  ]);
}
