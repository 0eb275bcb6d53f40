-- Holds are judged by their process (D-84): a claim names the process making it, and is taken over
-- once that process stops beating, never by the service clock. A claim made before this has no
-- process, so it is free at once: only an attempt under way during the upgrade can meet it.

-- AlterTable
ALTER TABLE "LoanRequest" ADD COLUMN     "claimedBy" TEXT;

-- AlterTable
ALTER TABLE "Payment" ADD COLUMN     "claimedBy" TEXT;
