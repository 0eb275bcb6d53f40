-- CreateTable
CREATE TABLE "LinkedWallet" (
    "address" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "linkedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "LinkedWallet_pkey" PRIMARY KEY ("address")
);

-- CreateIndex
CREATE INDEX "LinkedWallet_userId_idx" ON "LinkedWallet"("userId");
