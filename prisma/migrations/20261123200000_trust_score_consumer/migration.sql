-- The rewards consumer splits in two: "rewards" keeps the XP, "trust-score" takes the Trust Score
-- inputs. Every event "rewards" took before the split had both applied, so "trust-score" took it too.
INSERT INTO "ConsumedEvent" ("consumer", "eventId", "consumedAt")
SELECT 'trust-score', "eventId", "consumedAt" FROM "ConsumedEvent" WHERE "consumer" = 'rewards'
ON CONFLICT DO NOTHING;
