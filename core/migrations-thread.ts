// The migrations' thread (applyMigrationsInThread in core/migrations.ts): opens the database,
// applies what is pending with Prisma's schema engine, closes the database, and ends. The engine's
// WebAssembly instance lives as long as its module, which is as long as its thread: here, seconds.
import { parentPort, workerData } from "node:worker_threads";
import { type Database, openDatabase, openFailureReason } from "./db.js";
import { applyMigrations, type MigrationTarget, type MigrationThreadAnswer } from "./migrations.js";

const answer = (message: MigrationThreadAnswer) => parentPort!.postMessage(message);

let db: Database | undefined;
try {
  db = await openDatabase(workerData as MigrationTarget);
} catch (error) {
  answer({ error: openFailureReason(error), opening: true });
}
if (db) {
  try {
    answer({ applied: await applyMigrations(db.migrationAdapter()) });
  } catch (error) {
    answer({ error: openFailureReason(error), opening: false });
  } finally {
    await db.close();
  }
}
// Ends this thread only. Not waiting for its event loop to drain: the schema engine leaves a
// 10-second timer behind (its lock timeout), which held the start for that long.
process.exit(0);
