import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { icebergLake } from '../../src/outputs/iceberg.js';
import { drainLake } from '../../src/outputs/lake.js';
import { directoryTarget } from '../../src/outputs/target.js';
import { openReadOnly, openWarehouse, sqlString, type Warehouse } from '../../src/storage/duckdb.js';
import { changesWith } from '../../src/storage/tables.js';
import { icebergLiveFiles } from '../support/iceberg.js';
import { lakeComparedColumn, lakeDifferences, withTempDir } from '../support/helpers.js';

/** Line items in one month, a thirtieth of them each day. */
const ROWS = 120_000;
/**
 * DuckDB held below costsync's 64MB, so that a month of this size is several times its memory limit as
 * focus rows (63 columns): it is written only if every lake writer's memory is bounded, not the month's.
 */
const LIMIT = '48MB';
const TABLES = changesWith('line_items');

/** A warehouse with `ROWS` line items of June 2025 shaped like the API's, every date pending for the lake. */
async function monthOfLineItems(dir: string): Promise<{ db: string; wh: Warehouse }> {
  const db = join(dir, 'w.duckdb');
  const wh = await openWarehouse(db, { lake: 'parquet' });
  await wh.transaction(async () => {
    await wh.sql(`
      INSERT INTO line_items BY NAME
      SELECT 'li-' || strftime(DATE '2025-06-01' + (i % 30)::INTEGER, '%Y%m%d') || '-' || lpad(i::VARCHAR, 7, '0') AS id,
             DATE '2025-06-01' + (i % 30)::INTEGER AS usage_date,
             ['aws', 'gcp', 'azure', 'snowflake', 'datadog', 'openai', 'anthropic'][1 + i % 7] AS provider_type,
             ['Amazon EC2', 'Compute Engine', 'Virtual Machines', 'Snowflake Warehouse', 'Datadog Logs', 'GPT-4o', 'Claude'][1 + i % 7] AS provider_service,
             round((i % 10007) / 100.0, 2) AS net_amount_usd, 'USD' AS currency_original,
             'proj-' || (i % 500) AS project_id, 'user' || (i % 2000) || '@example.com' AS user_email,
             '{"charge_category":"Usage","region":"region-' || (i % 17) || '"}' AS extra, 'default' AS source
      FROM range(${ROWS}) t(i)`);
    await wh.changed(
      'line_items',
      'default',
      Array.from({ length: 30 }, (_, d) => `2025-06-${String(d + 1).padStart(2, '0')}`),
    );
  });
  await wh.sql(`SET memory_limit = '${LIMIT}'`);
  return { db, wh };
}

/** The rows of `table` in the warehouse against those in `files`, compared as text, column by column. */
async function fileDifferences(
  db: string,
  table: string,
  files: readonly string[],
): Promise<{ rows: number; missing: number; extra: number }> {
  const wh = await openReadOnly(db);
  try {
    const columns = (
      await wh.sql<{ c: string }>('SELECT column_name AS c FROM duckdb_columns() WHERE table_name = $1 ORDER BY column_index', [table])
    )
      .map((r) => lakeComparedColumn(table, r.c))
      .join(', ');
    const [row] = await wh.sql<{ rows: number; missing: number; extra: number }>(`
      WITH t AS (SELECT ${columns} FROM ${table}), p AS (SELECT ${columns} FROM read_parquet([${files.map(sqlString).join(', ')}]))
      SELECT (SELECT count(*) FROM t) AS rows,
             (SELECT count(*) FROM (SELECT * FROM t EXCEPT ALL SELECT * FROM p)) AS missing,
             (SELECT count(*) FROM (SELECT * FROM p EXCEPT ALL SELECT * FROM t)) AS extra`);
    return row!;
  } finally {
    wh.close();
  }
}

describe("a month several times DuckDB's memory limit", () => {
  it(`goes to the Parquet lake whole, every date exact, with DuckDB held to ${LIMIT}`, async () => {
    await withTempDir(async (dir) => {
      const { db, wh } = await monthOfLineItems(dir);
      const out = join(dir, 'lake');
      try {
        // 30 dates of each table.
        expect(await drainLake(wh, directoryTarget(out))).toBe(30 * TABLES.length);
      } finally {
        wh.close();
      }
      const diff = await lakeDifferences(db, out, undefined, TABLES);
      for (const table of TABLES) expect({ table, ...diff[table] }).toEqual({ table, rows: ROWS, missing: 0, extra: 0 });
    });
  });

  it(`goes to Iceberg tables as one file for the month, exact, with DuckDB held to ${LIMIT}`, async () => {
    await withTempDir(async (dir) => {
      const { db, wh } = await monthOfLineItems(dir);
      const out = join(dir, 'lake');
      try {
        const lake = icebergLake({
          runId: 'run-m',
          clock: { now: () => Date.now(), sleep: async () => undefined },
          sources: ['default'],
          retentionMs: 86_400_000,
        });
        expect(await lake.drain(wh, directoryTarget(out))).toBe(30 * TABLES.length);
      } finally {
        wh.close();
      }
      for (const table of TABLES) {
        const files = await icebergLiveFiles(out, table);
        expect(files.map((f) => f.records)).toEqual([ROWS]);
        expect({
          table,
          ...(await fileDifferences(
            db,
            table,
            files.map((f) => f.path),
          )),
        }).toEqual({ table, rows: ROWS, missing: 0, extra: 0 });
      }
    });
  });
});
