-- AlterTable
ALTER TABLE "DomainEvent" ADD COLUMN     "blockNumber" INTEGER,
ADD COLUMN     "chainId" INTEGER;

-- AlterTable
ALTER TABLE "IndexerCursor" ADD COLUMN     "headBlock" INTEGER,
ADD COLUMN     "heartbeatAt" TIMESTAMP(3);

-- CreateTable
CREATE TABLE "ChainBlock" (
    "chainId" INTEGER NOT NULL,
    "blockNumber" INTEGER NOT NULL,
    "blockHash" TEXT NOT NULL,
    "parentHash" TEXT NOT NULL,
    "timestamp" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ChainBlock_pkey" PRIMARY KEY ("chainId","blockNumber")
);

-- CreateTable
CREATE TABLE "ChainLog" (
    "chainId" INTEGER NOT NULL,
    "blockNumber" INTEGER NOT NULL,
    "logIndex" INTEGER NOT NULL,
    "blockHash" TEXT NOT NULL,
    "txHash" TEXT NOT NULL,
    "address" TEXT NOT NULL,
    "topic0" TEXT,
    "topic1" TEXT,
    "topic2" TEXT,
    "topic3" TEXT,
    "data" TEXT NOT NULL,
    "source" TEXT NOT NULL,
    "eventName" TEXT,
    "status" TEXT NOT NULL,
    "error" TEXT,
    "entities" TEXT NOT NULL DEFAULT '',

    CONSTRAINT "ChainLog_pkey" PRIMARY KEY ("chainId","blockNumber","logIndex")
);

-- CreateTable
CREATE TABLE "VaultTransaction" (
    "chainId" INTEGER NOT NULL,
    "blockNumber" INTEGER NOT NULL,
    "logIndex" INTEGER NOT NULL,
    "txHash" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "owner" TEXT NOT NULL,
    "sender" TEXT NOT NULL,
    "receiver" TEXT NOT NULL,
    "assets" BIGINT NOT NULL,
    "shares" DECIMAL(78,0) NOT NULL,
    "timestamp" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "VaultTransaction_pkey" PRIMARY KEY ("chainId","blockNumber","logIndex")
);

-- CreateTable
CREATE TABLE "VaultPosition" (
    "chainId" INTEGER NOT NULL,
    "owner" TEXT NOT NULL,
    "shares" DECIMAL(78,0) NOT NULL,
    "costBasis" BIGINT NOT NULL,
    "realizedYield" BIGINT NOT NULL,
    "deposited" BIGINT NOT NULL,
    "withdrawn" BIGINT NOT NULL,
    "firstDepositAt" TIMESTAMP(3),
    "lastDepositAt" TIMESTAMP(3),
    "lastWithdrawAt" TIMESTAMP(3),
    "updatedBlock" INTEGER NOT NULL,

    CONSTRAINT "VaultPosition_pkey" PRIMARY KEY ("chainId","owner")
);

-- CreateTable
CREATE TABLE "YieldDistribution" (
    "chainId" INTEGER NOT NULL,
    "blockNumber" INTEGER NOT NULL,
    "logIndex" INTEGER NOT NULL,
    "txHash" TEXT NOT NULL,
    "distributor" TEXT NOT NULL,
    "amount" BIGINT NOT NULL,
    "totalYield" BIGINT NOT NULL,
    "exchangeRate" DECIMAL(78,0) NOT NULL,
    "timestamp" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "YieldDistribution_pkey" PRIMARY KEY ("chainId","blockNumber","logIndex")
);

-- CreateTable
CREATE TABLE "UsdcTransfer" (
    "chainId" INTEGER NOT NULL,
    "blockNumber" INTEGER NOT NULL,
    "logIndex" INTEGER NOT NULL,
    "txHash" TEXT NOT NULL,
    "from" TEXT NOT NULL,
    "to" TEXT NOT NULL,
    "amount" BIGINT NOT NULL,
    "timestamp" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "UsdcTransfer_pkey" PRIMARY KEY ("chainId","blockNumber","logIndex")
);

-- CreateTable
CREATE TABLE "LoanChainState" (
    "chainId" INTEGER NOT NULL,
    "loanId" BIGINT NOT NULL,
    "ref" TEXT NOT NULL,
    "borrower" TEXT NOT NULL,
    "principal" BIGINT NOT NULL,
    "netAmount" BIGINT NOT NULL,
    "interest" BIGINT NOT NULL,
    "insuranceFee" BIGINT NOT NULL,
    "durationDays" INTEGER NOT NULL,
    "dueDate" TIMESTAMP(3) NOT NULL,
    "fundedAt" TIMESTAMP(3) NOT NULL,
    "fundTxHash" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "totalPaid" BIGINT NOT NULL,
    "remainingBalance" BIGINT NOT NULL,
    "extensions" INTEGER NOT NULL,
    "lastPaymentAt" TIMESTAMP(3),
    "closedAt" TIMESTAMP(3),
    "updatedBlock" INTEGER NOT NULL,

    CONSTRAINT "LoanChainState_pkey" PRIMARY KEY ("chainId","loanId")
);

-- CreateTable
CREATE TABLE "SocialVaultState" (
    "chainId" INTEGER NOT NULL,
    "address" TEXT NOT NULL,
    "owner" TEXT NOT NULL,
    "dailyLimit" BIGINT NOT NULL,
    "timelockDuration" INTEGER NOT NULL,
    "requiredSignatures" INTEGER NOT NULL,
    "hasDuressPin" BOOLEAN NOT NULL DEFAULT false,
    "locked" BOOLEAN NOT NULL DEFAULT false,
    "lockedAt" TIMESTAMP(3),
    "balance" BIGINT NOT NULL DEFAULT 0,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "createdTxHash" TEXT NOT NULL,
    "updatedBlock" INTEGER NOT NULL,

    CONSTRAINT "SocialVaultState_pkey" PRIMARY KEY ("chainId","address")
);

-- CreateTable
CREATE TABLE "SocialVaultGuardian" (
    "chainId" INTEGER NOT NULL,
    "vault" TEXT NOT NULL,
    "guardian" TEXT NOT NULL,
    "activeAt" TIMESTAMP(3) NOT NULL,
    "removalValidAt" TIMESTAMP(3),
    "removed" BOOLEAN NOT NULL DEFAULT false,
    "addedTxHash" TEXT NOT NULL,
    "updatedBlock" INTEGER NOT NULL,

    CONSTRAINT "SocialVaultGuardian_pkey" PRIMARY KEY ("chainId","vault","guardian")
);

-- CreateTable
CREATE TABLE "SocialVaultWithdrawal" (
    "chainId" INTEGER NOT NULL,
    "vault" TEXT NOT NULL,
    "requestId" DECIMAL(78,0) NOT NULL,
    "amount" BIGINT NOT NULL,
    "recipient" TEXT NOT NULL,
    "executeAfter" TIMESTAMP(3) NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "requiredApprovals" INTEGER NOT NULL,
    "approvals" INTEGER NOT NULL DEFAULT 0,
    "approvers" TEXT NOT NULL DEFAULT '',
    "status" TEXT NOT NULL,
    "requestedAt" TIMESTAMP(3) NOT NULL,
    "requestTxHash" TEXT NOT NULL,
    "closedTxHash" TEXT,
    "closedAt" TIMESTAMP(3),
    "updatedBlock" INTEGER NOT NULL,

    CONSTRAINT "SocialVaultWithdrawal_pkey" PRIMARY KEY ("chainId","vault","requestId")
);

-- CreateIndex
CREATE INDEX "VaultTransaction_owner_timestamp_idx" ON "VaultTransaction"("owner", "timestamp");

-- CreateIndex
CREATE UNIQUE INDEX "VaultTransaction_chainId_txHash_logIndex_key" ON "VaultTransaction"("chainId", "txHash", "logIndex");

-- CreateIndex
CREATE INDEX "YieldDistribution_timestamp_idx" ON "YieldDistribution"("timestamp");

-- CreateIndex
CREATE UNIQUE INDEX "YieldDistribution_chainId_txHash_logIndex_key" ON "YieldDistribution"("chainId", "txHash", "logIndex");

-- CreateIndex
CREATE INDEX "UsdcTransfer_from_idx" ON "UsdcTransfer"("from");

-- CreateIndex
CREATE INDEX "UsdcTransfer_to_idx" ON "UsdcTransfer"("to");

-- CreateIndex
CREATE UNIQUE INDEX "UsdcTransfer_chainId_txHash_logIndex_key" ON "UsdcTransfer"("chainId", "txHash", "logIndex");

-- CreateIndex
CREATE INDEX "LoanChainState_borrower_idx" ON "LoanChainState"("borrower");

-- CreateIndex
CREATE UNIQUE INDEX "LoanChainState_chainId_ref_key" ON "LoanChainState"("chainId", "ref");

-- CreateIndex
CREATE INDEX "SocialVaultState_owner_idx" ON "SocialVaultState"("owner");

-- CreateIndex
CREATE INDEX "SocialVaultGuardian_guardian_idx" ON "SocialVaultGuardian"("guardian");

-- CreateIndex
CREATE INDEX "DomainEvent_chainId_blockNumber_idx" ON "DomainEvent"("chainId", "blockNumber");
