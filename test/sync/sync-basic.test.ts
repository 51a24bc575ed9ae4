import { describe, expect, it } from 'vitest';
import { runSync } from '../../src/sync/runner.js';
import { withWarehouse } from '../../src/storage/duckdb.js';
import { FAST_CLIENT, memoryLogger, testSyncConfig, withEmulator, withTempDir, SPAN } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z'), sleep: async () => undefined };

describe('sync into DuckDB', () => {
  it('syncs line items, rollups and anomalies, and the totals agree', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 150, clock }, async ({ url, requestLog }) => {
      await withTempDir(async (dir) => {
        const config = testSyncConfig(url, dir);
        const summary = await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
        expect(summary.outcome).toBe('success');
        expect(summary.streams.line_items!.inserted).toBe(150 * 30);
        await withWarehouse(config.db, async (wh) => {
          const [li] = await wh.sql<{ n: number; ids: number; total: number }>(
            'SELECT count(*) n, count(DISTINCT id) ids, sum(net_amount_usd) total FROM line_items',
          );
          expect(li).toMatchObject({ n: 4500, ids: 4500 });
          for (const groupBy of ['provider', 'service', 'category']) {
            const [r] = await wh.sql<{ total: number }>('SELECT sum(cost_usd) total FROM rollups_daily WHERE group_by = $1', [groupBy]);
            expect(r!.total).toBeCloseTo(li!.total, 4);
          }
          const [an] = await wh.sql<{ n: number }>('SELECT count(*) n FROM anomalies');
          expect(an!.n).toBeGreaterThan(50);
          const [hist] = await wh.sql<{ n: number }>('SELECT count(*) n FROM anomaly_status_history');
          expect(hist!.n).toBe(an!.n);
          const runs = await wh.sql<{ outcome: string }>('SELECT outcome FROM sync_runs');
          expect(runs).toEqual([{ outcome: 'success' }]);
          const extra = await wh.sql<{ n: number }>("SELECT count(*) n FROM line_items WHERE extra->>'model' IS NOT NULL");
          expect(extra[0]!.n).toBeGreaterThan(0);
        });
        expect(requestLog.count({ route: 'line-items' })).toBeLessThanOrEqual(Math.ceil(4500 / 1000) + 5);
      });
    });
  });
});
