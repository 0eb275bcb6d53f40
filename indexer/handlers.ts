import { ordinalsOf } from "../domain/events/ids.js";
import type { ContractCatalogue, Decoded, PlatformAddresses, Source } from "./contracts.js";
import type { Context, EventArgsOf, EventHandlers, IndexedLog } from "./handlers/context.js";
import { loanBookHandlers } from "./handlers/loan-book.js";
import { paymentRouterHandlers } from "./handlers/payment-router.js";
import { socialVaultFactoryHandlers, socialVaultHandlers } from "./handlers/social-vault.js";
import { stakingVaultHandlers } from "./handlers/staking-vault.js";
import { usdcHandlers } from "./handlers/usdc.js";
import type { RpcLog } from "./rpc.js";

export { type BatchOutput, emptyOutput, type IndexedLog, type PendingEvent } from "./handlers/context.js";

/** The derived rows and domain events of each platform event; events not listed are mirrored raw only. */
const HANDLERS: Record<Source, EventHandlers> = {
  usdc: usdcHandlers,
  stakingVault: stakingVaultHandlers,
  loanBook: loanBookHandlers,
  socialVaultFactory: socialVaultFactoryHandlers,
  socialVault: socialVaultHandlers,
  paymentRouter: paymentRouterHandlers,
};

/** Which source a raw log belongs to, or null when it is not the platform's. */
export interface Classifier {
  addresses: PlatformAddresses;
  socialVaults: Set<string>;
  /** Managed wallets and other addresses whose USDC transfers are mirrored. */
  wallets: Set<string>;
}

function classify(log: RpcLog, classifier: Classifier): Source | null {
  const address = log.address.toLowerCase();
  const { addresses } = classifier;
  if (address === addresses.stakingVault) return "stakingVault";
  if (address === addresses.loanBook) return "loanBook";
  if (address === addresses.socialVaultFactory) return "socialVaultFactory";
  if (address === addresses.usdc) return "usdc";
  if (address === addresses.paymentRouter) return "paymentRouter";
  if (classifier.socialVaults.has(address)) return "socialVault";
  return null;
}

/** Is this USDC transfer one the platform cares about (touching its contracts, vaults or wallets)? */
function watchedTransfer(decoded: Decoded, classifier: Classifier): boolean {
  const { from, to } = decoded.args as unknown as EventArgsOf<"usdc", "Transfer">;
  const { addresses, socialVaults, wallets } = classifier;
  const watched = (a: string) => a === addresses.stakingVault || a === addresses.loanBook || socialVaults.has(a) || wallets.has(a);
  return watched(from) || watched(to);
}

/** The social vaults the factory created in `raw` that the classifier does not know yet (lower-case). */
export function createdVaults(raw: RpcLog[], catalogue: ContractCatalogue, classifier: Classifier): string[] {
  const created = catalogue.topicOf("socialVaultFactory", "SocialVaultCreated");
  const vaults = new Set<string>();
  for (const log of raw) {
    if (log.topics[0] === created && log.address.toLowerCase() === classifier.addresses.socialVaultFactory && log.topics[2]) {
      const vault = `0x${log.topics[2].slice(26)}`.toLowerCase();
      if (!classifier.socialVaults.has(vault)) vaults.add(vault);
    }
  }
  return [...vaults];
}

/**
 * Turns raw logs (sorted by block and index) into indexed logs: source, decoded event, the
 * entities it changes. Social vault clones created inside the batch are recognised for the
 * logs that follow their creation. Logs that are not the platform's are dropped here.
 */
export function decodeLogs(
  raw: RpcLog[],
  catalogue: ContractCatalogue,
  classifier: Classifier,
  timestampOf: (blockNumber: number) => number,
): IndexedLog[] {
  // A clone's initializer logs come before the factory's SocialVaultCreated of the same
  // transaction: know every vault created in this range before classifying.
  for (const vault of createdVaults(raw, catalogue, classifier)) classifier.socialVaults.add(vault);
  // Counted over every fetched log, before any is dropped, as a receipt counts them.
  const ordinals = ordinalsOf(raw);
  const logs: IndexedLog[] = [];
  for (const [i, log] of raw.entries()) {
    const source = classify(log, classifier);
    if (source === null) continue;
    const blockNumber = Number.parseInt(log.blockNumber, 16);
    let decoded: Decoded | null = null;
    let status: IndexedLog["status"] = "decoded";
    let error: string | null = null;
    try {
      decoded = catalogue.decode(source, log);
      if (decoded === null) status = "unknown";
    } catch (caught) {
      status = "malformed";
      error = String((caught as Error).message).slice(0, 500);
    }
    if (source === "usdc" && (decoded === null || !watchedTransfer(decoded, classifier))) continue;
    const indexed: IndexedLog = {
      blockNumber,
      logIndex: Number.parseInt(log.logIndex, 16),
      ordinal: ordinals[i]!,
      blockHash: log.blockHash,
      txHash: log.transactionHash,
      address: log.address.toLowerCase(),
      topics: log.topics,
      data: log.data,
      source,
      status,
      error,
      decoded,
      entities: [],
      timestamp: timestampOf(blockNumber),
    };
    if (decoded) {
      const handler = HANDLERS[source][decoded.name];
      if (handler) {
        try {
          let keys = handler.entities(decoded.args as never, indexed);
          // A USDC transfer changes a social vault's balance only if one of its ends is a vault.
          if (source === "usdc") keys = keys.filter((key) => classifier.socialVaults.has(key.slice("svault:".length)));
          indexed.entities = [...new Set(keys)];
        } catch (caught) {
          indexed.status = "malformed";
          indexed.error = String((caught as Error).message).slice(0, 500);
          indexed.decoded = null;
        }
      }
    }
    logs.push(indexed);
  }
  return logs;
}

/**
 * Folds decoded logs into the state and (unless rebuilding) the append-only rows and events.
 * A handler that throws marks its log malformed and the batch goes on: one bad log never
 * stops the indexer.
 */
export function applyLogs(logs: IndexedLog[], ctx: Context, onError: (log: IndexedLog, error: Error) => void): void {
  for (const log of creationFirst(logs)) {
    if (!log.decoded) continue;
    const handler = HANDLERS[log.source][log.decoded.name];
    if (!handler) continue;
    try {
      handler.apply(ctx, log.decoded.args as never, log);
    } catch (error) {
      log.status = "malformed";
      log.error = String((error as Error).message).slice(0, 500);
      onError(log, error as Error);
    }
  }
}

/**
 * Chain order, except that a social vault's SocialVaultCreated is applied before the logs its
 * initializer emitted earlier in the same transaction (the vault's row must exist to take them).
 */
function creationFirst(logs: IndexedLog[]): IndexedLog[] {
  const creations = logs.filter((log) => log.source === "socialVaultFactory" && log.decoded?.name === "SocialVaultCreated");
  if (creations.length === 0) return logs;
  const ordered = logs.filter((log) => !creations.includes(log));
  for (const creation of creations) {
    const { vault } = creation.decoded!.args as unknown as EventArgsOf<"socialVaultFactory", "SocialVaultCreated">;
    const first = ordered.findIndex((log) => log.txHash === creation.txHash && log.address === vault);
    const at = first === -1 ? ordered.findIndex((log) => comesAfter(log, creation)) : first;
    ordered.splice(at === -1 ? ordered.length : at, 0, creation);
  }
  return ordered;
}

function comesAfter(a: IndexedLog, b: IndexedLog): boolean {
  return a.blockNumber > b.blockNumber || (a.blockNumber === b.blockNumber && a.logIndex > b.logIndex);
}
