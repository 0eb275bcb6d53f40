import type { CopyRows, SqlQuery } from "../core/db.js";

/** A PostgreSQL array type of one column (`unnest($n::type[])`). */
export type ColumnType = "int4" | "int8" | "numeric" | "text" | "bool" | "timestamp(3)" | "jsonb" | "uuid";

export interface Column {
  name: string;
  type: ColumnType;
}

export const col = (name: string, type: ColumnType): Column => ({ name, type });

/** Seconds since the epoch as a `timestamp(3)` literal in UTC (Prisma's convention). */
export const timestampLiteral = (seconds: number | null | undefined) =>
  seconds === null || seconds === undefined ? null : new Date(seconds * 1000).toISOString();

/**
 * Inserts `rows` with one statement, `INSERT ... SELECT FROM unnest(array per column)`: one
 * round trip and one plan for a whole batch, on PostgreSQL and PGlite alike.
 * `constants` are values shared by every row (the chain id), sent once.
 */
export async function insertRows(
  query: SqlQuery,
  table: string,
  columns: Column[],
  rows: unknown[][],
  options: {
    constants?: Record<string, { type: ColumnType; value: unknown }>;
    onConflict?: string;
    /** COPY instead of INSERT (PostgreSQL), for rows that cannot exist yet: several times faster. */
    copy?: CopyRows | undefined;
  } = {},
): Promise<number> {
  if (rows.length === 0) return 0;
  const constants = Object.entries(options.constants ?? {});
  if (options.copy) {
    const values = constants.map(([, constant]) => constant.value);
    return options.copy(
      table,
      [...constants.map(([name]) => name), ...columns.map((column) => column.name)],
      values.length === 0 ? rows : rows.map((row) => [...values, ...row]),
    );
  }
  const params: unknown[] = [];
  const selects: string[] = [];
  for (const [, constant] of constants) {
    params.push(constant.value);
    selects.push(`$${params.length}::${constant.type}`);
  }
  const unnests: string[] = [];
  columns.forEach((column, index) => {
    params.push(rows.map((row) => row[index] ?? null));
    unnests.push(`$${params.length}::${column.type}[]`);
  });
  const names = [...constants.map(([name]) => name), ...columns.map((column) => column.name)].map((name) => `"${name}"`);
  const aliases = columns.map((_, index) => `c${index}`);
  const text =
    `INSERT INTO "${table}" (${names.join(", ")}) ` +
    `SELECT ${[...selects, ...aliases.map((alias) => `u.${alias}`)].join(", ")} FROM unnest(${unnests.join(", ")}) AS u(${aliases.join(", ")}) ` +
    (options.onConflict ?? "");
  const result = await query(text, params);
  return result.rowCount;
}

/** `ON CONFLICT (keys) DO UPDATE SET` every other column: a state row's upsert. */
export function upsertClause(keys: string[], columns: Column[]): string {
  const updates = columns.filter((column) => !keys.includes(column.name)).map((column) => `"${column.name}" = EXCLUDED."${column.name}"`);
  return `ON CONFLICT (${keys.map((key) => `"${key}"`).join(", ")}) DO UPDATE SET ${updates.join(", ")}`;
}
