-- CreateTable
CREATE TABLE "ConsumedEvent" (
    "consumer" TEXT NOT NULL,
    "eventId" UUID NOT NULL,
    "consumedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ConsumedEvent_pkey" PRIMARY KEY ("consumer","eventId")
);
