-- AlterTable
ALTER TABLE "ChainTransaction" ADD COLUMN     "requestHash" TEXT;

-- AlterTable
ALTER TABLE "IdempotencyRecord" ADD COLUMN     "holder" TEXT;

-- AlterTable
ALTER TABLE "UserTransactionLease" ADD COLUMN     "processId" TEXT;

-- CreateTable
CREATE TABLE "ServiceProcess" (
    "id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "pid" INTEGER NOT NULL,
    "host" TEXT NOT NULL,
    "startedAt" TIMESTAMP(3) NOT NULL,
    "heartbeatAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ServiceProcess_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "ServiceProcess_heartbeatAt_idx" ON "ServiceProcess"("heartbeatAt");

-- Transactions sent before this migration take the body hash their key's answer still keeps.
UPDATE "ChainTransaction" t SET "requestHash" = r."requestHash"
  FROM "IdempotencyRecord" r
  WHERE r."userId" = t."userId" AND r."key" = t."idempotencyKey";
