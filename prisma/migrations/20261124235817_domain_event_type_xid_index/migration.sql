-- DropIndex
DROP INDEX "DomainEvent_xid_idx";

-- CreateIndex
CREATE INDEX "DomainEvent_type_xid_idx" ON "DomainEvent"("type", "xid");
