import { Prisma } from "../generated/prisma/client.js";
import { AppError } from "./errors.js";

// The lists' pages (D-113): the spec's offset, or Stripe's cursors: an item's id with
// `starting_after` (the items after it in the list's order) or `ending_before` (the items just
// before it). A cursor page stays put while new items arrive at the top, where an offset page
// shifts under them (a duplicate or a skipped item).

/** What a client asked for: a page at an offset, or beside one of the list's items. */
export type PageRequest =
  | { limit: number; offset: number; cursor?: undefined }
  | { limit: number; cursor: { id: string; side: "after" | "before"; field: string } };

/** service-spec part 2's `pagination`. */
export interface Pagination {
  total: number;
  limit: number;
  offset: number;
  hasMore: boolean;
}

/** The items a page reads: from an offset, or those after (or just before) a place in the list. */
export type Window<Place> = { take: number } & ({ skip: number } | { after: Place } | { before: Place });

/**
 * How one list reads itself for `paginate`, newest first. `Place` is where an item stands in the
 * list's order (its sort columns), so a page beside an item needs no offset.
 */
export interface Listing<Place, Item> {
  /** The place of the caller's item with this id (whatever the filter), or null when the caller has none. */
  placeOf(id: string): Promise<Place | null>;
  /** Up to `take` items in the list's order; beside a place, the nearest ones on that side. */
  read(window: Window<Place>): Promise<Item[]>;
  /** How many items the filter matches, or how many of them stand ahead of a place (and at it, if `inclusive`). */
  count(ahead?: { place: Place; inclusive: boolean }): Promise<number>;
}

/**
 * One page of a list. At an offset: the spec's page (hasMore: items after it). Beside a cursor:
 * hasMore says whether items go on in the direction read (Stripe's has_more), and `offset` is
 * where the page starts in the list now, so `offset > 0` tells there are newer items.
 */
export async function paginate<Place, Item>(
  request: PageRequest,
  listing: Listing<Place, Item>,
): Promise<{ data: Item[]; pagination: Pagination }> {
  const { limit } = request;
  if (request.cursor === undefined) {
    const { offset } = request;
    const [data, total] = await Promise.all([listing.read({ take: limit, skip: offset }), listing.count()]);
    return { data, pagination: { total, limit, offset, hasMore: offset + data.length < total } };
  }
  const { id, side, field } = request.cursor;
  const place = await listing.placeOf(id);
  if (place === null) {
    throw new AppError("VALIDATION_ERROR", `${field} names no item of this list`, { field, reason: "no item with this id" });
  }
  const after = side === "after";
  // One more than asked tells whether the list goes on past the page.
  const window = after ? { take: limit + 1, after: place } : { take: limit + 1, before: place };
  const [read, total, ahead] = await Promise.all([listing.read(window), listing.count(), listing.count({ place, inclusive: after })]);
  const hasMore = read.length > limit;
  // Before a place the nearest items come last: the extra one read is the farthest, first.
  const data = hasMore ? (after ? read.slice(0, limit) : read.slice(1)) : read;
  return { data, pagination: { total, limit, offset: Math.max(0, after ? ahead : ahead - data.length), hasMore } };
}

/**
 * Pages of a list already in memory, in its order (the loans, whose status is computed). `all`
 * holds every item a cursor may name; `matches` is the filter.
 */
export function listingInMemory<Item extends { id: string }>(all: Item[], matches: (item: Item) => boolean): Listing<number, Item> {
  const indexed = all.map((item, index) => ({ item, index })).filter(({ item }) => matches(item));
  const ahead = (place: number, inclusive: boolean) => indexed.filter(({ index }) => index < place || (inclusive && index === place));
  return {
    placeOf: async (id) => {
      const index = all.findIndex((item) => item.id === id);
      return index < 0 ? null : index;
    },
    read: async (window) => {
      const picked =
        "skip" in window
          ? indexed.slice(window.skip, window.skip + window.take)
          : "after" in window
            ? indexed.filter(({ index }) => index > window.after).slice(0, window.take)
            : ahead(window.before, false).slice(-window.take);
      return picked.map(({ item }) => item);
    },
    count: async (options) => (options ? ahead(options.place, options.inclusive).length : indexed.length),
  };
}

/** Where a window or a count stands: the rows after a place (older), or ahead of it (newer, or newer and the place's own). */
export type Side = "older" | "newer" | "newer or at";

function sideOf<Place>(window: Window<Place>): { place: Place; side: Side } | null {
  if ("after" in window) return { place: window.after, side: "older" };
  if ("before" in window) return { place: window.before, side: "newer" };
  return null;
}

/** The side a count of the items ahead of a place covers. */
export const aheadOf = (inclusive: boolean): Side => (inclusive ? "newer or at" : "newer");

/**
 * A window read through Prisma's findMany, for a list ordered by `[first, second]` descending (the
 * second breaks ties). `find` adds the list's own filter to `where`. Before a place the nearest
 * rows are the oldest of the newer ones: read ascending, then put back in the list's order.
 */
export async function readWithPrisma<F extends string, S extends string, Place extends Record<F | S, unknown>, Row>(
  columns: readonly [F, S],
  window: Window<Place>,
  find: (args: { where: object; orderBy: Record<string, "asc" | "desc">[]; take: number; skip: number }) => Promise<Row[]>,
): Promise<Row[]> {
  const beside = sideOf(window);
  const direction = "before" in window ? "asc" : "desc";
  const rows = await find({
    where: beside ? whereBeside(columns, beside.place, beside.side) : {},
    orderBy: columns.map((column) => ({ [column]: direction })),
    take: window.take,
    skip: "skip" in window ? window.skip : 0,
  });
  return direction === "asc" ? rows.reverse() : rows;
}

/** Prisma's `where` for the rows on one side of a place, in a list ordered by `[first, second]` descending. */
export function whereBeside<F extends string, S extends string>(
  [first, second]: readonly [F, S],
  place: Record<F | S, unknown>,
  side: Side,
) {
  const strict = side === "older" ? "lt" : "gt";
  const tie = side === "newer or at" ? "gte" : strict;
  return { OR: [{ [first]: { [strict]: place[first] } }, { [first]: place[first], [second]: { [tie]: place[second] } }] };
}

/**
 * The same for SQL: the condition, the order and the limits of a window over a list ordered by
 * `columns` descending. `place` is a place as SQL values of the columns' types.
 */
export function sqlWindow<Place>(
  columns: readonly [Prisma.Sql, Prisma.Sql],
  window: Window<Place>,
  place: (place: Place) => readonly [Prisma.Sql, Prisma.Sql],
): { where: Prisma.Sql; tail: Prisma.Sql; reversed: boolean } {
  const beside = sideOf(window);
  const reversed = "before" in window;
  const direction = Prisma.raw(reversed ? "ASC" : "DESC");
  return {
    where: beside ? sqlBeside(columns, place(beside.place), beside.side) : Prisma.sql`true`,
    tail: Prisma.sql`ORDER BY ${columns[0]} ${direction}, ${columns[1]} ${direction} LIMIT ${window.take} OFFSET ${"skip" in window ? window.skip : 0}`,
    reversed,
  };
}

/** SQL for the rows on one side of a place (a row comparison on both columns). */
export function sqlBeside(columns: readonly [Prisma.Sql, Prisma.Sql], place: readonly [Prisma.Sql, Prisma.Sql], side: Side): Prisma.Sql {
  const op = { older: "<", newer: ">", "newer or at": ">=" }[side];
  return Prisma.sql`(${columns[0]}, ${columns[1]}) ${Prisma.raw(op)} (${place[0]}, ${place[1]})`;
}
