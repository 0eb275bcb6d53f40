// A child process that runs the indexer on an embedded PGlite database directory (DATA_DIR),
// for the crash tests of the embedded mode (`npm run indexer` needs PostgreSQL). Prints
// `indexed <block>` after every block it commits, so the parent can kill it mid-backfill.
import { loadConfig } from "../../core/config.js";
import { openDatabase } from "../../core/db.js";
import { readDeployment } from "../../core/deployments.js";
import { createLogger } from "../../core/logger.js";
import { applyMigrations } from "../../core/migrations.js";
import { createIndexer } from "../../indexer/indexer.js";
import { createRpc } from "../../indexer/rpc.js";

const config = loadConfig();
const rpc = createRpc(config.chain.rpcUrl);
const deployment = readDeployment(await rpc.chainId());
if (!deployment) throw new Error("no deployment for the chain");
const db = await openDatabase({ pgliteDataDir: config.database.pgliteDir });
await applyMigrations(db.migrationAdapter());
const indexer = createIndexer({
  db,
  rpcUrl: config.chain.rpcUrl,
  deployment,
  logger: createLogger(config.logLevel, "indexer"),
  confirmations: 0,
  pollMs: config.indexer.pollMs,
  maxBlockRange: config.indexer.maxBlockRange,
});
indexer.start();
console.log("ready: indexer");
let last = -1;
setInterval(() => {
  const { indexedBlock } = indexer.status();
  if (indexedBlock !== last) {
    last = indexedBlock;
    console.log(`indexed ${indexedBlock}`);
  }
}, 5);
process.once("SIGTERM", async () => {
  await indexer.stop();
  await db.close();
  process.exit(0);
});
