import type { JsonRpcProvider } from "ethers";
import { ChainUnavailableError, connectRpc, type EmbeddedChain, startEmbeddedChain } from "./chain.js";
import { ChainMismatchError } from "./chain-identity.js";
import { type Config, ConfigError } from "./config.js";
import { type Database, openDatabase } from "./db.js";
import type { Logger } from "./logger.js";
import { applyMigrations } from "./migrations.js";

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
  let db: Database;
  try {
    db = await openDatabase({ databaseUrl: config.database.url, pgliteDataDir: config.database.pgliteDir });
  } catch (error) {
    const e = error as { code?: string; message?: string; cause?: { code?: string; message?: string } };
    const reason = e.cause?.message ?? e.message ?? e.code ?? String(error);
    throw new DatabaseUnavailableError(
      config.database.url
        ? `database: cannot connect to DATABASE_URL ${redactUrl(config.database.url)} (${reason.split("\n")[0]})`
        : `database: cannot open the embedded database in ${config.database.pgliteDir} (${reason.split("\n")[0]})`,
    );
  }
  try {
    const applied = await applyMigrations(db.migrationAdapter());
    logger.info({ database: db.kind, applied }, applied.length > 0 ? "migrations applied" : "database schema up to date");
  } catch (error) {
    await db.close().catch(() => {});
    throw new DatabaseUnavailableError(`database: migrations failed (${String((error as Error).message).split("\n")[0]})`);
  }
  return db;
}
