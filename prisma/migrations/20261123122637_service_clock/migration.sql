-- CreateTable
CREATE TABLE "ServiceClock" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "offsetMs" BIGINT NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ServiceClock_pkey" PRIMARY KEY ("id")
);
