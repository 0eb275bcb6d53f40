-- AlterTable
ALTER TABLE "Webhook" ADD COLUMN     "fromSeq" BIGINT NOT NULL DEFAULT 0;
