// Slow tier only (`.slow.test.ts`), kept out of `npm test` for its time; what checks this in `npm test`: Lake outboxes an older version wrote: upgrade (its warehouse, state file and spool picked up as they are).
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { icebergLake } from '../../src/outputs/iceberg.js';
import { drainLake, finishLake, manifestKey } from '../../src/outputs/lake.js';
import { directoryTarget } from '../../src/outputs/target.js';
import { openWorkingCopy, workingCopyPath } from '../../src/storage/working-copy.js';
import { icebergDifferences } from '../support/iceberg.js';
import { lakeDifferences, run, syncCommand, withEmulator, withTempDir } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-06-11T06:00:00Z') };
const ENV = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' };
const SOURCE = { startDate: '2025-05-20', endDate: '2025-06-10', rowsPerDay: 20, clock };

function syncArgs(url: string, dir: string, format: 'parquet' | 'iceberg'): string[] {
  const span = ['--start-date', SOURCE.startDate, '--until', SOURCE.endDate];
  return syncCommand(url, dir, [
    '--format',
    format,
    '--out',
    join(dir, 'lake'),
    '--streams',
    'line_items',
    ...span,
    '--rate-limit',
    '100000',
    '--quiet',
  ]);
}

/**
 * A warehouse whose outbox holds rows an earlier version wrote: a restatement of 2025-06-05 the lake
 * does not have, known to the outbox only by those rows (changed behind `Warehouse.changed`'s back, so
 * no catch-up finds it). The lake matches the warehouse again only if the rows are read and acted on.
 */
async function restateWithOldRows(dir: string, rows: [string, string][]): Promise<void> {
  const wh = await openWorkingCopy(join(dir, 'c.duckdb'), join(dir, 'state'), { lake: 'parquet' });
  try {
    expect(await wh.sql("SELECT kind, key FROM _costsync_outbox WHERE kind <> 'publish'")).toEqual([]);
    await wh.sql("UPDATE line_items SET net_amount_usd = net_amount_usd + 1 WHERE usage_date = DATE '2025-06-05'");
    for (const [kind, key] of rows) await wh.sql('INSERT INTO _costsync_outbox VALUES ($1, $2, now())', [kind, key]);
  } finally {
    wh.close();
  }
}

describe("an earlier version's outbox rows are read and acted on", () => {
  it("Parquet lake: a partition recorded before sources (<table>/<date>, the 'default' source's) is rewritten; the whole-lake manifest ('') is written per source", async () => {
    await withEmulator(SOURCE, async ({ url }) => {
      await withTempDir(async (dir) => {
        expect(await run(syncArgs(url, dir, 'parquet'), ENV)).toMatchObject({ code: 0 });
        const lake = join(dir, 'lake');
        rmSync(join(lake, manifestKey('default')));
        await restateWithOldRows(dir, [
          ['parquet', 'line_items/2025-06-05'],
          ['manifest', ''],
        ]);
        const db = workingCopyPath(join(dir, 'state'), join(dir, 'c.duckdb'));
        expect((await lakeDifferences(db, lake, undefined, ['line_items'])).line_items!.missing).toBe(20);

        const wh = await openWorkingCopy(join(dir, 'c.duckdb'), join(dir, 'state'), { lake: 'parquet' });
        const target = directoryTarget(lake);
        try {
          expect(await drainLake(wh, target)).toBe(1);
          await finishLake(wh, target, { runId: 'run-new', now: () => Date.now(), sources: ['default'] });
          expect(await wh.sql("SELECT kind, key FROM _costsync_outbox WHERE kind <> 'publish'")).toEqual([]);
        } finally {
          wh.close();
        }
        // Those versions had no focus table: the row names line_items alone.
        expect(await lakeDifferences(db, lake, undefined, ['line_items'])).toEqual({ line_items: { rows: 22 * 20, missing: 0, extra: 0 } });
        expect(JSON.parse(readFileSync(join(lake, manifestKey('default')), 'utf8'))).toMatchObject({
          source: 'default',
          run_id: 'run-new',
        });
      });
    });
  });

  it("Iceberg lake: its pending dates, stored under kind 'parquet', are committed (in either form); the manifests are cleared", async () => {
    await withEmulator(SOURCE, async ({ url }) => {
      await withTempDir(async (dir) => {
        expect(await run(syncArgs(url, dir, 'iceberg'), ENV)).toMatchObject({ code: 0 });
        await restateWithOldRows(dir, [
          ['parquet', 'line_items/2025-06-05'],
          ['parquet', 'focus/default/2025-06-05'],
          ['manifest', ''],
        ]);
        const db = workingCopyPath(join(dir, 'state'), join(dir, 'c.duckdb'));
        const lakeUrl = pathToFileURL(join(dir, 'lake')).href;
        expect((await icebergDifferences(db, lakeUrl, { tables: ['line_items'] })).line_items!.missing).toBe(20);

        const wh = await openWorkingCopy(join(dir, 'c.duckdb'), join(dir, 'state'), { lake: 'parquet' });
        try {
          const lake = icebergLake({
            runId: 'run-new',
            clock: { now: () => Date.now(), sleep: async () => undefined },
            sources: ['default'],
            retentionMs: 86_400_000,
          });
          expect(await lake.drain(wh, directoryTarget(join(dir, 'lake')))).toBe(2);
          await lake.finish(wh, directoryTarget(join(dir, 'lake')));
          expect(await wh.sql("SELECT kind, key FROM _costsync_outbox WHERE kind <> 'publish'")).toEqual([]);
        } finally {
          wh.close();
        }
        expect(await icebergDifferences(db, lakeUrl, { tables: ['line_items', 'focus'] })).toEqual({
          line_items: { rows: 22 * 20, missing: 0, extra: 0 },
          focus: { rows: 22 * 20, missing: 0, extra: 0 },
        });
        expect(existsSync(join(dir, 'lake', manifestKey('default')))).toBe(false);
      });
    });
  });
});
