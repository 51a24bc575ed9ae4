/** `costsync query`: read-only SQL against the warehouse, printed as a table, CSV or JSON. */
import { CostsyncError, ExitCode } from './errors.js';
import type { ReadOnlyWarehouse, ResultTable } from './storage/duckdb.js';
import { formatTable } from './table.js';

export type OutputFormat = 'table' | 'csv' | 'json';

/** Runs `text`; a statement that would write gets a clear error (the file is opened read-only). */
export async function runQuery(warehouse: ReadOnlyWarehouse, text: string): Promise<ResultTable> {
  try {
    return await warehouse.table(text);
  } catch (cause) {
    const first = (cause as Error).message.split('\n')[0]!;
    const readOnly = /read-only mode/i.test(first);
    throw new CostsyncError(readOnly ? 'CS_ERR_QUERY_READ_ONLY' : 'CS_ERR_QUERY', readOnly ? `costsync query only reads: ${first}` : `The query failed: ${first}`, {
      exitCode: ExitCode.USAGE,
      hint: readOnly ? 'Change the warehouse with costsync sync, or open it with DuckDB itself.' : 'costsync query --list shows the tables and views with their columns.',
      cause,
    });
  }
}

/** One CSV field: quoted when it holds a comma, quote or line break (RFC 4180). Pure. */
function csvField(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** A result as text in the chosen format. Pure. */
export function formatResult(result: ResultTable, format: OutputFormat): string {
  const names = result.columns.map((c) => c.name);
  if (format === 'json') return JSON.stringify(result.rows, null, 2);
  if (format === 'csv') return [names.map(csvField).join(','), ...result.rows.map((r) => names.map((n) => csvField(r[n])).join(','))].join('\n');
  return result.rows.length === 0 ? `(no rows; columns: ${names.join(', ')})` : formatTable(result.rows, names);
}
