// What a domain declares of itself, in one manifest (`domain/<name>/module.ts`): its tables, its
// event types, the outbox consumers, queue kinds and periodic jobs it runs, its contracts and
// what the relay may call on them, and the OpenAPI tag of its routes. The lists the rest of the service reads (the event catalogue, the webhook names, the
// consumers, the tables a new chain clears, the tables a reorg trims) are derived from these
// manifests in modules.ts, and test/architecture/modules.test.ts checks that every table, event
// type, queue kind, periodic job, consumer and route is declared by exactly one of them.
import type { PlatformContractKey } from "../core/platform-abi.js";
import type { Prisma } from "../generated/prisma/client.js";
import type { EventDefinition } from "./events/define.js";

/**
 * Who writes a table, and what becomes of it with the chain:
 * - `own`: the domain's repository (or, for machinery, its store) writes it; it stays across chains;
 * - `chain`: the same, but its rows name the chain (its contracts, transactions or time), so a new
 *   embedded chain clears it;
 * - `log`: the indexer writes it, a row per log, keyed by block: a reorg trims it, a new chain clears it;
 * - `state`: the indexer folds it from the logs: a reorg rebuilds it, a new chain clears it.
 */
export type TableKind = "own" | "chain" | "log" | "state";

export interface DomainModule {
  /** The folder's name under domain/. */
  readonly name: string;
  /** Its error codes (service-spec part 7), each with its HTTP status; the platform's own are in domain/errors.ts. */
  readonly errors?: Readonly<Record<string, number>>;
  readonly tables?: Readonly<Partial<Record<Prisma.ModelName, TableKind>>>;
  /** The event types it writes (or, for chain facts, the indexer writes for it). */
  readonly events?: Readonly<Record<string, EventDefinition>>;
  /** Its outbox consumers (domain/events/consumer.ts). A name is stored with each event a consumer took: never rename one. */
  readonly consumers?: readonly string[];
  /** The job queue's kinds its handlers run (domain/jobs/), besides periodic jobs and outbox pages. */
  readonly queueKinds?: readonly string[];
  /** Its periodic jobs (worker/jobs.ts), by name. */
  readonly jobs?: readonly string[];
  /**
   * The platform contracts it owns (deployment keys of core/platform-abi.ts), and for each the
   * functions a user's signed request may call through the relay (ERC-2771; relayAllowList).
   */
  readonly contracts?: Readonly<Partial<Record<PlatformContractKey, { readonly relay?: readonly string[] }>>>;
  /** The OpenAPI tag of its routes (api/<name>/routes.ts, mounted with `routesOf`). */
  readonly routeTag?: string;
}

/** Declares a domain's manifest, keeping its literal types (the event catalogue's types come from them). */
export const defineModule = <const M extends DomainModule>(module: M): M => module;
