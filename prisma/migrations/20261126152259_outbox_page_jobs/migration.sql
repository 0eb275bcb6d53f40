-- Outbox consumers become producers of page jobs (D-83): a cursor is a position (xid, seq). An
-- existing cursor keeps its xid with seq 0: the events at and above it are produced again, and the
-- pages skip those already taken (ConsumedEvent). The shared read-on points go.

-- DropIndex
DROP INDEX "DomainEvent_type_xid_idx";

-- AlterTable
ALTER TABLE "ConsumerCursor" ADD COLUMN     "seq" BIGINT NOT NULL DEFAULT 0;

-- DropTable
DROP TABLE "ConsumerPartition";

-- CreateIndex
CREATE INDEX "DomainEvent_type_xid_seq_idx" ON "DomainEvent"("type", "xid", "seq");
