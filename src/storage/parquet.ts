/**
 * `--format parquet`: a hive-partitioned Parquet lake beside the warehouse
 * (`OUT/<table>/source=<name>/date=YYYY-MM-DD/data.parquet`), exact after any crash. The partitions to rewrite
 * are recorded in the working copy's outbox in the same transaction as the change (see
 * `Warehouse.changed`), written here after the commit, and only then cleared. A partition is
 * written in a hidden temporary directory and renamed into place, so DuckDB, Spark, Trino or Arrow
 * never see a partial file; `_costsync_manifest.json` is written last, when nothing is pending.
 *
 * (The COPY statements are built per table, partition and path, so they are not in sql/.)
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { namesIn, writeFileAtomic } from '../durable-file.js';
import type { Warehouse } from './duckdb.js';

/** The lake's partitioned tables, as data: the expression that gives each row's partition date. */
export const LAKE_TABLES: Record<string, { date: string }> = {
  line_items: { date: 'usage_date' },
  rollups_daily: { date: 'date' },
  anomalies: { date: 'CAST(detected_date AS DATE)' },
  anomaly_status_history: { date: 'CAST(observed_at AS DATE)' },
};

/** Tables written whole, as one file each. */
const WHOLE_TABLES = ['sync_runs', 'sync_run_streams'];

export const MANIFEST_FILE = '_costsync_manifest.json';
const TEMP_PREFIX = '.tmp-';
/** Partitions rewritten per COPY: bounds the statement, not the work. */
const DATES_PER_COPY = 400;

function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** Removes temporary directories and files a killed run left in the lake. Run under the lock. */
export function removeLakeLeftovers(outDir: string): void {
  for (const name of namesIn(outDir)) {
    if (name.startsWith(TEMP_PREFIX) || (name.startsWith(MANIFEST_FILE) && name.endsWith('.tmp'))) rmSync(join(outDir, name), { recursive: true, force: true });
  }
  for (const table of WHOLE_TABLES) {
    const dir = join(outDir, table);
    for (const name of namesIn(dir)) if (name.startsWith('.')) rmSync(join(dir, name), { force: true });
  }
}

/**
 * Writes every pending partition, then clears it from the outbox. Each table's batch is one slot of
 * the write queue: the COPY sees committed rows only, and a change committed meanwhile cannot be
 * cleared unwritten. Returns the number of partitions written.
 */
export async function drainLake(warehouse: Warehouse, outDir: string): Promise<number> {
  let written = 0;
  for (;;) {
    const done = await warehouse.exclusive(async () => {
      const pending = await warehouse.query<{ key: string }>('outbox/pending', ['parquet']);
      if (pending.length === 0) return 0;
      // Keys are <table>/<source>/<date>: one table and source a batch.
      const [table, source] = pending[0]!.key.split('/') as [string, string];
      const prefix = `${table}/${source}/`;
      const keys = pending.filter((p) => p.key.startsWith(prefix)).slice(0, DATES_PER_COPY).map((p) => p.key);
      const dates = keys.map((k) => k.slice(prefix.length));
      if (LAKE_TABLES[table] !== undefined) await replacePartitions(warehouse, outDir, table, source, dates);
      for (const key of keys) await warehouse.run('outbox/done', ['parquet', key]);
      return keys.length;
    });
    if (done === 0) return written;
    written += done;
  }
}

/**
 * Writes the rows of `dates` of `source` in `table` partitioned by source and date into a temporary
 * directory, then swaps each date into `OUT/<table>/source=…/date=…/data.parquet`; a date with no
 * rows loses its partition.
 */
async function replacePartitions(warehouse: Warehouse, outDir: string, table: string, source: string, dates: readonly string[]): Promise<void> {
  const root = resolve(outDir, table, `source=${source}`);
  const tmp = resolve(outDir, `${TEMP_PREFIX}${table}-${process.pid}`);
  mkdirSync(root, { recursive: true });
  rmSync(tmp, { recursive: true, force: true });
  const dateExpr = LAKE_TABLES[table]!.date;
  // rollups_daily's own `date` is the partition column; the others get one.
  const columns = dateExpr === 'date' ? '*' : `*, ${dateExpr} AS date`;
  const select = `SELECT ${columns} FROM ${table} WHERE source = ${sqlString(source)}
    AND ${dateExpr} IN (${dates.map((d) => `${sqlString(d)}::DATE`).join(', ')}) ORDER BY ALL`;
  try {
    await warehouse.sql(`COPY (${select}) TO ${sqlString(tmp)} (FORMAT parquet, PARTITION_BY (source, date), OVERWRITE_OR_IGNORE true)`);
    for (const date of dates) {
      const target = join(root, `date=${date}`);
      const written = join(tmp, `source=${source}`, `date=${date}`);
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

/**
 * After a run: the run tables as single files, then, once no partition is pending, the manifest
 * (written last, so a downstream job that sees it knows the lake matched the warehouse).
 */
export async function finishLake(warehouse: Warehouse, outDir: string, run: { runId: string; now: () => number }): Promise<void> {
  await drainLake(warehouse, outDir);
  await warehouse.exclusive(async () => {
    for (const table of WHOLE_TABLES) {
      const dir = resolve(outDir, table);
      mkdirSync(dir, { recursive: true });
      const tmp = join(dir, `.data-${process.pid}.parquet`);
      await warehouse.sql(`COPY (SELECT * FROM ${table} ORDER BY ALL) TO ${sqlString(tmp)} (FORMAT parquet)`);
      renameSync(tmp, join(dir, 'data.parquet'));
    }
    const manifest = await warehouse.query('outbox/pending', ['manifest']);
    const parts = await warehouse.query('outbox/pending', ['parquet']);
    if (manifest.length === 0 || parts.length > 0) return;
    const tables: Record<string, { rows: number; partitions: number; first_date: string | null; last_date: string | null }> = {};
    for (const [table, { date }] of Object.entries(LAKE_TABLES)) {
      const [row] = await warehouse.sql<{ rows: number; partitions: number; first_date: string | null; last_date: string | null }>(
        `SELECT count(*) AS rows, count(DISTINCT (source, ${date})) AS partitions, min(${date})::VARCHAR AS first_date, max(${date})::VARCHAR AS last_date FROM ${table}`,
      );
      tables[table] = row!;
    }
    const body = { run_id: run.runId, written_at: new Date(run.now()).toISOString(), tables };
    await writeFileAtomic(resolve(outDir, MANIFEST_FILE), `${JSON.stringify(body, null, 2)}\n`, { mode: 0o644, syncDir: true });
    await warehouse.run('outbox/done', ['manifest', '']);
  });
}
