import { describe, expect, it } from 'vitest';
import { runSync } from '../../src/sync/runner.js';
import { withWarehouse } from '../../src/storage/duckdb.js';
import {
  run,
  emulatorLineItemIds,
  FAST_CLIENT,
  memoryLogger,
  queryDb,
  tableDigest,
  testSyncConfig,
  withEmulator,
  withTempDir,
  SPAN,
} from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z'), sleep: async () => undefined };

describe('incremental sync', () => {
  it('keeps requests near the minimum: at most ceil(rows / 1000) + windows', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 700, clock }, async ({ url, requestLog }) => {
      await withTempDir(async (dir) => {
        const config = testSyncConfig(url, dir, { streams: ['line_items'], windowDays: 10 });
        await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
        expect(requestLog.count({ route: 'line-items' })).toBeLessThanOrEqual(Math.ceil((700 * 30) / 1000) + 3);
        expect(requestLog.count({ route: 'line-items' })).toBeGreaterThanOrEqual(Math.ceil((700 * 30) / 1000));
      });
    });
  });

  it('re-syncs the lookback days, so restated rows change and deleted rows go, as a fresh sync would have them', async () => {
    await withEmulator(
      { ...SPAN, rowsPerDay: 120, clock, restatement: { days: 3, changeRate: 0.3, deleteRate: 0.2 } },
      async (emulator) => {
        await withTempDir(async (dir) => {
          const config = testSyncConfig(emulator.url, dir);
          await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
          emulator.restate();
          emulator.requestLog.reset();
          const second = await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
          expect(second.outcome).toBe('success');
          expect(second.streams.line_items!.deleted).toBeGreaterThan(0);
          expect(second.streams.line_items!.updated).toBeGreaterThan(0);
          expect(second.streams.line_items!.inserted).toBe(0);
          // Only the lookback days were asked for.
          expect(emulator.requestLog.count({ route: 'line-items' })).toBe(1);

          await withWarehouse(config.db, async (wh) => {
            const ids = (await wh.sql<{ id: string }>('SELECT id FROM line_items ORDER BY id')).map((r) => r.id);
            expect(ids).toEqual(emulatorLineItemIds(emulator, SPAN.startDate, SPAN.endDate));
          });
          await withTempDir(async (fresh) => {
            const freshConfig = testSyncConfig(emulator.url, fresh);
            await runSync({ config: freshConfig, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
            const [a, b] = [await tableDigest(config.db), await tableDigest(freshConfig.db)];
            expect(a.line_items).toEqual(b.line_items);
            expect(a.rollups_daily).toEqual(b.rollups_daily);
          });

          // Nothing restated since: the lookback's windows are left as stored, and no date of theirs is marked
          // changed for a lake (one that catches up later would rewrite it for nothing).
          const lastChange = async () =>
            (
              await queryDb<{ seq: number }>(
                config.db,
                "SELECT max(seq)::INT AS seq FROM _costsync_partition_changes WHERE tbl <> 'anomalies'",
              )
            )[0]!.seq;
          const before = await lastChange();
          const stored = await tableDigest(config.db);
          const third = await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
          expect(third.outcome).toBe('success');
          expect(third.streams.line_items).toMatchObject({ inserted: 0, updated: 0, deleted: 0 });
          expect(await lastChange()).toBe(before);
          expect((await tableDigest(config.db)).line_items).toEqual(stored.line_items);
        });
      },
    );
  });

  it('backfills from --since, and never stores records outside the requested dates', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 50, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const config = testSyncConfig(url, dir, { startDate: '2025-06-20', until: '2025-06-25' });
        await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
        await runSync({ config: { ...config, since: '2025-06-10' }, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
        await withWarehouse(config.db, async (wh) => {
          const [r] = await wh.sql<{ lo: string; hi: string; n: number }>(
            'SELECT min(usage_date)::VARCHAR lo, max(usage_date)::VARCHAR hi, count(*) n FROM line_items',
          );
          expect(r).toEqual({ lo: '2025-06-10', hi: '2025-06-25', n: 16 * 50 });
          const [ro] = await wh.sql<{ lo: string; hi: string }>('SELECT min(date)::VARCHAR lo, max(date)::VARCHAR hi FROM rollups_daily');
          expect(ro).toEqual({ lo: '2025-06-10', hi: '2025-06-25' });
          const [an] = await wh.sql<{ hi: string }>('SELECT max(detected_date)::VARCHAR hi FROM anomalies');
          expect(an!.hi < '2025-06-26').toBe(true);
        });
      });
    });
  });

  it('stores duplicated records across pages once, and keeps rollup fields the server filled', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 900, clock, pageOverlapRate: 1, serviceRollupFillsProvider: true }, async (emulator) => {
      await withTempDir(async (dir) => {
        const config = testSyncConfig(emulator.url, dir, { startDate: '2025-06-01', until: '2025-06-05' });
        await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
        const digest = await tableDigest(config.db);
        expect(digest.line_items!.rows).toBe(900 * 5);
        expect(digest.duplicate_line_item_ids!.rows).toBe(0);
        await withWarehouse(config.db, async (wh) => {
          const [r] = await wh.sql<{ n: number }>(
            "SELECT count(*) n FROM rollups_daily WHERE group_by = 'service' AND provider_type IS NULL",
          );
          expect(r!.n).toBe(0);
        });
      });
    });
  });

  it('a full refresh of anomalies starts at the first alert stored, before the start date (and the dry run says so)', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 5, anomaliesPerDay: 2, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const config = testSyncConfig(url, dir, { streams: ['anomalies'], startDate: '2025-06-20' });
        const planned: string[] = [];
        const progress = {
          planned: (stream: string, info: { from: string; to: string }) => void planned.push(`${stream} ${info.from}..${info.to}`),
        };
        await runSync({ config: { ...config, since: '2025-06-01' }, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT, progress });
        const [first] = await withWarehouse(config.db, (wh) =>
          wh.sql<{ d: string }>("SELECT min(CAST(timezone('UTC', detected_date) AS DATE))::VARCHAR AS d FROM anomalies"),
        );
        expect(first!.d < '2025-06-20').toBe(true);
        planned.length = 0;
        await runSync({ config: { ...config, fullRefresh: true }, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT, progress });
        expect(planned).toEqual([`anomalies ${first!.d}..${SPAN.endDate}`]);
        const dry = await run(
          [
            'sync',
            '--base-url',
            url,
            '--db',
            config.db,
            '--state-dir',
            config.stateDir,
            '--streams',
            'anomalies',
            '--start-date',
            '2025-06-20',
            '--until',
            SPAN.endDate,
            '--full-refresh',
            '--dry-run',
          ],
          { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' },
        );
        expect(dry.stdout + dry.stderr).toContain(`anomalies: ${first!.d}..`);
      });
    });
  });

  it('a full refresh re-syncs from the earliest stored date (or --since) and deletes nothing; --drop-before prunes', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 40, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const config = testSyncConfig(url, dir, { streams: ['line_items', 'rollups'], startDate: '2025-06-15' });
        const bounds = async () =>
          withWarehouse(
            config.db,
            async (wh) =>
              (
                await wh.sql<{ lo: string; n: number; r: string }>(
                  'SELECT min(usage_date)::VARCHAR lo, count(*)::INT n, (SELECT min(date)::VARCHAR FROM rollups_daily) r FROM line_items',
                )
              )[0],
          );
        await runSync({ config: { ...config, since: '2025-06-01' }, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
        expect(await bounds()).toEqual({ lo: '2025-06-01', n: 30 * 40, r: '2025-06-01' });
        // --start-date is 06-15, the warehouse holds 06-01 on: the refresh re-syncs all of it and drops nothing.
        const full = await runSync({ config: { ...config, fullRefresh: true }, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
        expect(full.streams.line_items).toMatchObject({ deleted: 0, pages: expect.any(Number) as number });
        expect(full.streams.line_items!.requests).toBeGreaterThanOrEqual(5);
        expect(await bounds()).toEqual({ lo: '2025-06-01', n: 30 * 40, r: '2025-06-01' });
        const later = await runSync({
          config: { ...config, fullRefresh: true, since: '2025-06-10' },
          logger: memoryLogger(),
          clock,
          clientOptions: FAST_CLIENT,
        });
        expect(later.streams.line_items!.deleted).toBe(0);
        expect(await bounds()).toEqual({ lo: '2025-06-01', n: 30 * 40, r: '2025-06-01' });
        const pruned = await runSync({
          config: { ...config, dropBefore: '2025-06-10' },
          logger: memoryLogger(),
          clock,
          clientOptions: FAST_CLIENT,
        });
        expect(pruned.streams.line_items!.deleted).toBe(9 * 40);
        expect(await bounds()).toEqual({ lo: '2025-06-10', n: 21 * 40, r: '2025-06-10' });
        // Pruned history stays pruned: a full refresh starts at the earliest date left.
        await runSync({ config: { ...config, fullRefresh: true }, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
        expect(await bounds()).toEqual({ lo: '2025-06-10', n: 21 * 40, r: '2025-06-10' });
      });
    });
  });
});
