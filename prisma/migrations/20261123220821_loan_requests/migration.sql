-- CreateTable
CREATE TABLE "LoanRequest" (
    "id" UUID NOT NULL,
    "userId" TEXT NOT NULL,
    "borrower" TEXT NOT NULL,
    "chainId" INTEGER NOT NULL,
    "amount" BIGINT NOT NULL,
    "insuranceFee" BIGINT NOT NULL,
    "interest" BIGINT NOT NULL,
    "interestRateBps" INTEGER NOT NULL,
    "durationDays" INTEGER NOT NULL,
    "purpose" TEXT,
    "status" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "claimedAt" TIMESTAMP(3),
    "cancelledAt" TIMESTAMP(3),
    "cancelReason" TEXT,
    "fundTxHash" TEXT,

    CONSTRAINT "LoanRequest_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "LoanRequest_userId_createdAt_idx" ON "LoanRequest"("userId", "createdAt");

-- CreateIndex
CREATE INDEX "LoanRequest_status_createdAt_idx" ON "LoanRequest"("status", "createdAt");

-- AddForeignKey
ALTER TABLE "LoanRequest" ADD CONSTRAINT "LoanRequest_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;
