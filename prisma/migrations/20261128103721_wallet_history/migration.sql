-- The managed wallets whose USDC history from before they were known is mirrored (D-93). Null on an
-- existing mirror: every wallet's history is fetched once by the indexer after the upgrade.

-- AlterTable
ALTER TABLE "IndexerCursor" ADD COLUMN     "walletIndex" INTEGER;
