-- CreateTable
CREATE TABLE "SenderNonce" (
    "chainId" INTEGER NOT NULL,
    "address" TEXT NOT NULL,
    "nextNonce" INTEGER NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "SenderNonce_pkey" PRIMARY KEY ("chainId","address")
);

-- CreateTable
CREATE TABLE "ChainTransaction" (
    "id" TEXT NOT NULL,
    "chainId" INTEGER NOT NULL,
    "purpose" TEXT NOT NULL,
    "userId" TEXT,
    "idempotencyKey" TEXT,
    "sender" TEXT NOT NULL,
    "nonce" INTEGER NOT NULL,
    "to" TEXT NOT NULL,
    "data" TEXT NOT NULL,
    "rawTx" TEXT NOT NULL,
    "txHash" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "error" TEXT,
    "blockNumber" INTEGER,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "settledAt" TIMESTAMP(3),

    CONSTRAINT "ChainTransaction_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "ChainTransaction_txHash_key" ON "ChainTransaction"("txHash");

-- CreateIndex
CREATE INDEX "ChainTransaction_chainId_sender_nonce_idx" ON "ChainTransaction"("chainId", "sender", "nonce");

-- CreateIndex
CREATE INDEX "ChainTransaction_status_idx" ON "ChainTransaction"("status");

-- CreateIndex
CREATE UNIQUE INDEX "ChainTransaction_userId_idempotencyKey_purpose_key" ON "ChainTransaction"("userId", "idempotencyKey", "purpose");
