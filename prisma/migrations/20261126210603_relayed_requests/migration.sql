-- DropTable
DROP TABLE "UserTransactionLease";

-- CreateTable
CREATE TABLE "RelayedRequest" (
    "id" TEXT NOT NULL,
    "transactionId" TEXT NOT NULL,
    "position" INTEGER NOT NULL,
    "purpose" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "idempotencyKey" TEXT NOT NULL,
    "requestHash" TEXT,
    "from" TEXT NOT NULL,
    "to" TEXT NOT NULL,
    "data" TEXT NOT NULL,
    "forwarderNonce" BIGINT NOT NULL,
    "status" TEXT NOT NULL,
    "error" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "settledAt" TIMESTAMP(3),

    CONSTRAINT "RelayedRequest_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "RelayedRequest_transactionId_idx" ON "RelayedRequest"("transactionId");

-- CreateIndex
CREATE INDEX "RelayedRequest_from_forwarderNonce_idx" ON "RelayedRequest"("from", "forwarderNonce");

-- CreateIndex
CREATE UNIQUE INDEX "RelayedRequest_userId_idempotencyKey_purpose_key" ON "RelayedRequest"("userId", "idempotencyKey", "purpose");
