import { describe, expect, it } from 'vitest';
import { runSync } from '../../src/sync/runner.js';
import { withWarehouse } from '../../src/storage/duckdb.js';
import { FAST_CLIENT, memoryLogger, testSyncConfig, withEmulator, withTempDir } from '../support/helpers.js';

const span = { startDate: '2025-03-01', endDate: '2025-06-30', anomaliesPerDay: 6, rowsPerDay: 5 };

describe('anomaly sync', () => {
  for (const order of ['asc', 'desc', 'unordered'] as const) {
    it(`gets every anomaly when the server answers ${order}`, async () => {
      const now = Date.parse('2025-07-01T06:00:00Z');
      const clock = { now: () => now, sleep: async () => undefined };
      await withEmulator({ ...span, clock, anomalyOrder: order }, async (emulator) => {
        await withTempDir(async (dir) => {
          const config = testSyncConfig(emulator.url, dir, { streams: ['anomalies'], startDate: span.startDate, until: span.endDate });
          const summary = await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
          expect(summary.warnings).toEqual([]);
          const expected = emulator.dataset.anomaliesAt(now).map((x) => x.anomaly);
          expect(expected.length).toBeGreaterThan(500);
          await withWarehouse(config.db, async (wh) => {
            const rows = await wh.sql<{ id: string; status: string }>('SELECT id, status FROM anomalies ORDER BY id');
            expect(rows).toEqual(expected.map((a) => ({ id: a.id, status: a.status })).sort((a, b) => (a.id < b.id ? -1 : 1)));
          });
        });
      });
    });
  }

  it('keeps each status change in anomaly_status_history as statuses move on', async () => {
    let now = Date.parse('2025-06-20T00:00:00Z');
    const clock = { now: () => now, sleep: async () => undefined };
    await withEmulator({ ...span, clock }, async (emulator) => {
      await withTempDir(async (dir) => {
        const config = testSyncConfig(emulator.url, dir, { streams: ['anomalies'], startDate: '2025-06-01', until: '2025-06-30' });
        await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
        now = Date.parse('2025-07-01T00:00:00Z');
        const second = await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
        expect(second.streams.anomalies!.updated).toBeGreaterThan(0);
        await withWarehouse(config.db, async (wh) => {
          const changes = await wh.sql<{ previous_status: string | null; status: string }>(
            'SELECT previous_status, status FROM anomaly_status_history WHERE previous_status IS NOT NULL',
          );
          expect(changes.length).toBe(second.streams.anomalies!.updated);
          for (const c of changes) expect(c.previous_status === 'new' || c.previous_status === 'acknowledged').toBe(true);
          const [latest] = await wh.sql<{ n: number }>(`
            SELECT count(*) n FROM anomalies a
            JOIN (SELECT anomaly_id, arg_max(status, observed_at) s FROM anomaly_status_history GROUP BY 1) h ON h.anomaly_id = a.id
            WHERE h.s <> a.status`);
          expect(latest!.n).toBe(0);
          const [first] = await wh.sql<{ a: string; b: string }>(
            'SELECT min(first_seen_at)::VARCHAR a, max(last_seen_at)::VARCHAR b FROM anomalies',
          );
          expect(first!.a < first!.b).toBe(true);
        });
      });
    });
  });

  it('warns, and records in the run summary, when alerts cannot all be reached', async () => {
    const clock = { now: () => Date.parse('2025-07-01T06:00:00Z'), sleep: async () => undefined };
    const bursts = [{ at: '2025-06-10T08:00:00Z', count: 130, severity: 'high', status: 'new', provider_type: 'aws' }];
    await withEmulator({ ...span, clock, anomalyBursts: bursts, anomalyOrder: 'asc' }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const config = testSyncConfig(url, dir, { streams: ['anomalies'], startDate: '2025-06-01', until: '2025-06-30' });
        const summary = await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
        expect(summary.outcome).toBe('success');
        expect(summary.warnings.some((w) => /some alerts may be missing: more than 100 alerts share one timestamp/.test(w))).toBe(true);
        await withWarehouse(config.db, async (wh) => {
          const [run] = await wh.sql<{ w: string }>('SELECT warnings::VARCHAR w FROM sync_runs');
          expect(run!.w).toMatch(/some alerts may be missing/);
          const [stream] = await wh.sql<{ n: number }>(
            "SELECT json_array_length(warnings) n FROM sync_run_streams WHERE stream = 'anomalies'",
          );
          expect(stream!.n).toBe(1);
        });
      });
    });
  });

  it('records as pages the responses received when a stop cuts the third request', async () => {
    const clock = { now: () => Date.parse('2025-07-01T06:00:00Z'), sleep: async () => undefined };
    const stop = new AbortController();
    let anomalyRequests = 0;
    const held: (() => void)[] = [];
    await withEmulator(
      {
        ...span,
        clock,
        // The third anomalies request reaches the API, the run stops, and its answer never comes.
        beforeReply: async ({ route }) => {
          if (route !== 'anomalies' || ++anomalyRequests !== 3) return;
          stop.abort('SIGTERM');
          await new Promise<void>((resolve) => held.push(resolve));
        },
      },
      async ({ url }) => {
        await withTempDir(async (dir) => {
          const config = testSyncConfig(url, dir, { streams: ['anomalies'], startDate: span.startDate, until: span.endDate });
          const logger = memoryLogger();
          const summary = await runSync({ config, logger, clock, clientOptions: FAST_CLIENT, signal: stop.signal });
          for (const release of held) release();
          expect(summary.outcome).toBe('stopped');
          expect(summary.streams.anomalies).toMatchObject({ requests: 3, pages: 2 });
          // The log says the collection was cut, not that it finished ("+N ~N -N" is a window done).
          const messages = logger.lines.map((l) => (JSON.parse(l) as { msg: string }).msg);
          expect(messages.filter((m) => /^anomalies \S+: \+\d+ ~\d+ -\d+$/.test(m))).toEqual([]);
          expect(messages).toContainEqual(
            expect.stringMatching(
              /^anomalies \S+: stopped after 2 page\(s\); stored what arrived \(\+\d+ ~0\), and the next run collects from the same point$/,
            ),
          );
          await withWarehouse(config.db, async (wh) => {
            const [stream] = await wh.sql<{ pages: number; requests: number }>(
              "SELECT pages::INT pages, requests::INT requests FROM sync_run_streams WHERE stream = 'anomalies'",
            );
            expect(stream).toEqual({ pages: 2, requests: 3 });
          });
        });
      },
    );
  });
});
