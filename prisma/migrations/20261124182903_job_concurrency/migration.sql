-- AlterTable
ALTER TABLE "Job" ADD COLUMN     "concurrencyKey" TEXT,
ADD COLUMN     "concurrencyLimit" INTEGER;
