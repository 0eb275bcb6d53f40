-- AlterTable
ALTER TABLE "Activity" ADD COLUMN     "sourceId" TEXT;

-- AlterTable
ALTER TABLE "User" ADD COLUMN     "erasedAt" TIMESTAMP(3),
ADD COLUMN     "trustBaseScore" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "trustLevelBonus" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "trustRepayment" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "trustScorePublic" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "trustScoreUpdatedAt" TIMESTAMP(3),
ADD COLUMN     "trustSeniority" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "trustSocial" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "trustVolume" INTEGER NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "UserBadge" (
    "userId" TEXT NOT NULL,
    "badgeId" TEXT NOT NULL,
    "earnedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "UserBadge_pkey" PRIMARY KEY ("userId","badgeId")
);

-- CreateTable
CREATE TABLE "DomainEvent" (
    "id" UUID NOT NULL,
    "type" TEXT NOT NULL,
    "userId" TEXT,
    "data" JSONB NOT NULL,
    "dedupeKey" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "publishedAt" TIMESTAMP(3),

    CONSTRAINT "DomainEvent_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "TrustScoreInput" (
    "userId" TEXT NOT NULL,
    "onTimeRepayments" INTEGER NOT NULL DEFAULT 0,
    "totalVolumeMicro" BIGINT NOT NULL DEFAULT 0,
    "activeGuardians" INTEGER NOT NULL DEFAULT 0,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "TrustScoreInput_pkey" PRIMARY KEY ("userId")
);

-- CreateTable
CREATE TABLE "TrustScoreModifier" (
    "id" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "sourceId" TEXT NOT NULL,
    "appliedAt" TIMESTAMP(3) NOT NULL,
    "expiresAt" TIMESTAMP(3),

    CONSTRAINT "TrustScoreModifier_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "TrustScoreHistory" (
    "userId" TEXT NOT NULL,
    "day" TEXT NOT NULL,
    "score" INTEGER NOT NULL,
    "change" INTEGER NOT NULL,
    "reason" TEXT NOT NULL,

    CONSTRAINT "TrustScoreHistory_pkey" PRIMARY KEY ("userId","day")
);

-- CreateIndex
CREATE UNIQUE INDEX "DomainEvent_dedupeKey_key" ON "DomainEvent"("dedupeKey");

-- CreateIndex
CREATE INDEX "DomainEvent_publishedAt_createdAt_idx" ON "DomainEvent"("publishedAt", "createdAt");

-- CreateIndex
CREATE INDEX "DomainEvent_userId_createdAt_idx" ON "DomainEvent"("userId", "createdAt");

-- CreateIndex
CREATE INDEX "TrustScoreModifier_userId_appliedAt_idx" ON "TrustScoreModifier"("userId", "appliedAt");

-- CreateIndex
CREATE UNIQUE INDEX "TrustScoreModifier_userId_type_sourceId_key" ON "TrustScoreModifier"("userId", "type", "sourceId");

-- CreateIndex
CREATE UNIQUE INDEX "Activity_userId_type_sourceId_key" ON "Activity"("userId", "type", "sourceId");

-- AddForeignKey
ALTER TABLE "UserBadge" ADD CONSTRAINT "UserBadge_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;
