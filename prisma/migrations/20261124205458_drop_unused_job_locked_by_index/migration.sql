-- DropIndex
DROP INDEX "Job_lockedBy_idx";
