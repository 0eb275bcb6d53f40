// A paginated list (service-spec part 2's `pagination`: total, limit, offset, hasMore): the page
// the call asked for, the pages beside it on demand, and an async iterator over every item from
// this page to the end. The pages after the first are read with the API's cursors
// (`starting_after` the last item's id, `ending_before` the first's), so items that arrive while
// iterating neither repeat nor push others out of the walk, as offsets would.

import type { ResponseInfo } from "./response.js";

export interface Pagination {
  total: number;
  limit: number;
  /** Where the page starts in the list, now. */
  offset: number;
  /** Whether items go on in the direction the page was read (after it; before it for `ending_before`). */
  hasMore: boolean;
}

export interface Page<T> extends AsyncIterable<T> {
  /** This page's items. */
  readonly data: T[];
  readonly pagination: Pagination;
  /** The page after this one (older items), or null after the last one. */
  next(): Promise<Page<T> | null>;
  /** The page before this one (newer items), or null before the first one. */
  previous(): Promise<Page<T> | null>;
  /** The response the page came in (its request id). */
  readonly lastResponse?: ResponseInfo | undefined;
}

/** The cursor a following page is read with. */
export type PageCursor = { starting_after: string } | { ending_before: string };

/** Loads the page beside a cursor (the list's own filters and limit kept). */
export type PageLoader<T> = (
  cursor: PageCursor,
) => Promise<{ data: T[]; pagination?: Pagination | undefined; lastResponse?: ResponseInfo }>;

/** The Page of a list's answer; `load` reads the pages beside it. `backward`: the answer was read with ending_before. */
export function pageOf<T extends { id: string }>(
  answer: { data: T[]; pagination?: Pagination | undefined; lastResponse?: ResponseInfo },
  load: PageLoader<T>,
  backward = false,
): Page<T> {
  const { data } = answer;
  const pagination = answer.pagination ?? { total: data.length, limit: data.length, offset: 0, hasMore: false };
  const first = data[0];
  const last = data[data.length - 1];
  const hasNext = backward ? pagination.offset + data.length < pagination.total : pagination.hasMore;
  const hasPrevious = backward ? pagination.hasMore : pagination.offset > 0;
  const beside = async (cursor: PageCursor, isBackward: boolean) => {
    const page = pageOf(await load(cursor), load, isBackward);
    return page.data.length === 0 ? null : page;
  };
  const page: Page<T> = {
    data,
    pagination,
    lastResponse: answer.lastResponse,
    // An empty page has no item to read beside: the walk ends there.
    next: async () => (hasNext && last ? beside({ starting_after: last.id }, false) : null),
    previous: async () => (hasPrevious && first ? beside({ ending_before: first.id }, true) : null),
    async *[Symbol.asyncIterator]() {
      for (let current: Page<T> | null = page; current; current = await current.next()) yield* current.data;
    },
  };
  return page;
}
