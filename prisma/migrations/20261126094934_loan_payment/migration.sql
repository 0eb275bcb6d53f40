-- AlterTable
ALTER TABLE "LoanRequest" ADD COLUMN     "paymentId" UUID;

-- CreateIndex
CREATE INDEX "LoanRequest_paymentId_idx" ON "LoanRequest"("paymentId");
