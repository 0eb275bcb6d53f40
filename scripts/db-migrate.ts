// `npm run db:migrate`: applies prisma/migrations to DATABASE_URL, or to the embedded PGlite.
import { bootDatabase, isExpectedStartError } from "../core/boot.js";
import { loadConfig } from "../core/config.js";
import { createLogger } from "../core/logger.js";

try {
  const config = loadConfig();
  const db = await bootDatabase(config, createLogger(config.logLevel));
  await db.close();
  console.log(`db:migrate: ${db.kind} database is up to date`);
} catch (error) {
  console.error(isExpectedStartError(error) ? (error as Error).message : error);
  process.exit(1);
}
