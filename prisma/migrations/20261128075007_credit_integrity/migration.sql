-- AlterTable
ALTER TABLE "Activity" ADD COLUMN     "rewardDay" TEXT;

-- AlterTable
ALTER TABLE "LoanChainState" ADD COLUMN     "paidByOthers" BIGINT NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "Payment" ADD COLUMN     "heldUntil" TIMESTAMP(3);

-- AlterTable
ALTER TABLE "TrustScoreInput" ADD COLUMN     "lastCountedRepaymentAt" TIMESTAMP(3),
ADD COLUMN     "peakHeldMicro" BIGINT NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "VaultPosition" ADD COLUMN     "peakCostBasis" BIGINT NOT NULL DEFAULT 0;

-- CreateIndex
CREATE UNIQUE INDEX "Activity_userId_type_rewardDay_key" ON "Activity"("userId", "type", "rewardDay");

-- A position's peak is at least what it holds now (its history before this column is not replayed).
UPDATE "VaultPosition" SET "peakCostBasis" = "costBasis" WHERE "costBasis" > 0;
