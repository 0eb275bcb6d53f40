import { z } from "zod";
import type { PageRequest } from "../../domain/pagination.js";
import { queryInteger } from "./input.js";

// The query of a paginated list (D-113): the spec's `limit` and `offset`, and Stripe's cursors
// beside them. One way of paging at a time: a cursor with an offset, or both cursors, is a
// VALIDATION_ERROR naming the field.

const cursor = (description: string) =>
  z
    .string()
    .regex(/^[A-Za-z0-9_.:-]{1,200}$/, "must be the id of an item of this list")
    .optional()
    .describe(description);

const PAGE_FIELDS = {
  limit: queryInteger({ min: 1, max: 100, default: 20, description: "page size, 1 to 100 (default 20)" }),
  offset: queryInteger({ min: 0, max: 1_000_000, default: 0, description: "items to skip (default 0); not with a cursor" }),
  starting_after: cursor(
    "an item's id from this list: the page of the items after it (older). Unlike offset, it stays put while new items arrive.",
  ),
  ending_before: cursor("an item's id from this list: the page of the items just before it (newer)."),
};

/** A list's query: its filters beside the page fields. */
export function listQuery<Filters extends z.ZodRawShape>(filters: Filters) {
  return z.object({ ...PAGE_FIELDS, ...filters }).superRefine((parsed, ctx) => {
    const query = parsed as PageQuery;
    if (query.starting_after !== undefined && query.ending_before !== undefined) {
      ctx.addIssue({ code: "custom", path: ["ending_before"], message: "give starting_after or ending_before, not both" });
    } else if ((query.starting_after ?? query.ending_before) !== undefined && query.offset !== 0) {
      ctx.addIssue({ code: "custom", path: ["offset"], message: "offset cannot be used with starting_after or ending_before" });
    }
  });
}

type PageQuery = z.output<z.ZodObject<typeof PAGE_FIELDS>>;

/** What the parsed query asks for. */
export function pageRequestOf(query: PageQuery): PageRequest {
  const { limit, offset, starting_after, ending_before } = query;
  if (starting_after !== undefined) return { limit, cursor: { id: starting_after, side: "after", field: "starting_after" } };
  if (ending_before !== undefined) return { limit, cursor: { id: ending_before, side: "before", field: "ending_before" } };
  return { limit, offset };
}
