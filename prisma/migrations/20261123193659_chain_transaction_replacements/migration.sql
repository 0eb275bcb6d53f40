-- AlterTable
ALTER TABLE "ChainTransaction" ADD COLUMN     "previousTxHashes" TEXT[] DEFAULT ARRAY[]::TEXT[];
