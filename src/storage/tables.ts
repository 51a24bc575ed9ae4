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

/** Fields as `name type` pairs, in the table's order. Pure. */
function fields(text: string): SpoolColumn[] {
  return text
    .trim()
    .split(/,\s*/)
    .map((pair) => {
      const [name, type] = pair.split(' ') as [string, SpoolColumn['type']];
      return { name, type };
    });
}

export const LINE_ITEMS: TableSpec = {
  table: 'line_items',
  dateField: 'usage_date',
  columns: fields(`id VARCHAR, usage_date DATE, provider_type VARCHAR, provider_service VARCHAR, net_amount_usd DOUBLE,
    currency_original VARCHAR, project_id VARCHAR, user_email VARCHAR`),
};

export const ROLLUPS_DAILY: TableSpec = {
  table: 'rollups_daily',
  dateField: 'date',
  columns: fields('date DATE, group_by VARCHAR, provider_type VARCHAR, service VARCHAR, category VARCHAR, cost_usd DOUBLE'),
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
