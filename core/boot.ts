import { existsSync } from "node:fs";
import path from "node:path";
import type { JsonRpcProvider } from "ethers";
import { ChainUnavailableError, connectRpc, type EmbeddedChain, startEmbeddedChain } from "./chain.js";
import { ChainMismatchError, ensureChainIdentity } from "./chain-identity.js";
import { createSharedClock, type SharedClock } from "./clock.js";
import { type Config, ConfigError } from "./config.js";
import { type Database, openDatabase, openFailureReason } from "./db.js";
import { type Deployment, deploymentPath, readDeployment } from "./deployments.js";
import type { Logger } from "./logger.js";
import { applyMigrations, applyMigrationsInThread, MigrationTargetError, migrationsCurrent } from "./migrations.js";

export class DatabaseUnavailableError extends Error {
  override name = "DatabaseUnavailableError";
}

/** Errors whose message is the whole story: printed as one line, no stack. */
const EXPECTED = [ConfigError, ChainUnavailableError, DatabaseUnavailableError, ChainMismatchError];

export function isExpectedStartError(error: unknown): error is Error {
  return EXPECTED.some((type) => error instanceof type) || (error as Error)?.name === "HttpStartError";
}

export interface BootedChain {
  rpcUrl: string;
  chainId: number;
  provider: JsonRpcProvider;
  embedded: EmbeddedChain | undefined;
  close(): Promise<void>;
}

export async function bootChain(config: Config, logger: Logger): Promise<BootedChain> {
  let embedded: EmbeddedChain | undefined;
  if (config.chain.mode === "embedded") {
    embedded = await startEmbeddedChain("127.0.0.1", config.chain.embeddedPort);
    logger.info({ rpcUrl: embedded.rpcUrl }, "embedded EDR chain serving JSON-RPC");
  }
  const rpcUrl = embedded?.rpcUrl ?? config.chain.rpcUrl;
  const { provider, chainId } = await connectRpc(rpcUrl);
  return {
    rpcUrl,
    chainId,
    provider,
    embedded,
    close: async () => {
      provider.destroy();
      await embedded?.close();
    },
  };
}

/** `postgresql://user:secret@host/db` → `postgresql://user:***@host/db`, for messages. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, "//$1:***@");
}

export async function bootDatabase(config: Config, logger: Logger): Promise<Database> {
  const target = { databaseUrl: config.database.url, pgliteDataDir: config.database.pgliteDir };
  const cannotOpen = (error: unknown) => {
    const reason = openFailureReason(error);
    return new DatabaseUnavailableError(
      config.database.url
        ? `database: cannot connect to DATABASE_URL ${redactUrl(config.database.url)} (${reason.split("\n")[0]})`
        : `database: cannot open the embedded database in ${config.database.pgliteDir} (${reason.split("\n")[0]})`,
    );
  };
  const failed = (error: unknown) =>
    new DatabaseUnavailableError(`database: migrations failed (${String((error as Error).message).split("\n")[0]})`);
  const open = () =>
    openDatabase(target).catch((error: unknown) => {
      throw cannotOpen(error);
    });
  // Pending migrations are applied in a thread of their own (applyMigrationsInThread), except in an
  // in-memory PGlite, which no other thread can reach. One PGlite at a time opens a folder: a new
  // folder is created by that thread, and an open one is closed while it works.
  const inMemory = !target.databaseUrl && target.pgliteDataDir.startsWith("memory://");
  const inThread = async () => {
    try {
      return await applyMigrationsInThread(target);
    } catch (error) {
      throw error instanceof MigrationTargetError ? cannotOpen(error) : failed(error);
    }
  };
  let applied: string[] = [];
  if (!target.databaseUrl && !inMemory && !existsSync(path.join(target.pgliteDataDir, "PG_VERSION"))) applied = await inThread();
  let db = await open();
  let current: boolean;
  try {
    current = await migrationsCurrent(db.sql.query);
    if (!current && inMemory) applied = await applyMigrations(db.migrationAdapter());
    else if (!current && db.kind === "postgres") applied = await inThread();
  } catch (error) {
    await db.close().catch(() => {});
    throw error instanceof DatabaseUnavailableError ? error : failed(error);
  }
  if (!current && db.kind === "pglite" && !inMemory) {
    await db.close();
    applied = await inThread();
    db = await open();
  }
  logger.info({ database: db.kind, applied }, applied.length > 0 ? "migrations applied" : "database schema up to date");
  return db;
}

/**
 * The start of a part run as its own process (`npm run api`, `npm run indexer`) against a shared
 * chain and PostgreSQL: both must be external, the chain's deployment recorded, and the database
 * mirroring that chain. Registers the closing of what it opened with `onStop`.
 */
export async function bootSharedChainAndDatabase(
  part: string,
  config: Config,
  logger: Logger,
  onStop: (stopper: () => Promise<void>) => void,
): Promise<{ chain: BootedChain; deployment: Deployment; db: Database }> {
  if (config.chain.mode === "embedded" || !config.database.url) {
    throw new ConfigError(
      `config: npm run ${part} needs CHAIN_RPC_URL and DATABASE_URL (the embedded chain and database live inside npm start)`,
    );
  }
  const chain = await bootChain(config, logger);
  onStop(() => chain.close());
  const deployment = readDeployment(chain.chainId);
  if (!deployment)
    throw new ConfigError(`config: ${deploymentPath(chain.chainId)} not found; run npm run deploy against CHAIN_RPC_URL first`);
  const db = await bootDatabase(config, logger);
  onStop(() => db.close());
  await ensureChainIdentity(db, deployment, { embedded: false, logger });
  return { chain, deployment, db };
}

/** The service clock of a process: shared through the database with the deployment's other processes. */
export async function bootClock(db: Database, logger: Logger, onStop: (close: () => void) => void): Promise<SharedClock> {
  const clock = await createSharedClock(db, {
    onError: (error) => logger.warn({ err: error }, "service clock: could not read the shared offset; keeping the last one"),
  });
  onStop(() => clock.stop());
  return clock;
}
