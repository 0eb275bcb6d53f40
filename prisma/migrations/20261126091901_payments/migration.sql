-- CreateTable
CREATE TABLE "PaymentChainEvent" (
    "chainId" INTEGER NOT NULL,
    "blockNumber" INTEGER NOT NULL,
    "logIndex" INTEGER NOT NULL,
    "txHash" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "ref" TEXT NOT NULL,
    "refundRef" TEXT,
    "payer" TEXT NOT NULL,
    "merchant" TEXT NOT NULL,
    "amount" BIGINT NOT NULL,
    "paymentAmount" BIGINT NOT NULL,
    "fee" BIGINT NOT NULL,
    "totalRefunded" BIGINT NOT NULL,
    "timestamp" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "PaymentChainEvent_pkey" PRIMARY KEY ("chainId","blockNumber","logIndex")
);

-- CreateTable
CREATE TABLE "Payment" (
    "id" UUID NOT NULL,
    "merchantId" TEXT NOT NULL,
    "amount" BIGINT NOT NULL,
    "currency" TEXT NOT NULL,
    "description" TEXT NOT NULL,
    "methods" TEXT[],
    "metadata" JSONB NOT NULL,
    "redirectUrl" TEXT,
    "cancelUrl" TEXT,
    "creditOptions" JSONB,
    "splitOptions" JSONB,
    "status" TEXT NOT NULL,
    "method" TEXT,
    "payerId" TEXT,
    "payerAddress" TEXT,
    "claimedAt" TIMESTAMP(3),
    "lastFailure" JSONB,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "cancelledAt" TIMESTAMP(3),

    CONSTRAINT "Payment_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "PaymentRefund" (
    "id" UUID NOT NULL,
    "paymentId" UUID NOT NULL,
    "amount" BIGINT NOT NULL,
    "reason" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "failure" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "PaymentRefund_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "PaymentChainEvent_ref_idx" ON "PaymentChainEvent"("ref");

-- CreateIndex
CREATE INDEX "PaymentChainEvent_refundRef_idx" ON "PaymentChainEvent"("refundRef");

-- CreateIndex
CREATE UNIQUE INDEX "PaymentChainEvent_chainId_txHash_logIndex_key" ON "PaymentChainEvent"("chainId", "txHash", "logIndex");

-- CreateIndex
CREATE INDEX "Payment_merchantId_createdAt_idx" ON "Payment"("merchantId", "createdAt");

-- CreateIndex
CREATE INDEX "PaymentRefund_paymentId_createdAt_idx" ON "PaymentRefund"("paymentId", "createdAt");

-- AddForeignKey
ALTER TABLE "Payment" ADD CONSTRAINT "Payment_merchantId_fkey" FOREIGN KEY ("merchantId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PaymentRefund" ADD CONSTRAINT "PaymentRefund_paymentId_fkey" FOREIGN KEY ("paymentId") REFERENCES "Payment"("id") ON DELETE CASCADE ON UPDATE CASCADE;
