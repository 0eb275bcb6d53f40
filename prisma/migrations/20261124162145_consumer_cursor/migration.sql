-- AlterTable
ALTER TABLE "DomainEvent" ADD COLUMN     "insertedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT clock_timestamp(),
ADD COLUMN     "seq" BIGSERIAL NOT NULL;

-- CreateTable
CREATE TABLE "ConsumerCursor" (
    "consumer" TEXT NOT NULL,
    "seq" BIGINT NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ConsumerCursor_pkey" PRIMARY KEY ("consumer")
);

-- CreateIndex
CREATE UNIQUE INDEX "DomainEvent_seq_key" ON "DomainEvent"("seq");
