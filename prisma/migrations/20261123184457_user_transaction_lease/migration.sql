-- CreateTable
CREATE TABLE "UserTransactionLease" (
    "userId" TEXT NOT NULL,
    "holder" TEXT NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "UserTransactionLease_pkey" PRIMARY KEY ("userId")
);

-- CreateIndex
CREATE INDEX "UserTransactionLease_expiresAt_idx" ON "UserTransactionLease"("expiresAt");
