-- AlterTable
ALTER TABLE "VaultPosition" ADD COLUMN     "heldSince" TIMESTAMP(3);

-- Backfill from the kept logs (the staking vault's tmUSDC Transfer logs): each holder's balance
-- after each of its transfers, in chain order. A holder with shares now has held them since its
-- first receipt after the last time that balance was 0. A transfer to oneself changes nothing.
WITH "moves" AS (
  SELECT l."chainId", '0x' || lower(substr(side."topic", 27)) AS "owner", l."blockNumber", l."logIndex", b."timestamp",
         side."sign" * (
           SELECT sum(get_byte(decode(substr(l."data", 3, 64), 'hex'), i)::numeric * power(256::numeric, 31 - i))
             FROM generate_series(0, 31) AS i
         ) AS "delta"
    FROM "ChainLog" l
    JOIN "ChainBlock" b ON b."chainId" = l."chainId" AND b."blockNumber" = l."blockNumber"
    CROSS JOIN LATERAL (VALUES (l."topic1", -1), (l."topic2", 1)) AS side("topic", "sign")
   WHERE l."source" = 'stakingVault' AND l."eventName" = 'Transfer' AND l."status" = 'decoded'
     AND lower(l."topic1") <> lower(l."topic2") AND lower(side."topic") <> '0x' || repeat('0', 64)
),
"balances" AS (
  SELECT *, sum("delta") OVER (PARTITION BY "chainId", "owner" ORDER BY "blockNumber", "logIndex") AS "balance" FROM "moves"
),
"emptied" AS (
  SELECT "chainId", "owner", max("blockNumber"::bigint * 1000000 + "logIndex") AS "position"
    FROM "balances" WHERE "balance" = 0 GROUP BY "chainId", "owner"
)
UPDATE "VaultPosition" p SET "heldSince" = (
  SELECT min(m."timestamp") FROM "balances" m
    LEFT JOIN "emptied" e ON e."chainId" = m."chainId" AND e."owner" = m."owner"
   WHERE m."chainId" = p."chainId" AND m."owner" = p."owner" AND m."delta" > 0
     AND m."blockNumber"::bigint * 1000000 + m."logIndex" > coalesce(e."position", -1))
 WHERE p."shares" > 0;
