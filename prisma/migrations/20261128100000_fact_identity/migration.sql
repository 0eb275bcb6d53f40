-- A chain fact is its transaction and its place among the transaction's logs of the same
-- contract and topic, not the block's log index (D-91).

-- AlterTable
ALTER TABLE "ChainLog" ADD COLUMN     "ordinal" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "VaultTransaction" ADD COLUMN     "ordinal" INTEGER NOT NULL DEFAULT 0;

-- The mirrored logs' places, counted as the indexer counts them.
UPDATE "ChainLog" l SET "ordinal" = o."n"
  FROM (SELECT "chainId", "blockNumber", "logIndex",
               (row_number() OVER (PARTITION BY "chainId", "txHash", "address", "topic0" ORDER BY "blockNumber", "logIndex") - 1)::int AS "n"
          FROM "ChainLog") o
 WHERE l."chainId" = o."chainId" AND l."blockNumber" = o."blockNumber" AND l."logIndex" = o."logIndex" AND o."n" <> 0;

UPDATE "VaultTransaction" v SET "ordinal" = o."n"
  FROM (SELECT "chainId", "blockNumber", "logIndex",
               (row_number() OVER (PARTITION BY "chainId", "txHash", "type" ORDER BY "blockNumber", "logIndex") - 1)::int AS "n"
          FROM "VaultTransaction") o
 WHERE v."chainId" = o."chainId" AND v."blockNumber" = o."blockNumber" AND v."logIndex" = o."logIndex" AND o."n" <> 0;

-- The chain facts' dedupe keys, from `chain:<chain>:<tx>:<logIndex>:<type>` to their place: their
-- ids stay, so a fact that comes back keeps the id its receivers know.
UPDATE "DomainEvent" d
   SET "dedupeKey" = 'chain:' || l."chainId"::text || ':' || lower(l."txHash") || ':' || lower(l."address") || ':'
       || lower(coalesce(l."topic0", '')) || ':' || l."ordinal"::text || ':' || d."type"
  FROM "ChainLog" l
 WHERE d."chainId" = l."chainId" AND d."blockNumber" = l."blockNumber"
   AND d."dedupeKey" = 'chain:' || l."chainId"::text || ':' || l."txHash" || ':' || l."logIndex"::text || ':' || d."type";
