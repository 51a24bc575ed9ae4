import { statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { RUN_TABLES } from '../../src/storage/tables.js';
import { workingCopyPath } from '../../src/storage/working-copy.js';
import { icebergDifferences } from '../support/iceberg.js';
import { queryDb, run, SPAN, syncCommand, withEmulator, withTempDir } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const ENV = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' };

/** Every row of each run table in `db` (or, with `lake`, in the Parquet lake read through `db`), columns in the warehouse's order. */
async function runTables(db: string, lake?: string): Promise<Record<string, Record<string, unknown>[]>> {
  const rows: Record<string, Record<string, unknown>[]> = {};
  for (const table of RUN_TABLES) {
    const columns = (
      await queryDb<{ c: string }>(db, `SELECT column_name AS c FROM duckdb_columns() WHERE table_name = '${table}' ORDER BY column_index`)
    ).map((r) => `"${r.c}"::VARCHAR AS "${r.c}"`);
    const from = lake === undefined ? table : `read_parquet('${lake}/${table}/*/*.parquet', hive_partitioning = true)`;
    rows[table] = await queryDb(db, `SELECT ${columns.join(', ')} FROM ${from} ORDER BY ALL`);
  }
  return rows;
}

describe("a run's rows of the run tables once it has ended (issue 52 row 12)", () => {
  // The Parquet lake in `npm test`; the slow tier adds the Iceberg lake (its run tables also read back in iceberg.test.ts).
  const formats = process.env.COSTSYNC_SLOW_TIER === '1' ? (['parquet', 'iceberg'] as const) : (['parquet'] as const);
  for (const format of formats) {
    it(`are equal in the working copy, the published file and the ${format} lake; publish_bytes is the published file's size`, async () => {
      await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async (emulator) => {
        await withTempDir(async (dir) => {
          const db = join(dir, 'c.duckdb');
          const lake = join(dir, 'lake');
          const args = syncCommand(emulator.url, dir, [
            ...['--format', format, '--out', lake, '--start-date', SPAN.startDate, '--until', SPAN.endDate],
            ...['--rate-limit', '100000', '--quiet'],
          ]);
          // Two runs: the second's rows and the first's, as the second left them.
          for (let i = 0; i < 2; i++) {
            const r = await run(args, ENV);
            expect(r.stderr).toBe('');
            expect(r).toMatchObject({ code: 0 });
          }

          const published = await runTables(db);
          expect(published.sync_runs).toHaveLength(2);
          expect(await runTables(workingCopyPath(join(dir, 'state'), db))).toEqual(published);
          if (format === 'parquet') expect(await runTables(db, lake)).toEqual(published);
          else {
            const diff = await icebergDifferences(db, pathToFileURL(lake).href, { tables: RUN_TABLES });
            expect(diff).toEqual({
              sync_runs: { rows: 2, missing: 0, extra: 0 },
              sync_run_streams: { rows: published.sync_run_streams!.length, missing: 0, extra: 0 },
            });
          }
          // The last run's publish, recorded in the file it describes, with the file's own size.
          const [last] = await queryDb<{ publishes: number; bytes: number }>(
            db,
            'SELECT publishes, publish_bytes AS bytes FROM sync_runs ORDER BY started_at DESC LIMIT 1',
          );
          expect(Number(last!.publishes)).toBeGreaterThanOrEqual(1);
          expect(Number(last!.bytes)).toBe(statSync(db).size);
        });
      });
    });
  }
});
