-- AlterTable
ALTER TABLE "IndexerCursor" ADD COLUMN     "reorgLoop" JSONB;
