-- DropIndex
DROP INDEX "DomainEvent_publishedAt_createdAt_idx";

-- AlterTable
ALTER TABLE "DomainEvent" DROP COLUMN "publishedAt",
ADD COLUMN     "revertedAt" TIMESTAMP(3);

-- CreateIndex
CREATE INDEX "ConsumedEvent_eventId_idx" ON "ConsumedEvent"("eventId");

-- CreateIndex
CREATE INDEX "DomainEvent_createdAt_idx" ON "DomainEvent"("createdAt");

-- The rewards consumer's name in the per-consumer delivery state (it was "xp-rewards").
UPDATE "ConsumedEvent" SET "consumer" = 'rewards' WHERE "consumer" = 'xp-rewards';
