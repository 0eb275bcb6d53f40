import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { PLATFORM_ARTIFACTS, platformInterface } from "../../core/platform-abi.js";
import { ERROR_STATUS, PLATFORM_ERRORS } from "../../domain/errors.js";
import { EVENT_TYPES } from "../../domain/events/catalogue.js";
import type { DomainModule } from "../../domain/module.js";
import { CHAIN_DERIVED_TABLES, CONTRACTS, MODULES, QUEUE_KINDS, ROUTE_TAGS } from "../../domain/modules.js";
import { LOG_TABLES } from "../../indexer/store.js";
import { createPlatformHandlers, createPlatformJobs, type PlatformJobDeps } from "../../worker/jobs.js";

// Every table, event type, queue kind, periodic job and route is declared by exactly one domain's
// manifest (domain/<name>/module.ts, listed in domain/modules.ts): what the service derives from
// the manifests (the catalogue, the webhooks' names, the tables a new chain clears and a reorg
// trims) then covers all of it, and a newcomer finds each piece by its domain.
const ROOT = path.resolve(import.meta.dirname, "..", "..");
const DECLARED: readonly DomainModule[] = MODULES;

/** Each name and the modules that declare it, for the names that are not declared exactly once. */
function notOnce(all: readonly string[], declared: (module: DomainModule) => readonly string[]): Record<string, string[]> {
  const by = new Map<string, string[]>(all.map((name) => [name, []]));
  for (const module of DECLARED) for (const name of declared(module)) by.set(name, [...(by.get(name) ?? []), module.name]);
  return Object.fromEntries([...by].filter(([, modules]) => modules.length !== 1));
}

function sourceFiles(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const file = path.join(folder, name);
    if (statSync(file).isDirectory()) return sourceFiles(file);
    return file.endsWith(".ts") ? [file] : [];
  });
}

/** What the worker builds, for its names only (nothing runs). */
const workerNames = () => {
  const services = { fundsLoans: true, outbox: { handlers: () => ({}) }, outboxConsumers: [] } as unknown as PlatformJobDeps["services"];
  return {
    jobs: createPlatformJobs({ services }).map((job) => job.name),
    kinds: Object.keys(createPlatformHandlers({ services, clock: { now: () => new Date() } })),
  };
};

describe("the domains' manifests (domain/modules.ts)", () => {
  it("declare every table of the Prisma schema, each in one module", () => {
    const models = [...readFileSync(path.join(ROOT, "prisma", "schema.prisma"), "utf8").matchAll(/^model (\w+) \{/gm)].map((m) => m[1]!);
    expect(models).to.have.length.above(30);
    expect(notOnce(models, (module) => Object.keys(module.tables ?? {}))).to.deep.equal({});
  });

  it("derive the tables a new chain clears and a reorg trims from their kinds", () => {
    const kinds = Object.fromEntries(DECLARED.flatMap((module) => Object.entries(module.tables ?? {})));
    expect(CHAIN_DERIVED_TABLES).to.include.members(["LoanChainState", "PaymentChainEvent", "LoanRequest", "ChainTransaction"]);
    expect(CHAIN_DERIVED_TABLES.filter((table) => kinds[table] === "own")).to.deep.equal([]);
    expect([...LOG_TABLES].sort()).to.deep.equal(
      Object.keys(kinds)
        .filter((table) => kinds[table] === "log")
        .sort(),
    );
  });

  it("declare every event type of the catalogue, each in one module", () => {
    expect(EVENT_TYPES).to.have.length.above(25);
    expect(notOnce(EVENT_TYPES, (module) => Object.keys(module.events ?? {}))).to.deep.equal({});
  });

  it("declare each error code with its status once: the platform's in domain/errors.ts, a domain's in its manifest", () => {
    const codes = Object.keys(ERROR_STATUS);
    expect(codes).to.have.length.above(50);
    const declared = [...Object.keys(PLATFORM_ERRORS), ...DECLARED.flatMap((module) => Object.keys(module.errors ?? {}))];
    expect(declared.filter((code, i) => declared.indexOf(code) !== i)).to.deep.equal([]);
    expect([...declared].sort()).to.deep.equal([...codes].sort());
    expect(Object.values(ERROR_STATUS).filter((status) => !(status >= 400 && status < 600))).to.deep.equal([]);
  });

  it("declare every queue kind the worker runs and every periodic job, each in one module", () => {
    const { jobs, kinds } = workerNames();
    expect(jobs).to.have.length.above(5);
    expect(notOnce(jobs, (module) => module.jobs ?? [])).to.deep.equal({});
    expect(kinds.sort()).to.deep.equal([...QUEUE_KINDS].sort());
    expect(notOnce(kinds, (module) => module.queueKinds ?? [])).to.deep.equal({});
  });

  it("name every queue kind the code enqueues by a manifest's constant (no kind written as a bare string)", () => {
    const files = ["domain", "worker", "api", "indexer"].flatMap((folder) => sourceFiles(path.join(ROOT, folder)));
    const bare = files.flatMap((file) =>
      [...readFileSync(file, "utf8").matchAll(/enqueue(?:Many)?\([\s\S]{0,400}?\bkind: "([^"]+)"/g)].map(
        (m) => `${path.relative(ROOT, file)}: ${m[1]}`,
      ),
    );
    expect(bare).to.deep.equal([]);
  });

  it("declare every platform contract (core/platform-abi.ts), each in one module, and relay only calls its ABI has", () => {
    expect(notOnce(Object.keys(PLATFORM_ARTIFACTS), (module) => Object.keys(module.contracts ?? {}))).to.deep.equal({});
    for (const [key, { relay = [] }] of CONTRACTS) {
      const abi = platformInterface(key);
      expect(
        relay.filter((name) => abi.getFunction(name) === null),
        key,
      ).to.deep.equal([]);
    }
  });

  it("give every route its domain: each routes file mounts its routes under one manifest's tag (routesOf), each tag in one file", () => {
    const files = sourceFiles(path.join(ROOT, "api")).filter((file) => readFileSync(file, "utf8").includes("defineRoute("));
    const mounted = files.map((file) => ({
      file: path.relative(ROOT, file),
      modules: [...readFileSync(file, "utf8").matchAll(/routesOf\((\w+)Module,/g)].map((m) => m[1]!),
    }));
    expect(mounted.length).to.be.above(8);
    expect(mounted.filter(({ modules }) => new Set(modules).size !== 1)).to.deep.equal([]);
    const byName = new Map(DECLARED.map((module) => [module.name.replace(/-(\w)/g, (_, c: string) => c.toUpperCase()), module]));
    const tags = mounted.map(({ modules }) => byName.get(modules[0]!)?.routeTag);
    expect([...tags].sort()).to.deep.equal([...ROUTE_TAGS].sort());
  });
});
