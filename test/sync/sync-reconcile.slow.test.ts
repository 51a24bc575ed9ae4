// Slow tier only (`.slow.test.ts`), kept out of `npm test` for its time; what checks this in `npm test`: Restatements between pages and the rollups check: unit/reconcile, check-totals, sync-incremental.
import { describe, expect, it } from 'vitest';
import type { CostsyncError } from '../../src/errors.js';
import { exitCodeOf } from '../../src/commands/sync.js';
import type { Emulator, EmulatorInput } from '../../src/emulator/server.js';
import { runSync } from '../../src/sync/runner.js';
import type { SyncConfig } from '../../src/config.js';
import { openReadOnly } from '../../src/storage/duckdb.js';
import { MAX_FETCH_ATTEMPTS } from '../../src/sync/reconcile.js';
import { storedAgainstApi } from '../support/api-truth.js';
import { FAST_CLIENT, memoryLogger, tableDigest, testSyncConfig, withEmulator, withTempDir, FAST_SEND } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z'), sleep: async () => undefined };
/** Ten days that restatement may touch, 500 line items a day: one window of five 1000-row pages. */
const source: EmulatorInput = {
  startDate: '2025-06-01',
  endDate: '2025-06-30',
  rowsPerDay: 500,
  clock,
  anomaliesPerDay: 0,
  restatement: { days: 10, changeRate: 0.1, deleteRate: 0.1, addRate: 0.02 },
};
const window = { startDate: '2025-06-21', until: '2025-06-30', windowDays: 10, concurrency: 1 } as const;

/** The window's stored rows against the API's own records now: their differences, or none. */
async function againstApi(db: string, emulator: Emulator, tables: readonly ('line_items' | 'rollups_daily')[]) {
  return storedAgainstApi(db, emulator.dataset, { from: window.startDate, to: window.until, nowMs: clock.now(), tables });
}

async function sync(url: string, dir: string, over: Partial<SyncConfig> = {}) {
  const config = testSyncConfig(url, dir, { streams: ['line_items'], ...window, ...over });
  const summary = await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT, sendOptions: FAST_SEND });
  return { config, summary, digest: await tableDigest(config.db) };
}

describe('a sync that checks itself against the rollups', () => {
  it('offset cursors with a restatement between two pages (rows deleted before the offset, changed, added): the window is fetched again and the tables equal the source', async () => {
    const offset: EmulatorInput = { ...source, cursorMode: 'offset', restateAtPage: 2 };
    // Without the check, the shifted offsets skip live rows and keep deleted ones.
    await withEmulator(offset, async (emulator) => {
      await withTempDir(async (dir) => {
        const unchecked = await sync(emulator.url, dir, { reconcile: 'off' });
        expect(unchecked.summary.outcome).toBe('success');
        expect(await againstApi(unchecked.config.db, emulator, ['line_items'])).not.toEqual([]);
      });
    });
    await withEmulator(offset, async (emulator) => {
      await withTempDir(async (dir) => {
        const checked = await sync(emulator.url, dir);
        expect(checked.summary.outcome).toBe('success');
        expect(checked.summary.streams.line_items!.refetches).toBe(1);
        expect(checked.summary.warnings).toEqual([]);
        expect(await againstApi(checked.config.db, emulator, ['line_items'])).toEqual([]);
        expect(checked.digest.duplicate_line_item_ids!.rows).toBe(0);
      });
    });
  });

  it('a source that keeps changing: bounded fetches, then the last fetch stored with a warning naming dates, providers and amounts; --reconcile strict fails', async () => {
    let lineItemRequests = 0;
    const started: { emulator?: Emulator } = {};
    await withEmulator(
      {
        ...source,
        cursorMode: 'offset',
        beforeReply: ({ route }) => {
          if (route === 'line-items' && ++lineItemRequests % 2 === 0) started.emulator!.restate();
        },
      },
      async (em) => {
        started.emulator = em;
        await withTempDir(async (dir) => {
          em.requestLog.reset();
          const on = await sync(em.url, dir);
          expect(on.summary.outcome).toBe('success');
          expect(on.summary.streams.line_items!.refetches).toBe(MAX_FETCH_ATTEMPTS - 1);
          expect(em.requestLog.count({ route: 'rollups' })).toBe(MAX_FETCH_ATTEMPTS);
          expect(on.summary.warnings).toHaveLength(1);
          expect(on.summary.warnings[0]).toMatch(
            /line_items 2025-06-21\.\.2025-06-30: the line items and the provider rollup still disagree after 3 fetches .*the last fetch was stored: 2025-06-2\d \w+: line items \$\d+\.\d\d, provider rollup \$\d+\.\d\d/,
          );
          const wh = await openReadOnly(on.config.db);
          try {
            const [run] = await wh.sql<{ warnings: string; refetches: number }>(
              "SELECT r.warnings::VARCHAR AS warnings, s.refetches FROM sync_runs r JOIN sync_run_streams s USING (run_id) WHERE s.stream = 'line_items'",
            );
            expect(run!.warnings).toMatch(/still disagree after 3 fetches/);
            expect(run!.refetches).toBe(2);
          } finally {
            wh.close();
          }
        });
        await withTempDir(async (dir) => {
          // The disagreement is also a notification event, recorded with the window's commit.
          const notified = await sync(em.url, dir, { notify: ['http://127.0.0.1:9/hook'] });
          expect(notified.summary.outcome).toBe('success');
          const wh = await openReadOnly(notified.config.db);
          try {
            const events = await wh.sql<{ kind: string; event: string }>(
              "SELECT kind, event::VARCHAR AS event FROM _costsync_notifications WHERE kind = 'reconcile'",
            );
            expect(events).toHaveLength(1);
            expect(JSON.parse(events[0]!.event)).toMatchObject({
              kind: 'reconcile',
              source: 'default',
              stream: 'line_items',
              window: '2025-06-21..2025-06-30',
            });
          } finally {
            wh.close();
          }
        });
        await withTempDir(async (dir) => {
          const strict = await sync(em.url, dir, { reconcile: 'strict' });
          expect(strict.summary.outcome).toBe('failed');
          expect((strict.summary.error as CostsyncError).code).toBe('CS_ERR_RECONCILE');
          expect(exitCodeOf(strict.summary)).toBe(1);
          // The last fetch is stored all the same.
          expect(strict.digest.line_items!.rows).toBeGreaterThan(0);
        });
      },
    );
  });

  it('clean data costs no extra request when rollups are synced, and one a window with line items alone', async () => {
    await withEmulator({ ...source, rowsPerDay: 300 }, async (em) => {
      const requests = async (over: Partial<SyncConfig>) =>
        withTempDir(async (dir) => {
          em.requestLog.reset();
          const r = await sync(em.url, dir, { windowDays: 5, concurrency: 4, ...over });
          expect(r.summary.outcome).toBe('success');
          expect(r.summary.warnings).toEqual([]);
          return {
            lineItems: em.requestLog.count({ route: 'line-items' }),
            rollups: em.requestLog.count({ route: 'rollups' }),
            total: r.summary.requests,
          };
        });
      const both = { streams: ['line_items', 'rollups'] as SyncConfig['streams'] };
      const checked = await requests(both);
      expect(checked).toEqual(await requests({ ...both, reconcile: 'off' }));
      // Two windows: three rollup views each, the provider view shared with the check.
      expect(checked.rollups).toBe(2 * 3);
      const alone = await requests({});
      expect(alone.rollups).toBe(2);
      expect(alone.total).toBe(alone.lineItems + 2);
      expect(alone.lineItems).toBe((await requests({ reconcile: 'off' })).lineItems);
    });
  });

  it('rollup views that disagree (a restatement between two group_by requests) are fetched again', async () => {
    let rollupRequests = 0;
    const started: { emulator?: Emulator } = {};
    await withEmulator(
      {
        ...source,
        beforeReply: ({ route }) => {
          if (route === 'rollups' && ++rollupRequests === 2) started.emulator!.restate();
        },
      },
      async (em) => {
        started.emulator = em;
        await withTempDir(async (dir) => {
          const r = await sync(em.url, dir, { streams: ['line_items', 'rollups'] });
          expect(r.summary.outcome).toBe('success');
          expect(r.summary.streams.rollups!.refetches).toBe(1);
          expect(r.summary.warnings).toEqual([]);
          expect(await againstApi(r.config.db, em, ['rollups_daily'])).toEqual([]);
        });
      },
    );
  });
});
