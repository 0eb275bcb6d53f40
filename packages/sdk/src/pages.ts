// A paginated list (service-spec part 2's `pagination`: total, limit, offset, hasMore): the page
// the call asked for, the next one on demand, and an async iterator over every item from this
// page to the end, loading each following page as it goes.

export interface Pagination {
  total: number;
  limit: number;
  offset: number;
  hasMore: boolean;
}

export interface Page<T> extends AsyncIterable<T> {
  /** This page's items. */
  readonly data: T[];
  readonly pagination: Pagination;
  /** The following page, or null after the last one. */
  next(): Promise<Page<T> | null>;
}

/** Loads the page starting at an offset (the list's own filters and limit kept). */
export type PageLoader<T> = (offset: number) => Promise<{ data: T[]; pagination?: Pagination | undefined }>;

/** The Page of a list's answer; `load` fetches the pages after it. */
export function pageOf<T>(answer: { data: T[]; pagination?: Pagination | undefined }, load: PageLoader<T>): Page<T> {
  const pagination = answer.pagination ?? { total: answer.data.length, limit: answer.data.length, offset: 0, hasMore: false };
  const next = async (): Promise<Page<T> | null> => {
    // An empty page cannot advance the offset: stop rather than ask for the same page forever.
    if (!pagination.hasMore || answer.data.length === 0) return null;
    return pageOf(await load(pagination.offset + answer.data.length), load);
  };
  const page: Page<T> = {
    data: answer.data,
    pagination,
    next,
    async *[Symbol.asyncIterator]() {
      for (let current: Page<T> | null = page; current; current = await current.next()) yield* current.data;
    },
  };
  return page;
}
