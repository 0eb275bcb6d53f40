// The mirror's manifest (domain/module.ts): the indexer's own tables (which chain this database
// mirrors, the cursor, the blocks, every platform log, the watched USDC transfers) and the token. The domains'
// mirror tables are in their own manifests.
import { defineModule } from "../module.js";

export const mirrorModule = defineModule({
  name: "mirror",
  tables: { ChainIdentity: "own", IndexerCursor: "chain", ChainBlock: "log", ChainLog: "log", UsdcTransfer: "log" },
  // The token (a mock on development chains): its transfers touching the platform are mirrored.
  contracts: { usdc: {} },
});
