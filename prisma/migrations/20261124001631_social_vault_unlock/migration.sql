-- AlterTable
ALTER TABLE "SocialVaultState" ADD COLUMN     "unlockApprovers" TEXT NOT NULL DEFAULT '',
ADD COLUMN     "unlockRequestedAt" TIMESTAMP(3);

-- Backfill from the kept logs: for a vault locked now, the unlock asked for after its last lock and
-- the guardians who approved it (topic1 of SocialVaultUnlockApproved is the guardian).
WITH "lastLock" AS (
  SELECT "chainId", "address", max("blockNumber"::bigint * 1000000 + "logIndex") AS "position"
    FROM "ChainLog"
   WHERE "eventName" = 'SocialVaultLocked' AND "status" = 'decoded'
   GROUP BY "chainId", "address"
)
UPDATE "SocialVaultState" s SET
  "unlockRequestedAt" = (
    SELECT max(b."timestamp") FROM "ChainLog" l
      JOIN "ChainBlock" b ON b."chainId" = l."chainId" AND b."blockNumber" = l."blockNumber"
     WHERE l."chainId" = s."chainId" AND l."address" = s."address" AND l."status" = 'decoded'
       AND l."eventName" = 'SocialVaultUnlockRequested'
       AND l."blockNumber"::bigint * 1000000 + l."logIndex" > k."position"),
  "unlockApprovers" = coalesce((
    SELECT string_agg(DISTINCT '0x' || lower(substr(l."topic1", 27)), ' ') FROM "ChainLog" l
     WHERE l."chainId" = s."chainId" AND l."address" = s."address" AND l."status" = 'decoded'
       AND l."eventName" = 'SocialVaultUnlockApproved'
       AND l."blockNumber"::bigint * 1000000 + l."logIndex" > k."position"), '')
  FROM "lastLock" k
 WHERE s."locked" AND k."chainId" = s."chainId" AND k."address" = s."address";
