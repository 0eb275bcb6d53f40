-- CreateTable
CREATE TABLE "CheckoutSignIn" (
    "state" TEXT NOT NULL,
    "paymentId" UUID NOT NULL,
    "codeVerifier" TEXT NOT NULL,
    "nonce" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "CheckoutSignIn_pkey" PRIMARY KEY ("state")
);

-- CreateIndex
CREATE INDEX "CheckoutSignIn_createdAt_idx" ON "CheckoutSignIn"("createdAt");
