// The one list of the domains' manifests (domain/module.ts), and what the rest of the service reads
// from it. A new domain is its folder with a module.ts, and one line here.
import type { PlatformContractKey } from "../core/platform-abi.js";
import { apiKeysModule } from "./api-keys/module.js";
import { eventsModule } from "./events/module.js";
import { idempotencyModule } from "./idempotency/module.js";
import { jobsModule } from "./jobs/module.js";
import { loansModule } from "./loans/module.js";
import { mirrorModule } from "./mirror/module.js";
import type { DomainModule, TableKind } from "./module.js";
import { notificationsModule } from "./notifications/module.js";
import { paymentsModule } from "./payments/module.js";
import { processesModule } from "./processes/module.js";
import { rewardsModule } from "./rewards/module.js";
import { sandboxModule } from "./sandbox/module.js";
import { siweModule } from "./siwe/module.js";
import { socialVaultModule } from "./social-vault/module.js";
import { transactionsModule } from "./transactions/module.js";
import { trustScoreModule } from "./trust-score/module.js";
import { usersModule } from "./users/module.js";
import { vaultModule } from "./vault/module.js";
import { webhooksModule } from "./webhooks/module.js";
import { xpModule } from "./xp/module.js";

export const MODULES = [
  // In the order of service-spec part 6's event list, as the webhooks' names follow it.
  loansModule,
  vaultModule,
  socialVaultModule,
  trustScoreModule,
  xpModule,
  paymentsModule,
  usersModule,
  siweModule,
  apiKeysModule,
  rewardsModule,
  notificationsModule,
  webhooksModule,
  transactionsModule,
  eventsModule,
  jobsModule,
  processesModule,
  idempotencyModule,
  sandboxModule,
  mirrorModule,
] as const satisfies readonly DomainModule[];

type Module = (typeof MODULES)[number];
/** The manifests as data (their literal types are for the derived types only). */
const DECLARED: readonly DomainModule[] = MODULES;
type UnionToIntersection<U> = (U extends unknown ? (union: U) => void : never) extends (intersection: infer I) => void ? I : never;
type EventsOf<M> = M extends { events: infer E } ? E : never;

/** Every domain's event types, one record (the catalogue, domain/events/catalogue.ts). */
export type ModuleEvents = UnionToIntersection<EventsOf<Module>>;

/** The modules' event definitions in one record; a type two modules declare is refused here, at load. */
export const MODULE_EVENTS = Object.fromEntries(
  declaredOnce(DECLARED.flatMap((module) => Object.entries(module.events ?? {}))),
) as ModuleEvents;

type ErrorsOf<M> = M extends { errors: infer E } ? E : never;
/** The domains' error codes and their HTTP statuses (domain/errors.ts adds the platform's). */
export type ModuleErrors = UnionToIntersection<ErrorsOf<Module>>;
export const MODULE_ERRORS = Object.fromEntries(
  declaredOnce(DECLARED.flatMap((module) => Object.entries(module.errors ?? {}))),
) as ModuleErrors;

type ConsumersOf<M> = M extends { consumers: readonly (infer C)[] } ? C : never;
/** The outbox consumers' names (a name is stored with each event a consumer took). */
export type ConsumerName = ConsumersOf<Module>;
export const CONSUMERS = names(DECLARED.flatMap((module) => module.consumers ?? [])) as ConsumerName[];

type JobsOf<M> = M extends { jobs: readonly (infer J)[] } ? J : never;
/** The periodic jobs' names (worker/jobs.ts runs one of each). */
export type JobName = JobsOf<Module>;

type QueueKindsOf<M> = M extends { queueKinds: readonly (infer K)[] } ? K : never;
/** The job queue's kinds the domains' handlers run (worker/jobs.ts), besides periodic runs and outbox pages. */
export type QueueKind = QueueKindsOf<Module>;
export const QUEUE_KINDS = names(DECLARED.flatMap((module) => module.queueKinds ?? [])) as QueueKind[];

/** The platform's contracts (core/platform-abi.ts), each declared by one module, with what the relay may call on it. */
export const CONTRACTS = new Map(declaredOnce(DECLARED.flatMap((module) => Object.entries(module.contracts ?? {})))) as ReadonlyMap<
  PlatformContractKey,
  { readonly relay?: readonly string[] }
>;

/** The OpenAPI tags of the routes (a route belongs to the module that declares its tag). */
export const ROUTE_TAGS = names(DECLARED.flatMap((module) => (module.routeTag ? [module.routeTag] : [])));

/** The tables whose rows come from the chain: cleared when the embedded chain, new at every start, replaces the one the database mirrored. */
export const CHAIN_DERIVED_TABLES = tablesOfKind("chain", "log", "state");

/** The tables of these kinds, in the modules' order. */
export function tablesOfKind(...kinds: TableKind[]): string[] {
  return DECLARED.flatMap((module) =>
    Object.entries(module.tables ?? {}).flatMap(([table, kind]) => (kinds.includes(kind!) ? [table] : [])),
  );
}

/** Names each declared once. */
function names(list: readonly string[]): string[] {
  return declaredOnce(list.map((name) => [name, name])).map(([name]) => name);
}

function declaredOnce<V>(entries: [string, V][]): [string, V][] {
  const seen = new Set<string>();
  for (const [key] of entries) {
    if (seen.has(key)) throw new Error(`${key} is declared by two domain modules`);
    seen.add(key);
  }
  return entries;
}
