// Where the backfill of `npm run bench:indexer` spends its time, seen from outside the indexer:
// its JSON-RPC calls (global fetch) and its database calls (a wrapped Database), as intervals that
// overlap (the indexer prefetches), with their union and their totals by kind. The ends of the
// ranges the indexer committed are kept too: the raw eth_getLogs run replays those ranges.
import type { Database, SqlQuery } from "../../core/db.js";

export interface Span {
  kind: string;
  start: number;
  end: number;
  detail?: number;
  /** Inside another span (a statement of a transaction): left out of the union. */
  nested?: boolean;
}

export function instrument(db: Database) {
  const spans: Span[] = [];
  /** The blocks the cursor moved to, in order: the ends of the ranges the indexer committed. */
  const cursorMoves: number[] = [];
  let recording = false;
  const originalFetch = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    if (!recording || typeof init?.body !== "string") return originalFetch(input, init);
    const body = JSON.parse(init.body) as { method: string } | { method: string }[];
    const kind = Array.isArray(body) ? `${body[0]?.method ?? "batch"} (batch)` : body.method;
    const start = performance.now();
    const response = await originalFetch(input, init);
    const answered = performance.now();
    const json = response.json.bind(response);
    Object.defineProperty(response, "json", {
      value: async () => {
        const parsing = performance.now();
        const value = (await json()) as { result?: unknown };
        const end = performance.now();
        const items = Array.isArray(value?.result) ? value.result.length : undefined;
        spans.push({ kind: `rpc ${kind}`, start, end: answered, detail: items });
        spans.push({ kind: "rpc answer body + JSON.parse", start: parsing, end });
        return value;
      },
    });
    return response;
  };
  // "INSERT ChainLog", "SELECT VaultPosition", ...: the statement's verb and first table.
  const statement = (text: string) => {
    const match = /^\s*(\w+)[^"]*"(\w+)"/.exec(text);
    return match ? `${match[1]!.toUpperCase()} ${match[2]}` : text.trim().split(/\s+/, 2).join(" ");
  };
  const timedQuery =
    (query: SqlQuery, where: string): SqlQuery =>
    async (text, params) => {
      const start = performance.now();
      const kind = statement(text);
      try {
        return await query(text, params);
      } finally {
        if (recording) spans.push({ kind: `  db ${where}: ${kind}`, start, end: performance.now(), nested: true });
        // moveCursor: UPDATE/INSERT "IndexerCursor" with the new block number as $2.
        if (/^(UPDATE|INSERT) IndexerCursor$/.test(kind)) cursorMoves.push(Number(params?.[1]));
      }
    };
  const timed: Database = {
    ...db,
    sql: {
      query: async (text, params) => {
        const start = performance.now();
        try {
          return await db.sql.query(text, params);
        } finally {
          if (recording) spans.push({ kind: `db ${statement(text)}`, start, end: performance.now() });
        }
      },
      transaction: async (work) => {
        const start = performance.now();
        try {
          return await db.sql.transaction((query, copy) =>
            work(
              timedQuery(query, "in tx"),
              copy &&
                (async (table, columns, rows) => {
                  const begun = performance.now();
                  try {
                    return await copy(table, columns, rows);
                  } finally {
                    if (recording) spans.push({ kind: `  db in tx: COPY ${table}`, start: begun, end: performance.now(), nested: true });
                  }
                }),
            ),
          );
        } finally {
          if (recording) spans.push({ kind: "db transaction (commitBatch)", start, end: performance.now() });
        }
      },
    },
  };
  return {
    db: timed,
    spans,
    cursorMoves,
    start: () => {
      recording = true;
    },
    stop: () => {
      recording = false;
      globalThis.fetch = originalFetch;
    },
  };
}

/** Total length of the union of intervals. */
export function covered(spans: Span[]): number {
  const sorted = [...spans].sort((a, b) => a.start - b.start);
  let total = 0;
  let end = Number.NEGATIVE_INFINITY;
  let start = 0;
  for (const span of sorted) {
    if (span.start > end) {
      if (end > start) total += end - start;
      start = span.start;
      end = span.end;
    } else end = Math.max(end, span.end);
  }
  if (end > start) total += end - start;
  return total;
}

/** Per kind of span: calls, summed time and items (logs, headers). */
export function tally(spans: Span[]) {
  const byKind = new Map<string, { calls: number; ms: number; items: number }>();
  for (const span of spans) {
    const entry = byKind.get(span.kind) ?? { calls: 0, ms: 0, items: 0 };
    entry.calls += 1;
    entry.ms += span.end - span.start;
    entry.items += span.detail ?? 0;
    byKind.set(span.kind, entry);
  }
  return [...byKind].sort((a, b) => b[1].ms - a[1].ms);
}
