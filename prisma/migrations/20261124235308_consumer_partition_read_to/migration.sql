-- CreateTable
CREATE TABLE "ConsumerPartition" (
    "consumer" TEXT NOT NULL,
    "partition" TEXT NOT NULL,
    "readTo" BIGINT NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ConsumerPartition_pkey" PRIMARY KEY ("consumer","partition")
);
