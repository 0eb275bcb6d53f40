-- CreateEnum
CREATE TYPE "Custody" AS ENUM ('managed', 'self');

-- AlterTable
ALTER TABLE "User" ADD COLUMN     "custody" "Custody" NOT NULL DEFAULT 'managed';

-- CreateTable
CREATE TABLE "SiweNonce" (
    "nonce" TEXT NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "SiweNonce_pkey" PRIMARY KEY ("nonce")
);

-- CreateIndex
CREATE INDEX "SiweNonce_expiresAt_idx" ON "SiweNonce"("expiresAt");
