/**
 * `--format parquet`: hive-partitioned Parquet beside the DuckDB working copy
 * (`OUT/<table>/date=YYYY-MM-DD/data.parquet`). Only the partitions a run changed are written;
 * each is written to a temporary directory first and renamed into place, so a reader sees the old
 * file or the new one, never half of one. DuckDB, Spark and Trino read the tree as is.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { splitWindows } from '../plan/windows.js';
import type { StreamName } from '../sync/context.js';
import type { Warehouse } from './duckdb.js';

const TABLE_OF: Record<Exclude<StreamName, 'anomalies'>, { table: string; dateColumn: string }> = {
  line_items: { table: 'line_items', dateColumn: 'usage_date' },
  rollups: { table: 'rollups_daily', dateColumn: 'date' },
};

function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/**
 * (The COPY statements here are built per table, partition and path, so they are not in sql/.)
 *
 * Writes `select` (which must yield a `date` column) partitioned by date into a temporary
 * directory, then swaps each of `dates` into `OUT/<name>/date=…/data.parquet`; a date with no rows
 * loses its partition.
 */
async function replacePartitions(warehouse: Warehouse, outDir: string, name: string, select: string, dates: readonly string[]): Promise<void> {
  const root = resolve(outDir, name);
  const tmp = resolve(outDir, `.tmp-${name}-${process.pid}-${Date.now()}`);
  mkdirSync(root, { recursive: true });
  rmSync(tmp, { recursive: true, force: true });
  try {
    await warehouse.sql(`COPY (${select}) TO ${sqlString(tmp)} (FORMAT parquet, PARTITION_BY (date), OVERWRITE_OR_IGNORE true)`);
    for (const date of dates) {
      const target = join(root, `date=${date}`);
      const written = join(tmp, `date=${date}`);
      if (existsSync(written)) {
        const file = readdirSync(written).find((f) => f.endsWith('.parquet'));
        mkdirSync(target, { recursive: true });
        renameSync(join(written, file!), join(target, 'data.parquet'));
      } else if (existsSync(target)) {
        rmSync(target, { recursive: true, force: true });
      }
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** Rewrites the partitions of one committed window. */
export async function writeParquetWindow(
  warehouse: Warehouse, outDir: string, stream: StreamName, window: { start: string; end: string },
): Promise<void> {
  if (stream === 'anomalies') return;
  const { table, dateColumn } = TABLE_OF[stream];
  const dates = splitWindows(window.start, window.end, 1).map((w) => w.start);
  const range = `${dateColumn} BETWEEN ${sqlString(window.start)}::DATE AND ${sqlString(window.end)}::DATE`;
  // The partition column is `date`: rollups_daily's own, or a copy of line_items.usage_date.
  const select = dateColumn === 'date'
    ? `SELECT * FROM ${table} WHERE ${range} ORDER BY ALL`
    : `SELECT *, ${dateColumn} AS date FROM ${table} WHERE ${range} ORDER BY ALL`;
  await replacePartitions(warehouse, outDir, table, select, dates);
}

/** Rewrites the partitions of `dates` of a table partitioned by the date of a timestamp column. */
async function replaceDatedPartitions(warehouse: Warehouse, outDir: string, table: string, timeColumn: string, dates: string[]): Promise<void> {
  if (dates.length === 0) return;
  await replacePartitions(warehouse, outDir, table,
    `SELECT *, CAST(${timeColumn} AS DATE) AS date FROM ${table}
     WHERE CAST(${timeColumn} AS DATE) IN (${dates.map((d) => `${sqlString(d)}::DATE`).join(', ')}) ORDER BY ALL`,
    dates);
}

/** After the streams: the anomaly partitions this run touched, the history, and the run tables. */
export async function finishParquet(warehouse: Warehouse, outDir: string, run: { runId: string; startedAt: string }): Promise<void> {
  const touched = await warehouse.query<{ d: string }>('parquet/anomaly_dates_touched', [run.startedAt]);
  await replaceDatedPartitions(warehouse, outDir, 'anomalies', 'detected_date', touched.map((t) => t.d));
  const historyDates = await warehouse.query<{ d: string }>('parquet/history_dates_of_run', [run.runId]);
  await replaceDatedPartitions(warehouse, outDir, 'anomaly_status_history', 'observed_at', historyDates.map((t) => t.d));
  for (const table of ['sync_runs', 'sync_run_streams']) {
    const dir = resolve(outDir, table);
    mkdirSync(dir, { recursive: true });
    const tmp = join(dir, `.data-${process.pid}.parquet`);
    await warehouse.sql(`COPY (SELECT * FROM ${table} ORDER BY ALL) TO ${sqlString(tmp)} (FORMAT parquet)`);
    renameSync(tmp, join(dir, 'data.parquet'));
  }
}
