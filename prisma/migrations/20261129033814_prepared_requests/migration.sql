-- CreateTable
CREATE TABLE "PreparedRequest" (
    "id" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "purpose" TEXT NOT NULL,
    "from" TEXT NOT NULL,
    "to" TEXT NOT NULL,
    "data" TEXT NOT NULL,
    "gas" BIGINT NOT NULL,
    "forwarderNonce" BIGINT NOT NULL,
    "deadline" BIGINT NOT NULL,
    "permit" JSONB,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "usedAt" TIMESTAMP(3),

    CONSTRAINT "PreparedRequest_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "PreparedRequest_userId_to_idx" ON "PreparedRequest"("userId", "to");

-- CreateIndex
CREATE INDEX "PreparedRequest_createdAt_idx" ON "PreparedRequest"("createdAt");
