// The Trust Score's manifest (domain/module.ts).
import { z } from "zod";
import { defineEvent, isoTime } from "../events/define.js";
import { defineModule } from "../module.js";

const trustScoreChange = z.object({
  userId: z.string(),
  previousScore: z.number().int(),
  newScore: z.number().int(),
  change: z.number().int(),
  reason: z.string(),
  timestamp: isoTime,
});

export const trustScoreModule = defineModule({
  name: "trust-score",
  errors: { SCORE_PRIVATE: 403 },
  tables: { TrustScoreInput: "own", TrustScoreModifier: "own", TrustScoreHistory: "own" },
  jobs: ["trust-score.guardians", "trust-score.seniority"],
  routeTag: "Trust Score",
  events: {
    "user.trust_score_updated": defineEvent({
      source: "service",
      webhook: true,
      description: "Same as trust_score.updated, under the name of the spec's event list.",
      data: trustScoreChange,
    }),
    "trust_score.updated": defineEvent({
      source: "service",
      webhook: true,
      description: "The user's Trust Score changed (also sent as user.trust_score_updated: the spec uses both names).",
      data: trustScoreChange,
    }),
  },
});
