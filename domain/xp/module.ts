// XP's manifest (domain/module.ts).
import { z } from "zod";
import { defineEvent, isoTime } from "../events/define.js";
import { defineModule } from "../module.js";

export const xpModule = defineModule({
  name: "xp",
  tables: { Activity: "own", UserBadge: "own" },
  events: {
    "user.level_up": defineEvent({
      source: "service",
      webhook: true,
      description: "The user reached a new XP level.",
      data: z.object({ userId: z.string(), level: z.string(), previousLevel: z.string(), xp: z.number().int(), timestamp: isoTime }),
    }),
    "user.badge_earned": defineEvent({
      source: "service",
      description: "The user earned a badge.",
      data: z.object({ userId: z.string(), badgeId: z.string(), name: z.string(), earnedAt: isoTime }),
    }),
  },
});
