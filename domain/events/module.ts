// The outbox's own manifest (domain/module.ts): its tables, and the reorg's follow-ups of chain facts.
import { z } from "zod";
import { defineModule } from "../module.js";
import { defineEvent } from "./define.js";

export const eventsModule = defineModule({
  name: "events",
  tables: { DomainEvent: "own", ConsumedEvent: "own", ConsumerCursor: "own" },
  events: {
    "chain.fact_reverted": defineEvent({
      source: "chain",
      description:
        "A reorganisation removed the block of a chain fact whose event a consumer had already taken (that event stays, marked revertedAt). Written by the indexer's rollback; its userId is the fact's.",
      data: z.object({ eventId: z.guid(), type: z.string() }),
    }),
    "chain.fact_restored": defineEvent({
      source: "chain",
      description:
        "A reverted chain fact came back in the new branch (the same transaction, and the same place among its logs): its event is no longer reverted. revertEventId is the chain.fact_reverted it undoes.",
      data: z.object({ eventId: z.guid(), type: z.string(), revertEventId: z.guid() }),
    }),
  },
});
