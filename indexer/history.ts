import { zeroPadValue } from "ethers";
import type { SqlQuery } from "../core/db.js";
import type { Logger } from "../core/logger.js";
import { managedWalletsSince } from "../domain/users/wallet-directory.js";
import type { ContractCatalogue } from "./contracts.js";
import { ChainMovedError, fetchRange } from "./fetch.js";
import { type Classifier, createdVaults, decodeLogs, type IndexedLog } from "./handlers.js";
import { isRangeError, type Rpc, type RpcBlock, type RpcLog } from "./rpc.js";
import { col, insertRows } from "./sql.js";

/** Where the mirror stands: the last block it holds, by number and hash. */
export interface Cursor {
  blockNumber: number;
  blockHash: string;
}

// History before an address was known (D-93). The indexer keeps the USDC transfers of the
// addresses it knows; a managed wallet becomes known when its user is created, a social vault when
// the factory creates it, and either may have received USDC before. When a batch learns addresses,
// their transfers from the deployment up to the batch's start are read (topic filters: sent by or
// to one of them) and committed with the batch: rows mirrored already are kept, so a backfill that
// runs again (a crash, a restart, a vault created again after a reorganisation) adds nothing twice.

/** A batch's backfilled logs (USDC transfers at or below its cursor) and their transfer rows. */
export interface History {
  logs: IndexedLog[];
  transfers: unknown[][];
}

export const noHistory = (): History => ({ logs: [], transfers: [] });

/** ChainLog's columns and a log's row: the range's bulk load and the history's upsert write the same. */
export const CHAIN_LOG_COLUMNS = [
  col("blockNumber", "int4"),
  col("logIndex", "int4"),
  col("ordinal", "int4"),
  col("blockHash", "text"),
  col("txHash", "text"),
  col("address", "text"),
  col("topic0", "text"),
  col("topic1", "text"),
  col("topic2", "text"),
  col("topic3", "text"),
  col("data", "text"),
  col("source", "text"),
  col("eventName", "text"),
  col("status", "text"),
  col("error", "text"),
  col("entities", "text"),
];

export const chainLogRow = (l: IndexedLog) => [
  l.blockNumber,
  l.logIndex,
  l.ordinal,
  l.blockHash,
  l.txHash,
  l.address,
  l.topics[0],
  l.topics[1],
  l.topics[2],
  l.topics[3],
  l.data,
  l.source,
  l.decoded?.name ?? null,
  l.status,
  l.error,
  l.entities.join(" "),
];

export const USDC_TRANSFER_COLUMNS = [
  col("blockNumber", "int4"),
  col("logIndex", "int4"),
  col("txHash", "text"),
  col("from", "text"),
  col("to", "text"),
  col("amount", "int8"),
  col("timestamp", "timestamp(3)"),
];

/** The highest managed wallet index whose history is mirrored (-1: none). */
export async function mirroredWalletIndex(query: SqlQuery, chainId: number): Promise<number> {
  const { rows } = await query<{ walletIndex: number | null }>(`SELECT "walletIndex" FROM "IndexerCursor" WHERE "chainId" = $1`, [chainId]);
  const index = rows[0]?.walletIndex;
  return index === null || index === undefined ? -1 : Number(index);
}

/** Wallets learned by one batch at most (one topic list of the history's filters); the rest come with the next. */
const WALLETS_PER_BATCH = 100;

/** What a batch learned: its history's logs (decoded) and headers, and the wallets it knows from now on. */
export interface Learned {
  logs: IndexedLog[];
  headers: Map<number, RpcBlock>;
  wallets: string[];
  walletIndex: number;
}

/**
 * The addresses a batch learns, the managed wallets created since `walletIndex` and the social
 * vaults its range creates, with their USDC transfers at or below the cursor. Only the learned
 * vaults' balances take those transfers: a known vault's balance has every transfer of its own.
 */
export async function learnAddresses(
  deps: { query: SqlQuery; rpc: Rpc; catalogue: ContractCatalogue; logger: Logger; firstBlock: number; chunk: number },
  classifier: Classifier,
  range: { raw: RpcLog[]; cursor: Cursor | null; walletIndex: number },
  signal: AbortSignal,
): Promise<Learned> {
  const { addresses } = classifier;
  const fresh = await managedWalletsSince(deps.query, range.walletIndex, { limit: WALLETS_PER_BATCH });
  const vaults = createdVaults(range.raw, deps.catalogue, classifier);
  const learned = { logs: [] as IndexedLog[], headers: new Map<number, RpcBlock>(), wallets: fresh.wallets, walletIndex: fresh.lastIndex };
  const { cursor } = range;
  if (fresh.wallets.length + vaults.length === 0 || !cursor || cursor.blockNumber < deps.firstBlock) return learned;
  const { logs, headers } = await fetchHistory(
    deps.rpc,
    deps.catalogue,
    addresses.usdc,
    [...fresh.wallets, ...vaults],
    { firstBlock: deps.firstBlock, cursor, chunk: deps.chunk },
    deps.logger,
    signal,
  );
  const scope: Classifier = { addresses, socialVaults: new Set(vaults), wallets: new Set(fresh.wallets) };
  learned.logs = decodeLogs(logs, deps.catalogue, scope, (block) => headers.get(block)!.timestamp);
  learned.headers = headers;
  return learned;
}

/**
 * The USDC transfers sent by or to `addresses` over [firstBlock, cursor], read in ranges of `chunk`
 * blocks, with their blocks' headers. Throws ChainMovedError unless every log is of its block and
 * the cursor's block is still the cursor's: the history is of the chain the batch extends.
 */
async function fetchHistory(
  rpc: Rpc,
  catalogue: ContractCatalogue,
  usdc: string,
  addresses: string[],
  range: { firstBlock: number; cursor: Cursor; chunk: number },
  logger: Logger,
  signal: AbortSignal,
): Promise<{ logs: RpcLog[]; headers: Map<number, RpcBlock> }> {
  const { firstBlock, cursor, chunk } = range;
  const transfer = catalogue.topicOf("usdc", "Transfer");
  const topics = addresses.map((address) => zeroPadValue(address, 32).toLowerCase());
  const filters = [
    { address: usdc, topics: [transfer, topics] },
    { address: usdc, topics: [transfer, null, topics] },
  ];
  const logs: RpcLog[] = [];
  const headers = new Map<number, RpcBlock>();
  let size = chunk;
  for (let from = firstBlock; from <= cursor.blockNumber; ) {
    const to = Math.min(cursor.blockNumber, from + size - 1);
    let part: Awaited<ReturnType<typeof fetchRange>>;
    try {
      part = await fetchRange(rpc, filters, logger, from, to, signal);
    } catch (error) {
      // A range the provider refuses is read in halves, as the indexer's own ranges; other failures
      // fail the batch, which is built again from the database's cursor.
      if (!isRangeError(error) || size === 1) throw error;
      size = Math.max(1, Math.floor(size / 2));
      continue;
    }
    logs.push(...part.logs);
    for (const [number, header] of part.headers) headers.set(number, header);
    from = to + 1;
  }
  // The last range ended at the cursor: the same block there means the same chain below it.
  if (headers.get(cursor.blockNumber)?.hash !== cursor.blockHash) throw new ChainMovedError(`block ${cursor.blockNumber} was replaced`);
  for (const log of logs) {
    const block = Number.parseInt(log.blockNumber, 16);
    if (headers.get(block)?.hash !== log.blockHash) throw new ChainMovedError(`log of block ${block} is from a replaced block`);
  }
  return { logs, headers };
}

/** The vault keys of two entity lists together, each once (a log mirrored before learns the vaults it changes). */
const MERGED_ENTITIES = `array_to_string(ARRAY(SELECT DISTINCT e FROM unnest(string_to_array("ChainLog"."entities", ' ') || string_to_array(EXCLUDED."entities", ' ')) AS e WHERE e <> '' ORDER BY e), ' ')`;

/**
 * Writes a batch's history: a log mirrored already (a transfer with a watched end at the time)
 * keeps its row and adds the vaults it changes to its entities, so a rollback rebuilds them from it.
 * No outbox event: a fact from before the address was known gives nothing (D-93).
 */
export async function writeHistory(query: SqlQuery, chainId: number, history: History): Promise<void> {
  const constants = { chainId: { type: "int4" as const, value: chainId } };
  await insertRows(query, "ChainLog", CHAIN_LOG_COLUMNS, history.logs.map(chainLogRow), {
    constants,
    onConflict: `ON CONFLICT ("chainId", "blockNumber", "logIndex") DO UPDATE SET "entities" = ${MERGED_ENTITIES}`,
  });
  await insertRows(query, "UsdcTransfer", USDC_TRANSFER_COLUMNS, history.transfers, { constants, onConflict: "ON CONFLICT DO NOTHING" });
}
