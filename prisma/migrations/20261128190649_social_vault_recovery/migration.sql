-- AlterTable
ALTER TABLE "SocialVaultState" ADD COLUMN     "recoveryExecutableAt" TIMESTAMP(3),
ADD COLUMN     "recoveryOwner" TEXT;
