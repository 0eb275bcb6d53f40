import { type Column, type ColumnType, col, timestampLiteral } from "./sql.js";

// A state table is declared once, field by field, as in prisma/schema.prisma: its columns, rows,
// SELECT list and key condition are derived from that, so they cannot disagree with each other.

/** How one field is stored: its column type, how a value is written and how a read value comes back. */
export interface Field<T> {
  type: ColumnType;
  /** The SELECT expression, named after the column. */
  select(column: string): string;
  encode(value: T): unknown;
  decode(value: unknown): T;
}

const plain = (column: string) => `"${column}"`;
const asText = (column: string) => `"${column}"::text`;

export const text: Field<string> = { type: "text", select: plain, encode: (value) => value, decode: (value) => String(value) };

/** A text column holding one of a few words (a status). */
export const textOf = <T extends string>(): Field<T> => ({
  type: "text",
  select: plain,
  encode: (value) => value,
  decode: (value) => String(value) as T,
});

/** A money amount or an id (`BigInt`): the driver reads it as a bigint. */
export const int8: Field<bigint> = { type: "int8", select: plain, encode: (value) => value.toString(), decode: (value) => value as bigint };

/** A `Decimal(78, 0)`: tmUSDC shares, request ids. Read as its text, which the driver keeps (`core/db.ts`). */
export const numeric: Field<bigint> = {
  type: "numeric",
  select: asText,
  encode: (value) => value.toString(),
  decode: (value) => BigInt(String(value)),
};

export const int4: Field<number> = { type: "int4", select: plain, encode: (value) => value, decode: (value) => Number(value) };

export const bool: Field<boolean> = { type: "bool", select: plain, encode: (value) => value, decode: (value) => Boolean(value) };

/** A `DateTime` held as seconds since the epoch; written in UTC (Prisma's convention), read as a UTC Date. */
export const seconds: Field<number> = {
  type: "timestamp(3)",
  select: plain,
  encode: (value) => timestampLiteral(value),
  decode: (value) => Math.round((value as Date).getTime() / 1000),
};

/** Lower-case addresses, space-separated in one text column (the schema's choice, not an array). */
export const addresses: Field<string[]> = {
  type: "text",
  select: plain,
  encode: (value) => value.join(" "),
  decode: (value) =>
    String(value ?? "")
      .split(" ")
      .filter(Boolean),
};

export const nullable = <T>(field: Field<T>): Field<T | null> => ({
  type: field.type,
  select: field.select,
  encode: (value) => (value === null ? null : field.encode(value)),
  decode: (value) => (value === null || value === undefined ? null : field.decode(value)),
});

type Fields = Record<string, Field<unknown>>;

/** The row a table's fields describe. */
type Values<F extends Fields> = { -readonly [K in keyof F]: F[K] extends Field<infer T> ? T : never };

/** The row type of a table: `type Position = RowOf<typeof POSITION>`. */
export type RowOf<T> = T extends Table<infer Row> ? Row : never;

export interface Table<Row> {
  name: string;
  /** The primary key, `chainId` first; `chainId` is a constant of every write, not a field. */
  keys: string[];
  columns: Column[];
  toRow(value: Row): unknown[];
  /** SELECT list that yields the fields of `Row` (times as epoch seconds). */
  select: string;
  fromRow(row: Record<string, unknown>): Row;
  /** The rows whose key fields (after `chainId`, `$1`) are one of `parts`: a WHERE condition and its parameters. */
  whereKeys(parts: string[][]): { sql: string; params: unknown[] };
}

export function table<const F extends Fields>(definition: {
  name: string;
  keys: readonly ["chainId", ...(keyof F & string)[]];
  fields: F;
}): Table<Values<F>> {
  const { name, fields } = definition;
  const entries = Object.entries(fields);
  const keyFields = definition.keys.slice(1);
  const keyTypes = keyFields.map((key) => fields[key]!.type);
  return {
    name,
    keys: [...definition.keys],
    columns: entries.map(([column, field]) => col(column, field.type)),
    toRow: (value) => entries.map(([column, field]) => field.encode(value[column])),
    select: entries.map(([column, field]) => field.select(column)).join(", "),
    fromRow: (row) => Object.fromEntries(entries.map(([column, field]) => [column, field.decode(row[column])])) as Values<F>,
    whereKeys: (parts) => ({
      sql:
        keyFields.length === 1
          ? `"${keyFields[0]}" = ANY($2::${keyTypes[0]}[])`
          : `(${keyFields.map(plain).join(", ")}) IN (SELECT * FROM unnest(${keyTypes.map((type, i) => `$${i + 2}::${type}[]`).join(", ")}))`,
      params: keyFields.map((_, i) => parts.map((part) => part[i])),
    }),
  };
}
