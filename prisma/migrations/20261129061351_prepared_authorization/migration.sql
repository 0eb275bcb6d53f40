-- AlterTable
ALTER TABLE "PreparedRequest" ADD COLUMN     "authorization" JSONB,
ALTER COLUMN "gas" DROP NOT NULL,
ALTER COLUMN "forwarderNonce" DROP NOT NULL;
