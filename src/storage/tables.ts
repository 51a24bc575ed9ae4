/**
 * The synced tables of the windowed streams, declared as data once: their date column and the fields
 * the API gives (spooled and loaded as these types; any other field goes into `extra`). The spool's
 * lines, the `read_json` column struct, the window count/delete SQL and the lake's partition date all
 * come from here; a test compares each spec with `DESCRIBE` of its table.
 */
import type { SpoolColumn } from './spool.js';

export interface TableSpec {
  table: 'line_items' | 'rollups_daily';
  /** The column holding a row's date: windows, full refreshes and lake partitions go by it. */
  dateField: string;
  /** The API's fields, as spooled and stored, in the table's order; then `extra` and `source`. */
  columns: readonly SpoolColumn[];
}

export const LINE_ITEMS: TableSpec = {
  table: 'line_items',
  dateField: 'usage_date',
  columns: [
    { name: 'id', type: 'VARCHAR' },
    { name: 'usage_date', type: 'DATE' },
    { name: 'provider_type', type: 'VARCHAR' },
    { name: 'provider_service', type: 'VARCHAR' },
    { name: 'net_amount_usd', type: 'DOUBLE' },
    { name: 'currency_original', type: 'VARCHAR' },
    { name: 'project_id', type: 'VARCHAR' },
    { name: 'user_email', type: 'VARCHAR' },
  ],
};

export const ROLLUPS_DAILY: TableSpec = {
  table: 'rollups_daily',
  dateField: 'date',
  columns: [
    { name: 'date', type: 'DATE' },
    { name: 'group_by', type: 'VARCHAR' },
    { name: 'provider_type', type: 'VARCHAR' },
    { name: 'service', type: 'VARCHAR' },
    { name: 'category', type: 'VARCHAR' },
    { name: 'cost_usd', type: 'DOUBLE' },
  ],
};

export const TABLE_SPECS: readonly TableSpec[] = [LINE_ITEMS, ROLLUPS_DAILY];

/** The `read_json` column struct of a table's spooled pages: the line's place `o`, the fields, `extra`. Pure. */
export function spoolColumnsStruct(spec: TableSpec): string {
  return `{${[{ name: 'o', type: 'INTEGER' }, ...spec.columns, { name: 'extra', type: 'JSON' }].map((c) => `${c.name}: '${c.type}'`).join(', ')}}`;
}

/** The names a table's SQL templates take (`$table`, `$date`, `$columns`; see `loadSql`). Pure. */
export function tableNames(spec: TableSpec): { table: string; date: string; columns: string } {
  return { table: spec.table, date: spec.dateField, columns: spoolColumnsStruct(spec) };
}
