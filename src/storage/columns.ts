/** Columns declared as data, and the Appender writer that follows the declaration. */
import type { DuckDBAppender } from '@duckdb/node-api';
import type { SpoolColumn } from './spool.js';

export type ColumnKind = 'varchar' | 'date' | 'double' | 'decimal' | 'timestamptz';

/** How the Appender writes a column of each DuckDB type the registry declares (storage/tables.ts). */
export const APPENDER_KINDS: Readonly<Record<SpoolColumn['type'], ColumnKind>> = {
  VARCHAR: 'varchar',
  DATE: 'date',
  DOUBLE: 'double',
  'DECIMAL(38,10)': 'decimal',
  TIMESTAMPTZ: 'timestamptz',
};

export interface Column {
  name: string;
  kind: ColumnKind;
}

/** Appends one value by kind; null and undefined become NULL. */
function appendValue(appender: DuckDBAppender, kind: ColumnKind, value: unknown): void {
  if (value === null || value === undefined) {
    appender.appendNull();
    return;
  }
  switch (kind) {
    case 'double':
      appender.appendDouble(Number(value));
      return;
    case 'decimal':
      // The number's shortest text (as the JSON had it), cast by DuckDB: exact, where a double's binary value is not.
      appender.appendVarchar(String(Number(value)));
      return;
    case 'timestamptz':
      // The Appender drops a UTC offset silently; normalizing to Z keeps the instant right.
      appender.appendVarchar(new Date(String(value)).toISOString());
      return;
    default:
      appender.appendVarchar(String(value));
  }
}

/** The fields of `record` that are not `known` (the spec's), or null when there are none. Pure. */
export function extraFields(record: Record<string, unknown>, known: ReadonlySet<string>): Record<string, unknown> | null {
  let extra: Record<string, unknown> | null = null;
  for (const key in record) {
    if (known.has(key)) continue;
    (extra ??= {})[key] = record[key];
  }
  return extra;
}

/**
 * Appends records to a table laid out as `prefix` values, then `columns`, then `extra`. Used for
 * the staging tables, whose prefix is (window_start, page, ord) or (ord).
 */
export function appendRecords(
  appender: DuckDBAppender,
  columns: readonly Column[],
  records: readonly Record<string, unknown>[],
  prefix: (index: number) => readonly (string | number)[],
): void {
  const known = new Set(columns.map((c) => c.name));
  records.forEach((record, index) => {
    for (const value of prefix(index)) {
      if (typeof value === 'number') appender.appendInteger(value);
      else appender.appendVarchar(value);
    }
    for (const column of columns) appendValue(appender, column.kind, record[column.name]);
    const extra = extraFields(record, known);
    if (extra === null) appender.appendNull();
    else appender.appendVarchar(JSON.stringify(extra));
    appender.endRow();
  });
}
