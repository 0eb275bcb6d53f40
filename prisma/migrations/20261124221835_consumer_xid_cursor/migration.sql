-- The cursor of each consumer settles on transaction ids (domain/events/consumer.ts) instead of
-- a seq older than a 5-minute margin: no event of an id below the oldest transaction still
-- running can appear any more. The rows already there get the id of this migration, and a cursor
-- starts at 0: its first read from the cursor looks over them once.
-- AlterTable
ALTER TABLE "ConsumerCursor" DROP COLUMN "seq",
ADD COLUMN     "xid" BIGINT NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "DomainEvent" ADD COLUMN     "xid" BIGINT NOT NULL DEFAULT ((pg_current_xact_id())::text)::bigint;

-- CreateIndex
CREATE INDEX "DomainEvent_xid_idx" ON "DomainEvent"("xid");
