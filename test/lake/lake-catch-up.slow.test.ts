// Slow tier only (`.slow.test.ts`), kept out of `npm test` for its time; what checks this in `npm test`: A lake that missed runs: iceberg's "a warehouse pointed at a new --out", cli-commands' Parquet lake rewrites.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { gatherStatus } from '../../src/commands/status.js';
import { manifestKey } from '../../src/outputs/lake.js';
import { runSync } from '../../src/sync/runner.js';
import {
  FAST_CLIENT,
  lakeDifferences,
  memoryLogger,
  queryDb,
  SPAN,
  testSyncConfig,
  withEmulator,
  withTempDir,
} from '../support/helpers.js';
import { icebergDifferences } from '../support/iceberg.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z'), sleep: async () => undefined };
const RESTATE = { days: 5, changeRate: 0.5, deleteRate: 0.2 };

function expectSame(diff: Record<string, { rows: number; missing: number; extra: number }>) {
  for (const [table, d] of Object.entries(diff)) expect({ table, ...d }).toEqual({ table, rows: d.rows, missing: 0, extra: 0 });
  expect(diff.line_items!.rows).toBeGreaterThan(0);
}

describe('a lake that runs did not write catches up', () => {
  it('a new --format parquet --out on a warehouse that already holds months is filled from it, and its manifest counts what is there', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 5, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const config = testSyncConfig(url, dir, { windowDays: 30 });
        expect((await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT })).outcome).toBe('success');
        const lake = join(dir, 'lake');
        const withLake = { ...config, format: 'parquet' as const, out: lake };
        for (let i = 0; i < 2; i++) {
          expect((await runSync({ config: withLake, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT })).outcome).toBe('success');
          expectSame(await lakeDifferences(config.db, lake));
          const manifest = JSON.parse(readFileSync(join(lake, manifestKey('default')), 'utf8')) as {
            tables: Record<string, { rows: number; first_date: string }>;
          };
          expect(manifest.tables.line_items).toMatchObject({ rows: 30 * 5, first_date: SPAN.startDate });
        }
      });
    });
  });

  it('two Parquet lakes and a run with neither: each lake catches up on what it missed (a restatement synced elsewhere), and status says which lake is behind', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 5, clock, restatement: RESTATE }, async (emulator) => {
      await withTempDir(async (dir) => {
        const config = testSyncConfig(emulator.url, dir, { windowDays: 30 });
        const p1 = { ...config, format: 'parquet' as const, out: join(dir, 'p1') };
        const p2 = { ...config, format: 'parquet' as const, out: join(dir, 'p2') };
        const sync = async (c: typeof config) =>
          expect((await runSync({ config: c, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT })).outcome).toBe('success');
        // What status says of each lake: the partitions the warehouse wrote since it last caught up.
        const behind = async () =>
          Object.fromEntries((await gatherStatus(config.db, config.stateDir)).lakes.map((l) => [l.lake, l.partitions_to_write]));
        await sync(p1);
        expect(await behind()).toEqual({ [p1.out]: 0 });
        await sync(p2);
        // The run into p2 stored the anomalies again (their last_seen_at moves), which p1 does not hold.
        const afterP2 = await behind();
        expect(afterP2[p2.out]).toBe(0);
        expect(afterP2[p1.out]).toBeGreaterThan(0);
        emulator.restate();
        await sync(config);
        const afterNeither = await behind();
        expect(afterNeither[p1.out]).toBeGreaterThan(afterP2[p1.out]!);
        expect(afterNeither[p2.out]).toBeGreaterThan(0);
        // `--format json` carries the lines under the Lakes table too: each names its lake and the sync that catches it up.
        expect([...(await gatherStatus(config.db, config.stateDir)).lakeNotes].sort()).toEqual(
          [p1.out, p2.out].map((out) => expect.stringContaining(`the next sync with --format parquet --out ${out} writes what it lacks`)),
        );
        emulator.restate();
        await sync(p2);
        expect((await behind())[p2.out]).toBe(0);
        expect((await behind())[p1.out]).toBeGreaterThanOrEqual(afterNeither[p1.out]!);
        // Lookback 0: this run fetches nothing restated; the lake catches up from the warehouse alone.
        await sync({ ...p1, lookbackDays: 0 });
        expectSame(await lakeDifferences(config.db, p1.out));
        expect((await behind())[p1.out]).toBe(0);
        await sync({ ...p2, lookbackDays: 0 });
        expectSame(await lakeDifferences(config.db, p2.out));
        expect((await behind())[p2.out]).toBe(0);
        // p2's run stored the anomalies again: p1 alone is named.
        expect((await gatherStatus(config.db, config.stateDir)).lakeNotes).toEqual([expect.stringContaining(`--out ${p1.out} writes`)]);
      });
    });
  });

  it('a lake run stopped late leaves its next run what the stop left, not what its drains wrote: status counts no more, and the next run makes the lake whole', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 5, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const lake = join(dir, 'lake');
        const config = testSyncConfig(url, dir, { windowDays: 1, format: 'parquet', out: lake });
        // Stopped once 20 line-item windows are stored and in the lake (each window's drain comes before its progress line).
        const stop = new AbortController();
        let stored = 0;
        const summary = await runSync({
          config,
          logger: memoryLogger(),
          clock: { ...clock, sleep: async () => undefined },
          clientOptions: FAST_CLIENT,
          signal: stop.signal,
          progress: {
            windowDone: (stream) => {
              if (stream === 'line_items' && ++stored === 20) stop.abort('test stop');
            },
          },
        });
        expect(summary.outcome).toBe('stopped');
        const [{ changed }] = (await queryDb<{ changed: number }>(
          config.db,
          'SELECT count(*)::INTEGER AS changed FROM _costsync_partition_changes',
        )) as [{ changed: number }];
        const [said] = (await gatherStatus(config.db, config.stateDir)).lakes;
        expect(said).toMatchObject({ lake, source: 'default' });
        expect(changed).toBeGreaterThan(0);
        expect(said!.partitions_to_write).toBeLessThan(changed);
        expect((await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT })).outcome).toBe('success');
        expectSame(await lakeDifferences(config.db, lake));
        expect((await gatherStatus(config.db, config.stateDir)).lakes).toMatchObject([{ lake, partitions_to_write: 0 }]);
      });
    });
  });

  it('an Iceberg lake catches up on a restatement synced without it', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 5, clock, restatement: RESTATE }, async (emulator) => {
      await withTempDir(async (dir) => {
        const config = testSyncConfig(emulator.url, dir, { windowDays: 30 });
        const ice = { ...config, format: 'iceberg' as const, out: join(dir, 'ice') };
        const sync = async (c: typeof config) =>
          expect((await runSync({ config: c, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT })).outcome).toBe('success');
        await sync(ice);
        emulator.restate();
        await sync(config);
        // Only anomalies: this run stores no line item, so the month of the restated days is not rewritten for its own sake.
        await sync({ ...ice, streams: ['anomalies'] });
        expectSame(await icebergDifferences(config.db, pathToFileURL(ice.out).href));
        // The lake's mark now names the warehouse's last change of the source.
        const [mark] = await queryDb<{ ok: boolean }>(
          config.db,
          `SELECT (SELECT max(seq) FROM _costsync_lake_marks WHERE lake LIKE 'iceberg:%') = (SELECT max(seq) FROM _costsync_partition_changes) AS ok`,
        );
        expect(mark!.ok).toBe(true);
      });
    });
  });
});
